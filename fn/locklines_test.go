package fn

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/lock"
)

// TestLockItemLines: the lock errors of an ImageLock item name the lines
// of the item as written alone without kustomize's internal annotations
// (the lines the lock file has when it is in canonical form), whatever
// the item's place in the ResourceList and the annotations kustomize put
// on it: the same lines as parsing that text.
func TestLockItemLines(t *testing.T) {
	const item = `apiVersion: stowage.dev/v1alpha1
kind: ImageLock
metadata:
  name: stowage-lock
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  images:
  - name: docker.io/library/busybox:1.31.1
    reference: busybox:1.31.1
    digest: sha256:zz
    kind: manifest
    colour: red
`
	_, want := lock.Parse([]byte(item), "stowage.lock.yaml")
	if want == nil {
		t.Fatal("the lock parsed")
	}
	lines := regexp.MustCompile(`stowage\.lock\.yaml:\d+`)
	for _, internal := range []string{
		"    config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/path: stowage.lock.yaml\n",
		"    internal.config.kubernetes.io/annotations-migration-resource-id: '1'\n",
		"",
	} {
		for _, before := range []string{"", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\n"} {
			text := strings.Replace(item, "  annotations:\n", "  annotations:\n"+internal, 1)
			nodes, err := (&kio.ByteReader{Reader: bytes.NewReader([]byte(before + text)), OmitReaderAnnotations: true}).Read()
			if err != nil {
				t.Fatal(err)
			}
			n := nodes[len(nodes)-1]
			_, got := lock.ParseNode(n.YNode(), "stowage.lock.yaml", itemLines(n.YNode()))
			if got == nil || strings.Join(lines.FindAllString(got.Error(), -1), " ") != strings.Join(lines.FindAllString(want.Error(), -1), " ") {
				t.Errorf("internal %q, before %q:\ngot  %v\nwant %v", internal, before, got, want)
			}
		}
	}
	// Only internal annotations: the annotations key goes too.
	only := strings.Replace(item, "    config.kubernetes.io/local-config: \"true\"\n", "    internal.config.kubernetes.io/path: a\n", 1)
	bare := strings.Replace(item, "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n", "", 1)
	_, want = lock.Parse([]byte(bare), "stowage.lock.yaml")
	n, err := yaml.Parse(only)
	if err != nil {
		t.Fatal(err)
	}
	_, got := lock.ParseNode(n.YNode(), "stowage.lock.yaml", itemLines(n.YNode()))
	if got == nil || strings.Join(lines.FindAllString(got.Error(), -1), " ") != strings.Join(lines.FindAllString(want.Error(), -1), " ") {
		t.Errorf("only internal annotations:\ngot  %v\nwant %v", got, want)
	}
}
