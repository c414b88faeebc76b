package apitest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitecturePage: docs/architecture.md's package map lists every
// directory of the tree that holds a Go package (outside testdata and
// hidden directories), and names no directory that holds none.
func TestArchitecturePage(t *testing.T) {
	root := ".."
	var pkgs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(pkgs, rel) {
				pkgs = append(pkgs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	var listed []string
	for _, m := range row.FindAllStringSubmatch(string(page), -1) {
		listed = append(listed, m[1])
	}
	for _, p := range pkgs {
		if !slices.Contains(listed, p) {
			t.Errorf("docs/architecture.md: package %s is missing from the package map", p)
		}
	}
	for _, l := range listed {
		if !slices.Contains(pkgs, l) {
			t.Errorf("docs/architecture.md: the package map names %s, which holds no Go package", l)
		}
	}
	if len(listed) < 10 {
		t.Errorf("the package map lists %d packages; the table was not read", len(listed))
	}
}
