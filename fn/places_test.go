package fn

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// TestImagePlaces: a declared place pins every match of its pattern
// inside one string (two in a row, the text between kept), a place whose
// image the lock lacks or whose value is a number is an error result at
// its field, and an undeclared reference is a warning, left as written.
func TestImagePlaces(t *testing.T) {
	l := &lock.Lock{}
	e, err := offlineimage.Entry("ghcr.io/org/a:v1")
	if err != nil {
		t.Fatal(err)
	}
	l.Put(e)
	lockNode, err := yaml.Parse(string(l.Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := yaml.Parse(`apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata: {name: pin}
spec:
  imagePlaces:
  - {kind: ConfigMap, path: data/list, pattern: '(ghcr\.io/[a-z/]+:v[0-9]+)'}
  - {kind: ConfigMap, path: data/missing}
  - {kind: Thing, path: spec/image}
`)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := yaml.Parse(`apiVersion: v1
kind: ConfigMap
metadata: {name: images}
data:
  list: "ghcr.io/org/a:v1, then ghcr.io/org/a:v1."
  missing: ghcr.io/org/b:v2
  other: quay.io/org/c:v3 and 10:30
`)
	if err != nil {
		t.Fatal(err)
	}
	thing, err := yaml.Parse("apiVersion: example.org/v1\nkind: Thing\nmetadata: {name: t}\nspec: {image: 42}\n")
	if err != nil {
		t.Fatal(err)
	}
	list := &framework.ResourceList{FunctionConfig: fc, Items: []*yaml.RNode{lockNode, cm, thing}}
	_ = (&Processor{}).Process(list)
	got, _ := cm.Pipe(yaml.Lookup("data", "list"))
	pinned := "ghcr.io/org/a:v1@" + e.Digest
	if want := pinned + ", then " + pinned + "."; yaml.GetValue(got) != want {
		t.Errorf("data.list = %q, want %q", yaml.GetValue(got), want)
	}
	var rs []string
	for _, r := range list.Results {
		rs = append(rs, string(r.Severity)+" "+r.Field.Path+": "+r.Message)
	}
	want := []string{
		`error data.missing: image "ghcr.io/org/b:v2" has no entry "ghcr.io/org/b:v2" in stowage.lock.yaml; run ` + "`stowage lock`" + ` or add it`,
		`error spec.image: want a string image reference, got a number (an image place of spec.imagePlaces)`,
		`warning data.other: "quay.io/org/c:v3" reads as an image reference and is not pinned: the function leaves it as written, and the site will pull it by tag; declare its place in spec.imagePlaces (kind, path, pattern) so that lock and the function pin it`,
	}
	if strings.Join(rs, "\n") != strings.Join(want, "\n") {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(rs, "\n"), strings.Join(want, "\n"))
	}
}
