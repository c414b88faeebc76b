package schema

import (
	"errors"
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
// cue.mod/local-module.cue, so no registry is asked) is also a stowage
// config directory: CUE's own loader vets it, and Load reads it with the
// import resolved to the embedded schema. A config that follows #Config is
// accepted by both; one with a field #Config does not have is refused by
// both, by Load at the field's file, line and path.
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
	site := filepath.Join(user, "site.cue")
	config := func(images string) {
		write("site.cue", `package site

import "stowage.dev/schema@v0:stowage"

stowage.#Config & {
	images: app: `+images+`
	profiles: lab: pullers: [{name: "tools", namespace: "prepull", images: ["app"]}]
}
`)
	}
	cueVet := func() error {
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
		return v.Validate(cue.Concrete(true))
	}
	config(`{reference: "busybox:1.36"}`)
	if err := cueVet(); err != nil {
		t.Fatalf("a valid config, cue: %s", cueerrors.Details(err, nil))
	}
	cfg, err := Load(user)
	if err != nil {
		t.Fatalf("a valid config, Load: %v", err)
	}
	if got := cfg.Images["app"].Reference; got != "busybox:1.36" || len(cfg.Profiles["lab"].Pullers) != 1 {
		t.Errorf("Load: images.app.reference %q, profiles %+v", got, cfg.Profiles)
	}

	config(`{reference: "busybox:1.36", colour: "red"}`)
	if err := cueVet(); err == nil || !strings.Contains(err.Error(), "colour: field not allowed") {
		t.Errorf("an unknown field, cue: %v; want colour: field not allowed", err)
	}
	_, err = Load(user)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].File != site || es[0].Line != 6 || es[0].Path != "images.app.colour" ||
		!strings.HasPrefix(es[0].Msg, "field not allowed") {
		t.Errorf("an unknown field, Load: %v; want %s:6 images.app.colour: field not allowed", err, site)
	}
}

// TestImportsRefused: a CUE file importing a package that is neither
// builtin nor the schema is refused at the import, naming it, before
// anything is evaluated (a config directory is read alone: no cue.mod, no
// other package); a builtin package is fine.
func TestImportsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "c.cue")
	src := "package site\n\nimport (\n\t\"strings\"\n\t\"example.com/x\"\n)\n\nimages: app: reference: strings.ToLower(x.ref)\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].File != file || es[0].Line != 5 || es[0].Column != 2 ||
		!strings.HasPrefix(es[0].Msg, `import "example.com/x": a config's CUE files may import CUE's builtin packages and stowage's schema (stowage.dev/schema@v0:stowage) only`) {
		t.Errorf("Load: %v", err)
	}
}
