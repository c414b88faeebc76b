package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/render"
)

// fieldManager is the server-side apply field manager of every apply.
const fieldManager = "stowage"

// requireEnv makes a missing API server a failure rather than a skip.
const requireEnv = "STOWAGE_REQUIRE_APISERVER"

// cluster is a running API server and clients for it.
type cluster struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	// env and cfg are envtest's environment and its admin client
	// configuration (for users with other rights: env.AddUser).
	env *envtest.Environment
	cfg *rest.Config
}

// startAPIServer starts kube-apiserver and etcd from $KUBEBUILDER_ASSETS
// through envtest, stopped when t ends. Without the binaries the test is
// skipped, or fails when STOWAGE_REQUIRE_APISERVER is set.
func startAPIServer(t *testing.T) *cluster {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	var missing []string
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(assets, bin)); assets == "" || err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("no %s in KUBEBUILDER_ASSETS=%q: run `export KUBEBUILDER_ASSETS=\"$(hack/kube-apiserver/build.sh)\"` (needs etcd from Debian's etcd-server)",
			strings.Join(missing, " or "), assets)
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("%s is set, but %s", requireEnv, msg)
		}
		t.Skip(msg)
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	t.Logf("kube-apiserver and etcd ready in %v", time.Since(start).Round(10*time.Millisecond))

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := disc.ServerVersion(); err == nil {
		t.Logf("server version %s", v.GitVersion)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), env: env, cfg: cfg}
}

// resource returns the client for u's kind and namespace.
func (c *cluster) resource(t *testing.T, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", id(u), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	return c.dyn.Resource(m.Resource)
}

// createNamespaces creates every namespace objs live in, as a user does
// before the first apply; existing ones are kept.
func (c *cluster) createNamespaces(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		_, err := c.resource(t, u).Create(context.Background(), u, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
}

// apply applies every object with server-side apply (field manager
// "stowage", conflicts forced, as a GitOps controller does), for real: no
// dry run.
func (c *cluster) apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		force := true
		_, err = c.resource(t, o).Patch(context.Background(), o.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
		if err != nil {
			t.Fatalf("server-side apply of %s: %v", id(o), err)
		}
	}
}

// readBack gets every object of want from the server and checks that it
// holds every field the rendered object sets, with the same value; fields
// the server adds (defaults, metadata, status) are allowed. It returns the
// live objects by id.
func (c *cluster) readBack(t *testing.T, want []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	live := map[string]*unstructured.Unstructured{}
	for _, w := range want {
		got, err := c.resource(t, w).Get(context.Background(), w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading back %s: %v", id(w), err)
		}
		if diffs := subset("", normalize(t, w.Object), normalize(t, got.Object)); len(diffs) > 0 {
			if len(diffs) > 10 {
				diffs = append(diffs[:10], fmt.Sprintf("… and %d more", len(diffs)-10))
			}
			t.Errorf("%s read back differs from what was rendered:\n  %s", id(w), strings.Join(diffs, "\n  "))
		}
		live[id(w)] = got
	}
	return live
}

// manifests returns the objects as a user applies them: the bytes
// render.Marshal writes (what `stowage render` prints), decoded.
func manifests(t *testing.T, objs []render.Object) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		b, err := render.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatalf("%s %s/%s: %v", o.Kind, o.Namespace, o.Name, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("%s %s/%s: %v", o.Kind, o.Namespace, o.Name, err)
		}
		out = append(out, u)
	}
	return out
}

// id names an object in messages and maps: "Kind namespace/name".
func id(u *unstructured.Unstructured) string {
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// normalize returns v as encoding/json decodes it (numbers float64), so
// that values from YAML and from the server compare equal.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// subset lists where got departs from want: every key of a want map must be
// in got with a matching value, lists must match element by element and
// have the same length, other values must be equal. Keys only got has are
// allowed.
func subset(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: rendered a map, read back %T %v", orRoot(path), got, got)}
		}
		var diffs []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: rendered, missing on the server", path, k))
				continue
			}
			diffs = append(diffs, subset(path+"."+k, w[k], gv)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: rendered %d elements, read back %v", orRoot(path), len(w), got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: rendered %v, read back %v", orRoot(path), want, got)}
		}
		return nil
	}
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}
