package schema

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestYAMLConfigStrict: what the YAML engine guarantees for a YAML config
// file, as it guarantees it for the lock and the kustomization file: an
// alias bomb and deep nesting refused in milliseconds before CUE expands
// anything, a key given twice at the repeat with both lines (the path as
// CUE writes it), an unknown field with the nearest name, a value of the
// wrong type at its line, each one error naming file, line and field.
func TestYAMLConfigStrict(t *testing.T) {
	t.Parallel()
	var bomb strings.Builder
	bomb.WriteString("images:\n  app: {reference: \"busybox:1\"}\nx:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&bomb, "  a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	profile := File{Name: "cfg/site.cue", Data: []byte("package stowage\nprofiles: p: pullers: [{name: \"pre\", namespace: \"ns\", images: [\"app\"]}]\n")}
	for _, c := range []struct{ name, data, want string }{
		{"alias bomb", bomb.String(), "cfg/c.yaml:4:7: x.a4[2][9][8][4]: aliases expand to more than 50000 nodes, the limit"},
		{"deep nesting", "images:\n  app: {reference: \"busybox:1\"}\nx: " + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "\n", "cfg/c.yaml:3:104: x" + strings.Repeat("[0]", 100) + ": nested more than 100 deep, the limit"},
		{"duplicate key", "images:\n  app:\n    reference: \"busybox:1\"\n    reference: \"busybox:2\"\n",
			`cfg/c.yaml:4:5: images.app.reference: duplicate key "reference": this mapping gives it at line 3 and again at line 4; a key appears once in a mapping (keep one)`},
		{"duplicate key needing quotes", "images:\n  app: {reference: \"busybox:1\"}\nenvironments:\n  e:\n    image: \"busybox:1\"\n    nodeSelector:\n      kubernetes.io/arch: amd64\n      kubernetes.io/arch: arm64\n",
			`cfg/c.yaml:8:7: environments.e.nodeSelector."kubernetes.io/arch": duplicate key "kubernetes.io/arch"`},
		{"unknown field", "images:\n  app:\n    referense: \"busybox:1\"\n", `cfg/c.yaml:3:5: images.app.referense: field not allowed; did you mean "reference"?`},
		{"wrong type", "images:\n  app:\n    reference: [busybox]\n", "cfg/c.yaml:3:16: images.app.reference: conflicting values"},
	} {
		start := time.Now()
		_, err := LoadFiles("cfg", []File{{Name: "cfg/c.yaml", Data: []byte(c.data)}, profile})
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got\n%v\nwant it to hold\n%s", c.name, err, c.want)
		}
	}
}
