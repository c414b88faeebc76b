package schema

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// duplicateKeys is an error for each key a JSON object of f has more
// than once, at the repeat, naming both lines, in the words strictyaml
// uses for a YAML file's (checkYAML). CUE's decoders keep
// every copy and the evaluator unifies them, so `kinds: [kyverno]` then
// `kinds: [crio]` was reported as a conflict of values (with a phantom
// third value from the schema's disjunction), and two equal copies were
// accepted without a word; a key appears once in a mapping, and JSON
// readers disagree on which copy counts. The walk is bounded by the
// file's node count, which buildUser limits.
func duplicateKeys(f *ast.File, file string) Errors {
	var errs Errors
	var walk func(n ast.Node, path []cue.Selector)
	fields := func(decls []ast.Decl, path []cue.Selector) {
		first := map[string]token.Pos{}
		for _, d := range decls {
			switch d := d.(type) {
			case *ast.Field:
				name, _, err := ast.LabelName(d.Label)
				if err != nil {
					continue
				}
				here := append(path[:len(path):len(path)], cue.Str(name))
				if p, ok := first[name]; ok {
					e := &Error{File: file, Path: pathString(cue.MakePath(here...)), Msg: fmt.Sprintf("duplicate key %q: this mapping gives it at line %d and again at line %d; a key appears once in a mapping (keep one)", name, p.Line(), d.Pos().Line())}
					setPos(e, d.Pos())
					errs = append(errs, e)
				} else {
					first[name] = d.Pos()
				}
				walk(d.Value, here)
			case *ast.EmbedDecl:
				walk(d.Expr, path)
			}
		}
	}
	walk = func(n ast.Node, path []cue.Selector) {
		switch x := n.(type) {
		case *ast.StructLit:
			fields(x.Elts, path)
		case *ast.ListLit:
			for i, el := range x.Elts {
				walk(el, append(path[:len(path):len(path)], cue.Index(i)))
			}
		}
	}
	fields(f.Decls, nil)
	return errs
}
