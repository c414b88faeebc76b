package output

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stowage/stowage/internal/render"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckPaths: every output is checked against the config directory,
// the lock and the other outputs, symbolic links resolved.
func TestCheckPaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := filepath.Join(root, "repo", "cfg")
	lock := filepath.Join(cfg, "stowage.lock.yaml")
	write(t, filepath.Join(cfg, "config.yaml"), "x: 1\n")
	write(t, lock, "lock\n")
	write(t, filepath.Join(root, "mine.md"), PRBodyMarker+"old body\n")
	write(t, filepath.Join(root, "notes.md"), "someone's notes\n")
	if err := os.Symlink(cfg, filepath.Join(root, "cfg-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "mine.md"), filepath.Join(root, "body-link.md")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	for _, tc := range []struct {
		name string
		p    Paths
		want string // "" for accepted
	}{
		{"all apart", Paths{ConfigDir: cfg, Lock: lock, RenderDir: out, PRBody: filepath.Join(root, "new.md")}, ""},
		{"a body stowage wrote", Paths{ConfigDir: cfg, Lock: lock, PRBody: filepath.Join(root, "mine.md")}, ""},
		{"a markdown body in the config directory", Paths{ConfigDir: cfg, Lock: lock, PRBody: filepath.Join(cfg, "pr.md")}, ""},
		{"render into a subdirectory of the config", Paths{ConfigDir: cfg, RenderDir: filepath.Join(cfg, "out")}, ""},
		{"render onto the config", Paths{ConfigDir: cfg, RenderDir: cfg, RenderFlag: "--render"}, "--render " + cfg + " is the config directory"},
		{"render onto the config through a link", Paths{ConfigDir: cfg, RenderDir: filepath.Join(root, "cfg-link")}, "--output-dir " + filepath.Join(root, "cfg-link") + " is the config directory"},
		{"render onto a parent of the config", Paths{ConfigDir: cfg, RenderDir: filepath.Join(root, "repo")}, "holds the config directory"},
		{"body on the lock", Paths{ConfigDir: cfg, Lock: lock, PRBody: lock}, "--pr-body " + lock + " is the lock file"},
		{"body on a config file", Paths{ConfigDir: cfg, Lock: lock, PRBody: filepath.Join(cfg, "config.yaml")}, "is a config file of " + cfg},
		{"body as a new config file", Paths{ConfigDir: cfg, Lock: lock, PRBody: filepath.Join(cfg, "pr.yaml")}, "is a config file of " + cfg},
		{"body on a config file through a link", Paths{ConfigDir: cfg, Lock: lock, PRBody: filepath.Join(root, "cfg-link", "config.yaml")}, "is a config file"},
		{"body inside the rendered directory", Paths{ConfigDir: cfg, RenderDir: out, RenderFlag: "--render", PRBody: filepath.Join(out, "body.md")}, "is inside --render " + out},
		{"body on someone's file", Paths{PRBody: filepath.Join(root, "notes.md")}, "exists and stowage did not write it"},
		{"body a symbolic link", Paths{PRBody: filepath.Join(root, "body-link.md")}, "is not a regular file"},
		{"body a directory", Paths{PRBody: filepath.Join(root, "repo")}, "is not a regular file"},
	} {
		err := CheckPaths(tc.p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestSetCommitUndo: when a later write of a Set fails, the earlier ones
// are put back: a file to its old content, a new file removed, a replaced
// directory to its old tree.
func TestSetCommitUndo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lock, body, out := filepath.Join(root, "lock"), filepath.Join(root, "body.md"), filepath.Join(root, "out")
	write(t, lock, "old lock\n")
	write(t, filepath.Join(out, "a.yaml"), "old a\n")
	var s Set
	s.File(lock, []byte("new lock\n"))
	s.File(body, []byte("new body\n"))
	s.Dir(out, map[string][]byte{"b.yaml": []byte("new b\n")}, nil)
	s.File(filepath.Join(root, "missing-dir", "x"), []byte("fails"))
	if err := s.Commit(context.Background()); err == nil {
		t.Fatal("Commit succeeded, want the last write to fail")
	}
	if b, _ := os.ReadFile(lock); string(b) != "old lock\n" {
		t.Errorf("lock = %q, want the old content", b)
	}
	if _, err := os.Stat(body); !os.IsNotExist(err) {
		t.Errorf("body exists after the undo: %v", err)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 || ents[0].Name() != "a.yaml" {
		t.Errorf("out holds %v, want only a.yaml", ents)
	}
}

// TestForeign: a directory is stowage's to replace only in the files render
// itself wrote. A file a user added and listed in the generated
// kustomization.yaml (the case that used to be deleted) is foreign, as are
// a second document, a missing label, a link and anything unlisted; the
// rendered files of a real render are not.
func TestForeign(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "records", Namespace: "pull",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "stowage"}},
		Data: map[string]string{"images.list": "a@sha256:00\n"},
	}
	objs := []render.Object{{Kind: "ConfigMap", Name: "records", Namespace: "pull", Object: cm}}
	files, err := render.Files(objs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range files {
		write(t, filepath.Join(dir, name), string(data))
	}
	if got, err := Foreign(dir); err != nil || len(got) != 0 {
		t.Fatalf("a render's own directory: foreign %q, %v; want none", got, err)
	}

	k := string(files["kustomization.yaml"]) +
		"- extra.yaml\n- twodocs.yaml\n- link.yaml\n"
	write(t, filepath.Join(dir, "kustomization.yaml"), k)
	write(t, filepath.Join(dir, "extra.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: mine\n")
	write(t, filepath.Join(dir, "twodocs.yaml"), "metadata:\n  labels:\n    app.kubernetes.io/managed-by: stowage\n---\nkind: Secret\n")
	write(t, filepath.Join(dir, "notes.txt"), "hand-written\n")
	var rendered string
	for name := range files {
		if name != "kustomization.yaml" {
			rendered = name
		}
	}
	if err := os.Symlink(filepath.Join(dir, rendered), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	got, err := Foreign(dir)
	want := []string{"extra.yaml", "link.yaml", "notes.txt", "twodocs.yaml"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("user files listed in the generated kustomization.yaml: foreign %q, %v; want %q", got, err, want)
	}

	// Without the generated header nothing is stowage's.
	write(t, filepath.Join(dir, "kustomization.yaml"), strings.TrimPrefix(k, render.GeneratedHeader))
	got, _ = Foreign(dir)
	if len(got) != len(files)+4 {
		t.Errorf("no generated header: foreign %q, want every entry", got)
	}
}

// TestCheckDirNamesTheFlag: the refusal of a directory holding foreign
// files names the option that gave it, or none for a library caller.
func TestCheckDirNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"--render":     "output directory " + dir + " holds files stowage did not write (notes.txt); --render replaces the whole directory, so give an empty directory or one that stowage rendered",
		"--output-dir": "(notes.txt); --output-dir replaces the whole directory,",
		"":             "(notes.txt); it is replaced whole, so give an empty directory",
	} {
		if err := CheckDir(dir, flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDir(%q): %v, want %q", flag, err, want)
		}
	}
	if err := CheckDir(filepath.Join(dir, "new"), "--render"); err != nil {
		t.Errorf("a missing directory: %v", err)
	}
}

// TestSetDirModes: Dir writes the files modes names with their mode, and
// an undo puts the old files back with the modes they had.
func TestSetDirModes(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
	root := t.TempDir()
	out := filepath.Join(root, "out")
	var s Set
	s.Dir(out, map[string][]byte{"secret.yaml": []byte("s\n"), "cm.yaml": []byte("c\n")}, map[string]fs.FileMode{"secret.yaml": 0o600})
	if err := s.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	modes := func() map[string]fs.FileMode {
		got := map[string]fs.FileMode{}
		ents, _ := os.ReadDir(out)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				got[e.Name()] = fi.Mode().Perm()
			}
		}
		return got
	}
	if got, want := modes(), map[string]fs.FileMode{"secret.yaml": 0o600, "cm.yaml": 0o644}; !maps.Equal(got, want) {
		t.Errorf("modes after Commit = %v, want %v", got, want)
	}
	var undo Set
	undo.Dir(out, map[string][]byte{"other.yaml": []byte("o\n")}, nil)
	undo.File(filepath.Join(root, "missing-dir", "x"), []byte("fails"))
	if err := undo.Commit(context.Background()); err == nil {
		t.Fatal("Commit succeeded, want the last write to fail")
	}
	if got, want := modes(), map[string]fs.FileMode{"secret.yaml": 0o600, "cm.yaml": 0o644}; !maps.Equal(got, want) {
		t.Errorf("modes after the undo = %v, want %v", got, want)
	}
}
