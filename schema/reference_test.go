package schema

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// shorthands are the schema types README documents once, under a name of
// their own, wherever they are used.
var shorthands = map[string]string{"auth": "<auth>", "tolerations": "<toleration>", "resources": "<resources>"}

// TestREADMEConfigReference keeps docs/config.md's reference table (once
// README's) and the
// schema in step: every field the schema has is documented, and every
// documented field exists.
func TestREADMEConfigReference(t *testing.T) {
	readme, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := readmeFields(t, string(readme))

	v := cuecontext.New().CompileBytes(Source, cue.Filename(SchemaFile))
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	schemaFields := map[string]bool{}
	walkSchema(v.LookupPath(cue.ParsePath("#Config")), "", schemaFields)

	var missing, extra []string
	for f := range schemaFields {
		if !documented[f] {
			missing = append(missing, f)
		}
	}
	for f := range documented {
		if !schemaFields[f] {
			extra = append(extra, f)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("schema fields missing from README's config reference:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("README documents fields the schema does not have:\n  %s", strings.Join(extra, "\n  "))
	}
	if len(schemaFields) < 30 {
		t.Errorf("walked only %d schema fields; the walk is broken", len(schemaFields))
	}
}

// readmeFields returns the first-column field paths of the table after the
// config-reference marker.
func readmeFields(t *testing.T, readme string) map[string]bool {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "<!-- config-reference")
	if !ok {
		t.Fatal("README has no config-reference marker")
	}
	first := regexp.MustCompile("^\\| `([^`]+)` \\|")
	out := map[string]bool{}
	for _, line := range strings.Split(rest, "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if m := first.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// walkSchema records the documented paths of v under prefix: leaves, maps
// of scalars and lists of scalars are fields; structs and lists of structs
// are walked; auth, tolerations and resources are fields that are walked
// once under their shorthand.
func walkSchema(v cue.Value, prefix string, out map[string]bool) {
	if v.IncompleteKind() != cue.StructKind && v.IncompleteKind() != cue.ListKind {
		out[prefix] = true
		return
	}
	if v.IncompleteKind() == cue.ListKind {
		elem := v.LookupPath(cue.MakePath(cue.AnyIndex))
		if elem.IncompleteKind() == cue.StructKind {
			walkSchema(elem, prefix+"[]", out)
		} else {
			out[prefix] = true
		}
		return
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		panic(err)
	}
	n := 0
	for it.Next() {
		n++
		name := it.Selector().Unquoted()
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		if sh, ok := shorthands[name]; ok {
			out[p] = true
			val := it.Value()
			if name == "tolerations" {
				val = val.LookupPath(cue.MakePath(cue.AnyIndex))
			}
			walkSchema(val, sh, out)
			continue
		}
		walkSchema(it.Value(), p, out)
	}
	if n == 0 {
		elem := v.LookupPath(cue.MakePath(cue.AnyString))
		if elem.Exists() && elem.IncompleteKind() == cue.StructKind {
			key := "<name>"
			if strings.HasSuffix(prefix, "images") {
				key = "<key>"
			}
			walkSchema(elem, prefix+"."+key, out)
		} else {
			out[prefix] = true
		}
	}
}
