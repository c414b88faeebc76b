package render_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnePipeline: outside this package and internal/render, no Go file
// of the module (tests aside) calls internal/render's Render: every
// command and the function render through render.Render. And
// internal/source, which the commands load DIR with, does not import
// cobra.
func TestOnePipeline(t *testing.T) {
	t.Parallel()
	const engine = "github.com/stowage/stowage/internal/render"
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Other modules (apitest, e2e, …) and fixtures are not the
			// module's code.
			if p != ".." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || fileExists(filepath.Join(p, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(rel, "render/") || strings.HasPrefix(rel, "internal/render/") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		name := ""
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(rel, "internal/source/") && strings.HasPrefix(ip, "github.com/spf13/cobra") {
				t.Errorf("%s imports %s: internal/source takes plain options, not cobra", rel, ip)
			}
			if ip == engine {
				name = path.Base(ip)
				if im.Name != nil {
					name = im.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		checked++
		full, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(full, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && sel.Sel.Name == "Render" {
					t.Errorf("%s: calls internal/render's Render; render through the public render.Render", fset.Position(sel.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no file importing internal/render was found: the walk looked in the wrong place")
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
