package initconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfig: the starter config names the flags' values as CUE strings,
// the environment after the image's last path element ("main" when that
// is no DNS label); a value that is no reference or DNS label is a
// *FlagError naming its flag.
func TestConfig(t *testing.T) {
	t.Parallel()
	cfg, err := Config(Options{Image: "ghcr.io/example/note-book:v1", Namespace: "notebooks", Profile: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`environments: "note-book": {`, `image: "ghcr.io/example/note-book:v1"`, `profiles: "prod": {`,
		`namespace: "notebooks"`, `environments: ["note-book"]`} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("the config lacks %q:\n%s", want, cfg)
		}
	}
	cfg, err = Config(Options{Image: "example.com/team/a.b:1", Namespace: "default", Profile: "default"})
	if err != nil || !strings.Contains(string(cfg), `environments: "main": {`) {
		t.Errorf("a repository that is no DNS label: %v; want the environment main:\n%s", err, cfg)
	}
	for _, tc := range []struct {
		o          Options
		flag, want string
	}{
		{Options{Image: "UPPER/Case::", Namespace: "default", Profile: "default"}, "--image", `--image "UPPER/Case::": `},
		{Options{Image: "nginx", Namespace: "Tenant_A", Profile: "default"}, "--namespace", `--namespace "Tenant_A": `},
		{Options{Image: "nginx", Namespace: "default", Profile: "a.b"}, "--profile", `--profile "a.b": `},
	} {
		_, err := Config(tc.o)
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != tc.flag || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a *FlagError starting %q", tc.o, err, tc.want)
		}
	}
}

// TestWrite: Write creates the directory with the config and an empty
// lock, and refuses a directory holding a config file, and a file, each
// without writing.
func TestWrite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new")
	files, err := Write(context.Background(), dir, []byte("package stowage\n"))
	if err != nil || len(files) != 2 || files[0] != filepath.Join(dir, ConfigFile) || files[1] != filepath.Join(dir, "stowage.lock.yaml") {
		t.Fatalf("Write: %v, %v", files, err)
	}
	if _, err := Write(context.Background(), dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "holds config.cue, stowage.lock.yaml already: init never overwrites") {
		t.Errorf("a directory with a config: %v", err)
	}
	if b, _ := os.ReadFile(files[0]); string(b) != "package stowage\n" {
		t.Errorf("a refused Write changed the config: %q", b)
	}
	if _, err := Write(context.Background(), files[0], nil); err == nil || !strings.Contains(err.Error(), "exists and is not a directory") {
		t.Errorf("a file as the directory: %v", err)
	}
}
