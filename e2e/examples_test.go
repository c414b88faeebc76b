package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	pipeline "github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// repoRoot is the main module's root, above this module.
var repoRoot = ".."

// exampleEnv is the environment the examples render with, as in
// cmd/stowage's golden test: the Submarine example reads its Harbor robot
// password from a variable.
var exampleEnv = map[string]string{"SUBMARINE_HARBOR_PASSWORD": "example-harbor-robot-password", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}

// examples are the config directories under examples/ that render objects.
var examples = []string{"openpai-offline", "submarine-notebooks", "gpu-platform", "gitops-flux/config"}

// renderProfile renders a profile the way `stowage render DIR --profile P`
// does: the public pipeline's render.ReadNeeded, which reads the password
// sources, then render.Render with the lock.
func renderProfile(t *testing.T, cfg *v1alpha1.Config, dir, profile string, l *lock.Lock, env map[string]string) []render.Object {
	t.Helper()
	pw, trust, err := pipeline.ReadNeeded(dir, cfg, profile, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	var objs []pipeline.Object
	if err == nil {
		objs, err = pipeline.Render(pipeline.Input{Config: cfg, Lock: l.Object(), Profile: profile, Passwords: pw, Trust: trust})
	}
	if err != nil {
		t.Fatalf("render %s --profile %s: %v", dir, profile, err)
	}
	return render.Objects(objs)
}

// loadExample loads an example's config and lock.
func loadExample(t *testing.T, dir string) (*v1alpha1.Config, *lock.Lock) {
	t.Helper()
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, l
}

// checkCommitted makes sure the objects applied are the committed output
// of the example: golden/<example>/<profile>.yaml, or for the Flux example
// the directory its repository commits.
func checkCommitted(t *testing.T, example, profile string, objs []render.Object) {
	t.Helper()
	if example == "gitops-flux/config" {
		files, err := render.Files(objs)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(repoRoot, "examples", "gitops-flux", "clusters", "prod", "prepull")
		for name, want := range files {
			got, err := os.ReadFile(filepath.Join(out, name))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s/%s is not what the config renders (err %v): run stowage render with --output-dir", out, name, err)
			}
		}
		return
	}
	stream, err := render.Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(repoRoot, "golden", example, profile+".yaml")
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stream, want) {
		t.Fatalf("the render differs from %s: run `make golden` in the main module", golden)
	}
}

// TestApplyExamples applies every example's rendered output to a real API
// server with server-side apply (namespaces created first) and reads every
// object back: it must hold every field stowage set, with the same value.
// Applying the same output again changes nothing. Then one lock entry gets
// another stand-in's digest, as `stowage bump` would write it, and the new
// render is applied: exactly the DaemonSets that pull that image change,
// only in their pod template (generation bumped), plus the records
// ConfigMaps that list the digest; every other object keeps its
// resourceVersion.
func TestApplyExamples(t *testing.T) {
	c := startAPIServer(t)
	applied := map[string]string{} // object id -> example, to keep examples apart
	for _, example := range examples {
		dir := filepath.Join(repoRoot, "examples", example)
		cfg, l := loadExample(t, dir)
		for _, profile := range cfg.ProfileNames() {
			t.Run(example+"/"+profile, func(t *testing.T) {
				objs := renderProfile(t, cfg, dir, profile, l, exampleEnv)
				checkCommitted(t, example, profile, objs)
				want := c.served(t, manifests(t, objs))
				for _, o := range want {
					if other, ok := applied[id(o)]; ok {
						t.Fatalf("%s is rendered by both %s and %s: the examples would overwrite each other", id(o), other, example)
					}
					applied[id(o)] = example
				}

				c.createNamespaces(t, want)
				c.apply(t, want)
				first := c.readBack(t, want)
				t.Logf("applied and read back %d objects", len(want))

				c.apply(t, want)
				again := c.readBack(t, want)
				for k, o := range first {
					if rv := again[k].GetResourceVersion(); rv != o.GetResourceVersion() {
						t.Errorf("%s: applying the same output again changed it (resourceVersion %s -> %s)", k, o.GetResourceVersion(), rv)
					}
				}

				bumped, entry, oldDigest := bumpOne(t, l, objs)
				objs2 := renderProfile(t, cfg, dir, profile, bumped, exampleEnv)
				want2 := c.served(t, manifests(t, objs2))
				changed := renderedChanges(t, want, want2, oldDigest)
				t.Logf("bumped %s %s -> %s: the render changes %s", entry.Name, short(oldDigest), short(entry.Digest),
					strings.Join(slices.Sorted(keys(changed)), ", "))

				c.apply(t, want2)
				after := c.readBack(t, want2)
				checkBumpOnServer(t, again, after, changed)
			})
		}
	}
}

// served returns the objects of kinds the API server serves. The others
// are the admission policies of a profile's policy field (Kyverno's
// ClusterPolicy and ImageValidatingPolicy, policy-controller's
// ClusterImagePolicy and TrustRoot),
// custom resources whose CRDs this cluster does not have: no policy engine
// is installed here, and no stand-in CRD is, since one would accept what
// the real one may refuse (internal/testing/kubecheck and the admissiontest module
// check those objects). Each is checked to be missing from the server's
// discovery: the "no matches for kind" that fails `kubectl apply`, and
// Argo CD's sync, where the engine is not installed — which is why
// docs/signatures.md says to install the policy engine first. Any other
// kind the server does not serve fails the test.
func (c *cluster) served(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		_, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			out = append(out, o)
		case meta.IsNoMatchError(err) && policyKinds[gvk.Group+"/"+gvk.Kind]:
			t.Logf("%s: not served here (no %s installed): %v", id(o), gvk.Group, err)
		default:
			t.Fatalf("%s: %v", id(o), err)
		}
	}
	return out
}

// policyKinds are the custom resource kinds render writes, by group/kind.
var policyKinds = map[string]bool{
	"kyverno.io/ClusterPolicy":                  true,
	"policies.kyverno.io/ImageValidatingPolicy": true,
	"policy.sigstore.dev/ClusterImagePolicy":    true,
	"policy.sigstore.dev/TrustRoot":             true,
	// A startup gate's NodeReadinessRule, served where Kubernetes' Node
	// Readiness Controller runs (TestStartupGateReadiness installs a CRD
	// of the rule's facts).
	"readiness.node.x-k8s.io/NodeReadinessRule": true,
}

// bumpOne returns a copy of l in which one entry pinned by the fewest
// DaemonSets of objs (at least one) has the digest of another stand-in of
// the same kind, the entry as changed, and the digest it had.
func bumpOne(t *testing.T, l *lock.Lock, objs []render.Object) (*lock.Lock, lock.Entry, string) {
	t.Helper()
	best, bestCount := -1, 0
	for i, e := range l.Entries {
		n := 0
		for _, o := range objs {
			if ds, ok := o.Object.(*appsv1.DaemonSet); ok && pins(ds, e) {
				n++
			}
		}
		if n > 0 && (best < 0 || n < bestCount) {
			best, bestCount = i, n
		}
	}
	if best < 0 {
		t.Fatal("no lock entry is pinned by any DaemonSet")
	}
	e := l.Entries[best]
	old := e.Digest
	for i := 0; ; i++ {
		next, err := offlineimage.Entry(fmt.Sprintf("stowage.test/e2e/bumped:%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if next.Kind == e.Kind {
			e.Digest, e.Platforms, e.Size = next.Digest, next.Platforms, next.Size
			break
		}
	}
	bumped := &lock.Lock{Entries: slices.Clone(l.Entries)}
	bumped.Put(e)
	return bumped, e, old
}

// pins reports whether a container of ds pins e's digest or one of its
// platform children.
func pins(ds *appsv1.DaemonSet, e lock.Entry) bool {
	digests := []string{e.Digest}
	for _, p := range e.Platforms {
		digests = append(digests, p.Digest)
	}
	spec := ds.Spec.Template.Spec
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, d := range digests {
			if strings.HasSuffix(c.Image, "@"+d) {
				return true
			}
		}
	}
	return false
}

// renderedChanges returns the ids of the objects whose rendered form
// differs between before and after, and checks that they are the ones that
// must: DaemonSets that pinned the old digest, changed only in their pod
// template, and ConfigMaps that listed it.
func renderedChanges(t *testing.T, before, after []*unstructured.Unstructured, oldDigest string) map[string]bool {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%d objects before the bump, %d after", len(before), len(after))
	}
	changed := map[string]bool{}
	daemonSets := 0
	for i, b := range before {
		a := after[i]
		if id(a) != id(b) {
			t.Fatalf("object %d: %s before the bump, %s after", i, id(b), id(a))
		}
		if reflect.DeepEqual(a.Object, b.Object) {
			continue
		}
		changed[id(b)] = true
		mentioned := strings.Contains(string(mustJSON(t, b)), strings.TrimPrefix(oldDigest, "sha256:"))
		switch b.GetKind() {
		case "DaemonSet":
			daemonSets++
			if !mentioned {
				t.Errorf("%s changed but did not pin the bumped digest", id(b))
			}
			if !reflect.DeepEqual(withoutTemplate(b), withoutTemplate(a)) {
				t.Errorf("%s changed outside its pod template", id(b))
			}
		case "ConfigMap":
			if !mentioned {
				t.Errorf("%s changed but did not list the bumped digest", id(b))
			}
		default:
			t.Errorf("%s changed, but a digest bump only touches DaemonSets and ConfigMaps", id(b))
		}
	}
	if daemonSets == 0 {
		t.Errorf("no DaemonSet changed")
	}
	return changed
}

// checkBumpOnServer compares the live objects before and after applying the
// bumped render: an object's resourceVersion changes exactly when its
// render changed, and a DaemonSet's generation exactly then, by one.
func checkBumpOnServer(t *testing.T, before, after map[string]*unstructured.Unstructured, changed map[string]bool) {
	t.Helper()
	for k, b := range before {
		a := after[k]
		rvChanged := a.GetResourceVersion() != b.GetResourceVersion()
		if rvChanged != changed[k] {
			t.Errorf("%s: resourceVersion %s -> %s, but its render changed: %v", k, b.GetResourceVersion(), a.GetResourceVersion(), changed[k])
		}
		if b.GetKind() != "DaemonSet" {
			continue
		}
		want := b.GetGeneration()
		if changed[k] {
			want++
		}
		if got := a.GetGeneration(); got != want {
			t.Errorf("%s: generation %d -> %d, want %d", k, b.GetGeneration(), got, want)
		}
		if changed[k] && reflect.DeepEqual(templateOf(a), templateOf(b)) {
			t.Errorf("%s: pod template unchanged on the server after the bump", k)
		}
	}
}

// withoutTemplate returns u's content without spec.template.
func withoutTemplate(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "spec", "template")
	return c.Object
}

func templateOf(u *unstructured.Unstructured) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template")
	return v
}

func mustJSON(t *testing.T, u *unstructured.Unstructured) []byte {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// short is a digest cut to 12 hex digits for logs.
func short(d string) string {
	return d[:min(len(d), len("sha256:")+12)]
}
