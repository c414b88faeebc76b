package e2e

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// TestApplyArgoCDPlugin is the Argo CD Config Management Plugin's journey
// against a real API server: examples/gitops-argo/plugin.yaml's generate
// runs as argocd-cmp-server runs it (a fresh copy of the Application's
// directory, the repo server's ARGOCD_APP_* variables, PATH holding only
// the stowage binary, as in the stowage image), every document of its
// stdout is an object, and the objects apply with server-side apply, as
// Argo CD's ServerSideApply=true sync does, and read back with every field
// it printed. Applying them again changes nothing.
func TestApplyArgoCDPlugin(t *testing.T) {
	c := startAPIServer(t)
	bin := buildStowage(t)
	example := filepath.Join(repoRoot, "examples", "gitops-argo")
	p := testbin.ReadCMP(t, filepath.Join(example, "plugin.yaml"))
	app := testbin.CopyApp(t, filepath.Join(example, "prepull"))
	env := append([]string{"PATH=" + filepath.Dir(bin), "HOME=" + t.TempDir()},
		testbin.AppEnv("notebook-prepull", "argocd", nil)...)

	out, stderr, code := testbin.RunCMP(t, p.Spec.Generate, app, env)
	if code != 0 || len(stderr) != 0 {
		t.Fatalf("generate: exit %d, stderr:\n%s", code, stderr)
	}
	var objs []*unstructured.Unstructured
	for _, j := range testbin.Manifests(t, out) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	if len(objs) < 3 {
		t.Fatalf("generate gave %d objects, want the records ConfigMap, the Deployment and the DaemonSets", len(objs))
	}
	c.createNamespaces(t, objs)
	c.apply(t, objs)
	first := c.readBack(t, objs)
	c.apply(t, objs)
	again := c.readBack(t, objs)
	for k, o := range first {
		if rv := again[k].GetResourceVersion(); rv != o.GetResourceVersion() {
			t.Errorf("%s: applying the same output again changed it (resourceVersion %s -> %s)", k, o.GetResourceVersion(), rv)
		}
	}
	t.Logf("applied and read back %d objects from the plugin's generate", len(objs))
}
