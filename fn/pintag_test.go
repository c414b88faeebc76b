package fn

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// TestPinsEachTagToItsOwnEntry: in pin mode, two tags of one repository
// get each its own lock entry's digest, never the other's, and a third
// tag the lock lacks is an error result, left unpinned, not pinned to a
// sibling tag's digest; a tag-less spelling is not the same image as a
// tagged one either.
func TestPinsEachTagToItsOwnEntry(t *testing.T) {
	l := &lock.Lock{}
	digests := map[string]string{}
	for _, ref := range []string{"nginx:1.26", "nginx:1.27", "quay.io/example/tool"} {
		e, err := offlineimage.Entry(ref)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(e)
		digests[ref] = e.Digest
	}
	if digests["nginx:1.26"] == digests["nginx:1.27"] {
		t.Fatal("the stand-in digests of two tags are equal; the test cannot tell them apart")
	}
	lockNode, err := yaml.Parse(string(l.Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := yaml.Parse("apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata: {name: pin}\nspec: {}\n")
	if err != nil {
		t.Fatal(err)
	}
	web, err := yaml.Parse(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      initContainers:
      - {name: a, image: "nginx:1.27"}
      containers:
      - {name: b, image: "nginx:1.26"}
      - {name: c, image: "nginx:1.25"}
      - {name: d, image: "quay.io/example/tool:v2"}
`)
	if err != nil {
		t.Fatal(err)
	}
	list := &framework.ResourceList{FunctionConfig: fc, Items: []*yaml.RNode{lockNode, web}}
	_ = (&Processor{}).Process(list)
	results := list.Results
	items := list.Items
	got := map[string]string{}
	for _, it := range items {
		if it.GetKind() != "Deployment" {
			continue
		}
		for _, p := range [][]string{{"spec", "template", "spec", "initContainers"}, {"spec", "template", "spec", "containers"}} {
			cs, _ := it.Pipe(yaml.Lookup(p...))
			els, _ := cs.Elements()
			for _, c := range els {
				got[yaml.GetValue(c.Field("name").Value)] = yaml.GetValue(c.Field("image").Value)
			}
		}
	}
	want := map[string]string{
		"a": "nginx:1.27@" + digests["nginx:1.27"],
		"b": "nginx:1.26@" + digests["nginx:1.26"],
		"c": "nginx:1.25",
		"d": "quay.io/example/tool:v2",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("container %s: image %q, want %q", name, got[name], w)
		}
	}
	var errs []string
	for _, r := range results {
		if r.Severity == framework.Error {
			errs = append(errs, r.Field.Path+": "+r.Message)
		}
	}
	wantErrs := []string{
		`spec.template.spec.containers[1].image: image "nginx:1.25" has no entry "docker.io/library/nginx:1.25" in stowage.lock.yaml; run ` + "`stowage lock`" + ` or add it`,
		`spec.template.spec.containers[2].image: image "quay.io/example/tool:v2" has no entry "quay.io/example/tool:v2" in stowage.lock.yaml; run ` + "`stowage lock`" + ` or add it`,
	}
	if strings.Join(errs, "\n") != strings.Join(wantErrs, "\n") {
		t.Errorf("error results:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(wantErrs, "\n"))
	}
}
