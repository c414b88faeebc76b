package lock

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// strictErrors is what yaml.v3's strict Decoder (KnownFields) reports for
// data decoded into a type of the lock file's shape: the unknown-field
// messages Parse turned into located errors before it decoded its one
// parsed tree instead.
func strictErrors(t *testing.T, data string) []string {
	t.Helper()
	var f struct {
		APIVersion string         `yaml:"apiVersion"`
		Kind       string         `yaml:"kind"`
		Metadata   map[string]any `yaml:"metadata"`
		Spec       struct {
			Images []Entry `yaml:"images"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(data)))
	dec.KnownFields(true)
	var te *yaml.TypeError
	if err := dec.Decode(&f); errors.As(err, &te) {
		return te.Errors
	}
	return nil
}

// TestParseNodeAgrees checks that ParseNode of the tree yaml.v3 parses
// gives Parse's answer, and that the fields no Go field takes are found,
// in order among the type errors, as yaml.v3's strict decoding finds them
// (several problems in one file, an alias and a merge key, which take the
// strict decoder's path).
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
		for _, msg := range strictErrors(t, data) {
			// "line N: field X not found in type T" is Parse's
			// "FILE:N: ... X: field not allowed".
			num, text, _ := strings.Cut(strings.TrimPrefix(msg, "line "), ": ")
			name, _, found := strings.Cut(strings.TrimPrefix(text, "field "), " not found in type ")
			if !found {
				continue
			}
			want := regexp.MustCompile(`(?m)^l\.yaml:` + num + `: .*\b` + regexp.QuoteMeta(name) + `: field not allowed(; did you mean "\w+"\?)? \(allowed here: `)
			if perr == nil || !want.MatchString(perr.Error()) {
				t.Errorf("%q: strict decoding's %q is not in Parse's %v", data, msg, perr)
			}
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
