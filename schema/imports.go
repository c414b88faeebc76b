package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/parser"
)

// schemaImports are the import paths under which a config's CUE files may
// import the schema (as a CUE module user would, for editor completion and
// `cue vet`): the module with and without its major version, package
// stowage. The loader resolves them to the schema this binary embeds,
// whatever version a cue.mod names: stowage reads no cue.mod.
var schemaImports = []string{ModulePath + ":stowage", strings.TrimSuffix(ModulePath, "@v0") + ":stowage"}

// checkImports returns the schema import paths af's imports name and an
// error at each import that is neither the schema nor one of CUE's
// builtin packages (their paths hold no dot): a config directory is read
// alone, so no other package can be found.
func checkImports(af *ast.File, file string) ([]string, Errors) {
	var paths []string
	var errs Errors
	for spec := range af.ImportSpecs() {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue // the parser has refused it already
		}
		switch {
		case slices.Contains(schemaImports, path):
			paths = append(paths, path)
		case strings.Contains(path, "."):
			e := &Error{File: file, Msg: fmt.Sprintf("import %q: a config's CUE files may import CUE's builtin packages and stowage's schema (%s) only; stowage reads the config directory alone, never a cue.mod or another package", path, schemaImports[0])}
			setPos(e, spec.Pos())
			errs = append(errs, e)
		}
	}
	return paths, errs
}

// importSchema adds to inst, once per path, an instance of the embedded
// schema under each import path in paths.
func importSchema(inst *build.Instance, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, p := range paths {
		if inst.LookupImport(p) != nil {
			continue
		}
		// Parsed for each instance: building resolves the syntax in
		// place, so loads running at once share none.
		f, err := parser.ParseFile(SchemaFile, Source, parser.ParseComments)
		if err != nil {
			return err
		}
		child := build.NewContext().NewInstance("", nil)
		child.ImportPath = p
		child.PkgName = "stowage"
		if err := child.AddSyntax(f); err != nil {
			return err
		}
		inst.Imports = append(inst.Imports, child)
	}
	return nil
}
