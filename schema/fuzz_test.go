package schema

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

// fuzzExts are the file kinds the loader reads, chosen by two bits.
var fuzzExts = []string{".yaml", ".cue", ".json", ".yml"}

// FuzzLoadFiles loads one or two config files of any bytes, as .yaml, .cue,
// .json or .yml (kinds: bits 0-1 the first file's extension, bits 2-3 the
// second's, bit 4 allows literal passwords). The loader must not panic and
// must return either a config and no error, or Errors: at least one, each
// naming a file of the config (with a line when it names a position), and
// the same Errors on a second load. Seeds: ../internal/render's TestWriteSeedCorpus
// writes the field cases and examples into testdata/fuzz/FuzzLoadFiles.
func FuzzLoadFiles(f *testing.F) {
	for _, dir := range []string{"testdata/valid/mixed", "testdata/invalid/many-errors"} {
		files, err := ReadDir(dir)
		if err != nil {
			f.Fatal(err)
		}
		var a, b []byte
		var kinds uint8
		for i, file := range files[:min(2, len(files))] {
			ext := indexOf(fuzzExts, filepath.Ext(file.Name))
			if i == 0 {
				a, kinds = file.Data, uint8(ext)
			} else {
				b, kinds = file.Data, kinds|uint8(ext)<<2
			}
		}
		f.Add(a, b, kinds)
	}
	f.Fuzz(func(t *testing.T, a, b []byte, kinds uint8) {
		files := []File{{Name: "config/a" + fuzzExts[kinds&3], Data: a}}
		if len(b) > 0 {
			files = append(files, File{Name: "config/b" + fuzzExts[(kinds>>2)&3], Data: b})
		}
		opts := Options{AllowLiteralPasswords: kinds&16 != 0}
		cfg, err := LoadFiles("config", files, opts)
		checkLoad(t, files, cfg, err)
		cfg2, err2 := LoadFiles("config", files, opts)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two loads differ:\n%v\n---\n%v", err, err2)
		}
		if err == nil && len(cfg.Profiles) != len(cfg2.Profiles) {
			t.Fatalf("two loads differ in profiles")
		}
	})
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return 0
}

// checkLoad checks the outcome of one load of files.
func checkLoad(t *testing.T, files []File, cfg *v1alpha1.Config, err error) {
	t.Helper()
	if err == nil {
		if cfg == nil {
			t.Fatal("no config and no error")
		}
		if len(cfg.Profiles) == 0 {
			t.Fatal("a config without profiles was accepted")
		}
		for _, n := range cfg.ProfileNames() {
			if _, _, err := cfg.Profile(n); err != nil {
				t.Fatalf("profile %q: %v", n, err)
			}
		}
		return
	}
	if cfg != nil {
		t.Fatalf("a config and an error: %v", err)
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %T is not schema.Errors: %v", err, err)
	}
	if len(errs) == 0 {
		t.Fatal("empty Errors")
	}
	names := map[string]bool{}
	for _, f := range files {
		names[f.Name] = true
	}
	for _, e := range errs {
		if e == nil {
			t.Fatal("nil *Error in Errors")
		}
		if !names[e.File] {
			t.Fatalf("error not located in a config file (file %q): %v", e.File, e)
		}
		if e.Column > 0 && e.Line == 0 {
			t.Fatalf("a column without a line: %v", e)
		}
		if strings.TrimSpace(e.Msg) == "" {
			t.Fatalf("error without a message: %#v", e)
		}
	}
}
