package clidocs

import (
	"strings"
	"testing"
)

// TestConfigReferenceNeedsMeanings: a schema field without a doc comment,
// at any depth, fails the generation and is named; with its comment the
// same schema generates a row carrying it.
func TestConfigReferenceNeedsMeanings(t *testing.T) {
	t.Parallel()
	bare := "#Config: {\n\t// a is documented.\n\ta?: {\n\t\tb?: [...{c?: int}]\n\t}\n}\n"
	_, err := ConfigReference([]byte(bare), "x.cue")
	if err == nil || !strings.Contains(err.Error(), "x.cue: fields without a doc comment") ||
		!strings.Contains(err.Error(), "\n  a.b\n  a.b[].c") {
		t.Fatalf("undocumented a.b and a.b[].c: got %v", err)
	}
	full := "#Config: {\n\t// a is documented.\n\ta?: {\n\t\t// b lists.\n\t\tb?: [...{\n\t\t\t// c counts.\n\t\t\tc?: int\n\t\t}]\n\t}\n}\n"
	table, err := ConfigReference([]byte(full), "x.cue")
	if err != nil {
		t.Fatal(err)
	}
	if want := "| `a` | struct | a is documented. |\n| `a.b` | list | b lists. |\n| `a.b[].c` | `int` | c counts. |\n"; !strings.HasSuffix(table, want) {
		t.Errorf("table:\n%s\nwant it to end with:\n%s", table, want)
	}
}
