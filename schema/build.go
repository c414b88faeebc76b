package schema

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/strictyaml"
)

// panicError is a panic of CUE's decoders or evaluator, as an error.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprint(e.v) }

// extractYAML is cueyaml.Extract, with a panic of CUE's YAML decoder (it
// indexes out of range on some inputs, such as lines ended by a lone "\r")
// returned as a panicError.
func extractYAML(file string, data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, panicError{r}
		}
	}()
	return cueyaml.Extract(file, data)
}

// checkYAML reads a YAML config file with internal/strictyaml before
// CUE's decoder builds anything from it: a syntax error at the token at
// fault (CUE's decoder, yaml.v3, names the line where the enclosing block
// starts) and a control character at its line and column; a key a
// mapping gives twice, at the repeat, naming both lines (CUE's decoder
// keeps every copy and the evaluator unifies them, so two different
// copies read as a conflict of values and two equal ones passed without a
// word); nesting past 100 and aliases past 50,000 nodes, refused before
// they are expanded. Paths are written as CUE writes them. A file of no
// document or of several is left to CUE's decoder and notConfig, which
// say what it is. Merge keys are left to CUE's decoder.
func checkYAML(file string, data []byte) Errors {
	doc, err := strictyaml.Parse(data, file)
	switch {
	case errors.Is(err, strictyaml.ErrEmpty), errors.Is(err, strictyaml.ErrDocuments):
		return nil
	case err == nil:
		err = strictyaml.Check(doc, strictyaml.Options{File: file, Merge: true, Label: func(k string) string { return cue.Str(k).String() }})
	}
	var errs Errors
	var se *strictyaml.Error
	for _, e := range flattenErrors(err) {
		if errors.As(e, &se) {
			errs = append(errs, &Error{File: se.File, Line: se.Line, Column: se.Column, Path: se.Path, Msg: se.Err.Error()})
		} else {
			errs = append(errs, &Error{File: file, Msg: e.Error()})
		}
	}
	return errs
}

// flattenErrors is err's joined errors, or err alone; none for nil.
func flattenErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// decodeErrors locates a decoder's error in file.
func decodeErrors(err error, file string) Errors {
	var pe panicError
	if errors.As(err, &pe) {
		return Errors{{File: file, Msg: fmt.Sprintf("the YAML decoder cannot read this file (%v); check its syntax and line endings", pe.v)}}
	}
	return fromCUEList(err, file)
}

// recoverCUE turns a panic inside CUE during a load into Errors at file,
// so that a load never panics whatever the files hold.
func recoverCUE(file string, cfg **v1alpha1.Config, err *error) {
	if r := recover(); r != nil {
		*cfg = nil
		*err = Errors{{File: file, Msg: fmt.Sprintf("CUE failed while loading the config (%v); please report this with the file", r)}}
	}
}

// buildUser compiles every file and unifies them in one build: the .cue
// files, and the YAML and JSON files as data files, are the syntax of one
// build.Instance, so CUE unifies them in one evaluation (unifying file by
// file made n files cost n evaluations of a growing value: 2,000 small
// files took 51 s). CUE files may refer to each other's fields and import
// CUE's builtin packages ("strings", "list", ...) and the schema itself
// (schemaImports, resolved to the embedded one); every .cue file must
// declare the same package (or none). Positions keep the file names as the
// caller gave them. Only syntax errors and the limits are returned here:
// conflicts between files and with the schema are left in the value for
// finish to report, all at once and located.
//
// Why not cue/load with an overlay: load looks for a module root
// (cue.mod) by walking up the parent directories and reads what it finds
// there, which is a read outside the config directory that
// internal/confined exists to prevent; it takes .yaml and .json files only
// as explicit file arguments, not as the files of a package directory; and
// the files here are already read, bounded and confined. A build.Instance
// given the parsed syntax is what load itself hands to the evaluator.
func buildUser(ctx *cue.Context, files []File, maxNodes int) (cue.Value, Errors) {
	var errs Errors
	inst := build.NewContext().NewInstance("", nil)
	first := ""
	nodes := 0
	for _, f := range files {
		// One rule for every kind of file: a leading UTF-8 byte order
		// mark is dropped, and bytes that are not UTF-8 are an error at
		// their line, the file named once.
		f.Data = bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))
		if e := checkUTF8(f); e != nil {
			errs = append(errs, e)
			continue
		}
		var af *ast.File
		var err error
		switch filepath.Ext(f.Name) {
		case ".cue":
			af, err = parser.ParseFile(f.Name, f.Data, parser.ParseComments)
			if err != nil {
				errs = append(errs, fromCUEList(err, f.Name)...)
				continue
			}
			paths, ierrs := checkImports(af, f.Name)
			if len(ierrs) > 0 {
				errs = append(errs, ierrs...)
				continue
			}
			if err := importSchema(inst, paths); err != nil {
				errs = append(errs, &Error{File: f.Name, Msg: "importing the schema: " + err.Error()})
				continue
			}
			pkg := af.PackageName()
			if first == "" {
				first = f.Name
				inst.PkgName = pkg
			} else if pkg != inst.PkgName {
				msg := fmt.Sprintf("package %q differs from package %q of %s; the CUE files of a config directory form one package", pkg, inst.PkgName, first)
				switch {
				case pkg == "":
					msg = fmt.Sprintf("no package clause, while %s is package %q; the CUE files of a config directory form one package: begin this file with package %s", first, inst.PkgName, inst.PkgName)
				case inst.PkgName == "":
					msg = fmt.Sprintf("package %q, while %s has no package clause; the CUE files of a config directory form one package: give both the same package clause", pkg, first)
				}
				// A missing clause is at the file's start, where it goes.
				e := &Error{File: f.Name, Line: 1, Column: 1, Msg: msg}
				for _, d := range af.Decls {
					if pc, ok := d.(*ast.Package); ok && pc.Pos().IsValid() {
						e.Line, e.Column = pc.Pos().Line(), pc.Pos().Column()
					}
				}
				errs = append(errs, e)
				continue
			}
		case ".yaml", ".yml":
			if es := checkYAML(f.Name, f.Data); len(es) > 0 {
				errs = append(errs, es...)
				continue
			}
			af, err = extractYAML(f.Name, f.Data)
			if err != nil {
				errs = append(errs, decodeErrors(err, f.Name)...)
				continue
			}
		case ".json":
			expr, err := cuejson.Extract(f.Name, f.Data)
			if err != nil {
				errs = append(errs, fromCUEList(err, f.Name)...)
				continue
			}
			// An object's fields become the file's declarations, as a YAML
			// mapping's do: embedded as one struct, the object's opening
			// brace (1:1) would be a position of every conflict in it.
			if st, ok := expr.(*ast.StructLit); ok {
				af = &ast.File{Filename: f.Name, Decls: st.Elts}
			} else {
				af = &ast.File{Filename: f.Name, Decls: []ast.Decl{&ast.EmbedDecl{Expr: expr}}}
			}
		default:
			errs = append(errs, &Error{File: f.Name, Msg: "not a .cue, .yaml or .json file"})
			continue
		}
		if ext := filepath.Ext(f.Name); ext != ".cue" {
			if e := notConfig(af, f.Name); e != nil {
				errs = append(errs, e)
				continue
			}
			if ext == ".json" {
				if es := duplicateKeys(af, f.Name); len(es) > 0 {
					errs = append(errs, es...)
					continue
				}
			}
		}
		nodes += countNodes(af)
		if lim := maxNodes; nodes > lim {
			return cue.Value{}, append(errs, &Error{File: f.Name, Msg: fmt.Sprintf("the config holds more than %d syntax nodes by this file, the limit of a config; raise it with --max-config-nodes", lim)})
		}
		if err := inst.AddSyntax(af); err != nil {
			errs = append(errs, fromCUEList(err, f.Name)...)
		}
	}
	if len(errs) > 0 {
		return cue.Value{}, errs
	}
	return ctx.BuildInstance(inst), nil
}

// notConfig is an error when a YAML or JSON file is plainly not stowage
// config: Kubernetes objects (top-level apiVersion and kind, as rendered
// output or a manifest has) or several documents or a list. Such a file is
// refused by name before unification, whose conflict message would quote
// its values (a rendered Secret's data among them).
func notConfig(af *ast.File, file string) *Error {
	at := func(p token.Pos, msg string) *Error {
		e := &Error{File: file, Msg: msg}
		if p.IsValid() {
			setPos(e, p)
		}
		return e
	}
	decls := af.Decls
	seen := map[string]token.Pos{}
	for i := 0; i < len(decls); i++ {
		switch d := decls[i].(type) {
		case *ast.Field:
			name, _, err := ast.LabelName(d.Label)
			if err == nil && (name == "apiVersion" || name == "kind") {
				seen[name] = d.Pos()
			}
			if err == nil && name == "mediaType" {
				if e := sigstoreFile(d, file); e != nil {
					return e
				}
			}
		case *ast.EmbedDecl:
			switch x := d.Expr.(type) {
			case *ast.ListLit:
				p := x.Pos()
				for _, el := range x.Elts {
					if q := firstPos(el); !p.IsValid() && q.IsValid() {
						p = q
					}
				}
				return at(p, "holds several YAML documents or a list, not stowage config (one mapping of images, environments, profiles); is it rendered output or a manifest? keep those outside the config directory")
			case *ast.StructLit: // a JSON file's one object
				decls = append(decls, x.Elts...)
			}
		}
	}
	if len(seen) == 2 {
		return at(seen["apiVersion"], "holds a Kubernetes object (apiVersion and kind), not stowage config; is it rendered output or a manifest? keep those outside the config directory")
	}
	return nil
}

// sigstoreMediaType starts the media type of sigstore's JSON files: a
// trusted root is "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
// a bundle "application/vnd.dev.sigstore.bundle.v0.3+json".
const sigstoreMediaType = "application/vnd.dev.sigstore."

// sigstoreFile is an error at mediaType, a top-level field of file, when
// its value is a sigstore media type: the file is a trusted root (or
// another sigstore file) put directly in the config directory, where
// every .json file is read as config, and unification would report each
// of its fields as not allowed.
func sigstoreFile(mediaType *ast.Field, file string) *Error {
	lit, ok := mediaType.Value.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return nil
	}
	mt, err := literal.Unquote(lit.Value)
	if err != nil || !strings.HasPrefix(mt, sigstoreMediaType) {
		return nil
	}
	e := &Error{File: file}
	if p := mediaType.Pos(); p.IsValid() {
		setPos(e, p)
	}
	if strings.HasPrefix(mt, sigstoreMediaType+"trustedroot") {
		e.Msg = fmt.Sprintf("is a sigstore trusted root (mediaType %q), not stowage config: every .json file directly in the config directory is read as config; move it into a subdirectory and name it in the verify policy, e.g. trust/%s with verify: trustedRoot: \"trust/%s\"", mt, filepath.Base(file), filepath.Base(file))
	} else {
		e.Msg = fmt.Sprintf("is a sigstore file (mediaType %q), not stowage config: every .json file directly in the config directory is read as config; keep trust files in a subdirectory, e.g. trust/%s", mt, filepath.Base(file))
	}
	return e
}

// firstPos is the first valid position in n (its own, or its first
// field's), or an invalid one.
func firstPos(n ast.Node) token.Pos {
	if p := n.Pos(); p.IsValid() {
		return p
	}
	if st, ok := n.(*ast.StructLit); ok {
		for _, el := range st.Elts {
			if p := el.Pos(); p.IsValid() {
				return p
			}
		}
	}
	return token.NoPos
}

// checkUTF8 is an error at the first byte of f that is not UTF-8, or nil.
func checkUTF8(f File) *Error {
	if utf8.Valid(f.Data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(f.Data); {
		r, size := utf8.DecodeRune(f.Data[i:])
		if r == utf8.RuneError && size <= 1 {
			return &Error{File: f.Name, Line: line, Column: col, Msg: "not valid UTF-8 (a config file must be UTF-8 text)"}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}

// countNodes counts the syntax nodes of f.
func countNodes(f *ast.File) int {
	n := 0
	ast.Walk(f, func(ast.Node) bool { n++; return true }, nil)
	return n
}
