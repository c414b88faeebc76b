package lock

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestParseNodeAgrees checks that ParseNode of the tree yaml.v3 parses
// gives Parse's answer (several problems in one file, an alias, a merge
// key), that problems come in document order, and that ParseNode maps
// lines.
func TestParseNodeAgrees(t *testing.T) {
	t.Parallel()
	entry := busybox
	for _, data := range []string{
		header + entry,
		header + entry + "    colour: red\n    size: big\n    shade: x\n" + entry,
		strings.Replace(header, "  name: stowage-lock", "  uid: abc", 1) + entry + "    platforms: [{platform: linux/amd64, digest: x, extra: 1}]\n",
		"apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nextra: 1\nspec:\n  images:\n  - &e {name: a, reference: a, digest: b, kind: manifest, bogus: 1}\n  - *e\n",
		"apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nspec:\n  images:\n  - <<: {name: a, bogus: 2}\n    reference: a\n",
		"apiVersion: v1\nkind: ConfigMap\n",
		"- 1\n",
	} {
		_, perr := Parse([]byte(data), "l.yaml")
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
			t.Fatal(err)
		}
		_, nerr := ParseNode(&doc, "l.yaml", nil)
		if (perr == nil) != (nerr == nil) || (perr != nil && perr.Error() != nerr.Error()) {
			t.Errorf("%q:\nParse:     %v\nParseNode: %v", data, perr, nerr)
		}
	}
	// Located in order: line 9's unknown field before line 10's type error.
	data := header + entry + "    colour: red\n    size: big\n"
	_, err := Parse([]byte(data), "l.yaml")
	want := "l.yaml:13: spec.images[0] (docker.io/library/busybox:1.31.1): colour: field not allowed (allowed here: digest, kind, name, platform, platforms, reference, size, verifiedBy)\nl.yaml:14: spec.images[0] (docker.io/library/busybox:1.31.1): size: a string where an integer is expected"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// Lines mapped: an item's line in a ResourceList to its file's.
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatal(err)
	}
	_, err = ParseNode(&doc, "l.yaml", func(n int) int { return n + 100 })
	if err == nil || !strings.Contains(err.Error(), "l.yaml:113: ") || !strings.Contains(err.Error(), "l.yaml:114: ") {
		t.Errorf("lines not mapped: %v", err)
	}
}
