package clidocs

import (
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// ConfigReference returns the markdown table of every field of #Config in
// the CUE source src (named file in errors): the field's path (<name> for
// a map key, [] for a list element), its CUE type and the schema's doc
// comment on it. docs/config.md holds the table of schema/stowage.cue
// between its configReference markers. A field without a doc comment is
// an error naming every such path: each field's meaning is written once,
// in the schema.
func ConfigReference(src []byte, file string) (string, error) {
	v := cuecontext.New().CompileBytes(src, cue.Filename(file))
	if err := v.Err(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| field | type | meaning |\n|---|---|---|\n")
	seen := map[string]bool{}
	var undocumented []string
	row := func(path, typ string, v cue.Value) {
		d := docOf(v)
		if d == "" {
			undocumented = append(undocumented, path)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", path, typ, d)
	}
	var walk func(v cue.Value, path string, depth int)
	walk = func(v cue.Value, path string, depth int) {
		if depth > 12 || seen[path] {
			return
		}
		seen[path] = true
		// A map's element and a list's element are their parent's row.
		if path != "" && !strings.HasSuffix(path, ">") && !strings.HasSuffix(path, "]") {
			typ := typeOf(v)
			if isListOfStructs(v) {
				typ = "list"
			}
			row(path, typ, v)
		}
		switch {
		case isListOfStructs(v):
			walk(v.LookupPath(cue.MakePath(cue.AnyIndex)), path+"[]", depth+1)
		case isMap(v):
			if elem := v.LookupPath(cue.MakePath(cue.AnyString)); elem.IncompleteKind() == cue.StructKind {
				walk(elem, path+".<name>", depth+1)
			}
		case v.IncompleteKind() == cue.StructKind:
			it, err := v.Fields(cue.Optional(true))
			if err != nil {
				return
			}
			for it.Next() {
				p := it.Selector().Unquoted()
				if path != "" {
					p = path + "." + p
				}
				walk(it.Value(), p, depth+1)
			}
		}
	}
	walk(v.LookupPath(cue.ParsePath("#Config")), "", 0)
	if len(undocumented) > 0 {
		return "", fmt.Errorf("%s: fields without a doc comment (write their meaning in the schema):\n  %s", file, strings.Join(undocumented, "\n  "))
	}
	return b.String(), nil
}

// isMap reports whether v is a struct of pattern fields only
// ([string]: T).
func isMap(v cue.Value) bool {
	if v.IncompleteKind() != cue.StructKind {
		return false
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil || it.Next() {
		return false
	}
	return v.LookupPath(cue.MakePath(cue.AnyString)).Exists()
}

func isListOfStructs(v cue.Value) bool {
	return v.IncompleteKind() == cue.ListKind && v.LookupPath(cue.MakePath(cue.AnyIndex)).IncompleteKind() == cue.StructKind
}

// typeOf is v's CUE type in one line: a map as {[string]: T}, a list as
// [...T], a struct as "struct", anything else as CUE prints it.
func typeOf(v cue.Value) string {
	switch {
	case isMap(v):
		return "map of " + typeOf(v.LookupPath(cue.MakePath(cue.AnyString)))
	case v.IncompleteKind() == cue.ListKind:
		return "list of " + typeOf(v.LookupPath(cue.MakePath(cue.AnyIndex)))
	case v.IncompleteKind() == cue.StructKind:
		return "struct"
	}
	s := strings.Join(strings.Fields(fmt.Sprint(v)), " ")
	if v.IncompleteKind() == cue.StringKind && strings.HasPrefix(s, "!=") {
		s = "string & " + s
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// docOf is the schema's comment on v, one line, with | escaped.
func docOf(v cue.Value) string {
	var parts []string
	for _, g := range v.Doc() {
		parts = append(parts, strings.Join(strings.Fields(g.Text()), " "))
	}
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(strings.Join(parts, " "))
}
