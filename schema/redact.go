package schema

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	cuejson "cuelang.org/go/encoding/json"
)

// Redacted replaces a literal password wherever an error message would show
// it.
const Redacted = "<redacted>"

// literalPasswords returns the values of every `password` field of files
// that is a plain string and not a password source ("env:", "file:"). It
// reads the files' syntax, not their evaluation, so it finds them even in
// a config that does not evaluate (a conflict that CUE prints whole).
func literalPasswords(files []File) []string {
	var out []string
	for _, f := range files {
		var n ast.Node
		switch filepath.Ext(f.Name) {
		case ".cue":
			af, err := parser.ParseFile(f.Name, f.Data)
			if err != nil {
				continue
			}
			n = af
		case ".json":
			expr, err := cuejson.Extract(f.Name, f.Data)
			if err != nil {
				continue
			}
			n = expr
		default:
			af, err := extractYAML(f.Name, f.Data)
			if err != nil {
				continue
			}
			n = af
		}
		ast.Walk(n, func(n ast.Node) bool {
			fd, ok := n.(*ast.Field)
			if !ok {
				return true
			}
			if name, _, _ := ast.LabelName(fd.Label); name != "password" {
				return true
			}
			lit, ok := fd.Value.(*ast.BasicLit)
			if !ok {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if s != "" && !strings.HasPrefix(s, PasswordFromEnv) && !strings.HasPrefix(s, PasswordFromFile) {
				out = append(out, s)
			}
			return true
		}, nil)
	}
	return out
}

// redactErrors replaces every literal password of files in err's messages,
// in plain and quoted spellings. Other errors pass through.
func redactErrors(err error, files []File) error {
	var es Errors
	if err == nil || !errors.As(err, &es) {
		return err
	}
	secrets := literalPasswords(files)
	if len(secrets) == 0 {
		return err
	}
	for _, e := range es {
		for _, s := range secrets {
			q := strconv.Quote(s)
			e.Msg = strings.ReplaceAll(e.Msg, q, strconv.Quote(Redacted))
			e.Msg = strings.ReplaceAll(e.Msg, q[1:len(q)-1], Redacted)
			e.Msg = strings.ReplaceAll(e.Msg, s, Redacted)
		}
	}
	return es
}
