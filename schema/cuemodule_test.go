package schema

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
)

// writeModule writes the embedded schema module to a directory of its own.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stowage-schema")
	err := fs.WalkDir(Module, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := Module.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCUEModuleImport: a user's CUE module that imports the schema module
// ("stowage.dev/schema@v0:stowage", replaced by a local directory in
// cue.mod/local-module.cue, so no registry is asked) loads with CUE's own
// loader and vets: a config that follows #Config is accepted, one with a
// field #Config does not have is refused, naming the field.
func TestCUEModuleImport(t *testing.T) {
	t.Setenv("CUE_REGISTRY", "none") // any registry request fails
	schemaDir := writeModule(t)
	user := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(user, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(user, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cue.mod/module.cue", "module: \"example.com/site@v0\"\nlanguage: version: \"v0.17.0\"\n")
	write("cue.mod/local-module.cue", "deps: \""+ModulePath+"\": replaceWith: \""+filepath.ToSlash(schemaDir)+"\"\n")
	vet := func(images string) error {
		write("site.cue", `package site

import "stowage.dev/schema@v0:stowage"

config: stowage.#Config & {
	images: app: `+images+`
	profiles: lab: {
		namespace: "prepull"
		pullers: [{name: "tools", namespace: "prepull", images: ["app"]}]
	}
}
`)
		insts := load.Instances([]string{"."}, &load.Config{Dir: user})
		if len(insts) != 1 {
			t.Fatalf("%d instances", len(insts))
		}
		if err := insts[0].Err; err != nil {
			return err
		}
		v := cuecontext.New().BuildInstance(insts[0])
		if err := v.Err(); err != nil {
			return err
		}
		return v.LookupPath(cue.ParsePath("config")).Validate(cue.Concrete(true))
	}
	if err := vet(`{reference: "busybox:1.36"}`); err != nil {
		t.Fatalf("a valid config: %s", cueerrors.Details(err, nil))
	}
	err := vet(`{reference: "busybox:1.36", colour: "red"}`)
	if err == nil || !strings.Contains(err.Error(), "colour: field not allowed") {
		t.Errorf("an unknown field: %v; want colour: field not allowed", err)
	}
}
