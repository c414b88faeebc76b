package atomicfile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteFileInConfined: WriteFileIn writes a file inside its root with
// the mode given and no temporary file left, and refuses a path whose
// directory is a link leading out of the root or that climbs out with
// "..", leaving the outside file as it was; a link at the file's own name
// is replaced, not followed.
func TestWriteFileInConfined(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(root, "own"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "stowage.lock.yaml")
	if err := os.WriteFile(victim, []byte("tenant\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "outside"), filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(root, "own", "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := WriteFileIn(ctx, root, filepath.Join("own", "stowage.lock.yaml"), []byte("new\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "own", "stowage.lock.yaml")); err != nil || string(b) != "new\n" {
		t.Fatalf("written: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "own", "stowage.lock.yaml")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode: %v, %v", fi.Mode(), err)
	}
	for _, rel := range []string{filepath.Join("sub", "stowage.lock.yaml"), filepath.Join("..", "outside", "stowage.lock.yaml")} {
		err := WriteFileIn(ctx, root, rel, []byte("evil\n"), 0o644)
		if err == nil || !strings.Contains(err.Error(), "write "+filepath.Join(root, rel)) {
			t.Errorf("WriteFileIn %s: %v, want a refusal naming it", rel, err)
		}
	}
	if err := WriteFileIn(ctx, root, filepath.Join("own", "linked.yaml"), []byte("replaced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "own", "linked.yaml")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link at the file's name was not replaced by a file: %v, %v", fi, err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "tenant\n" {
		t.Fatalf("the outside file changed: %q, %v", b, err)
	}
	if got := entries(t, filepath.Join(root, "own")); !slices.Equal(got, []string{"linked.yaml", "stowage.lock.yaml"}) {
		t.Errorf("own/ holds %v", got)
	}
}

// TestWriteFileInLinkSwapped: a directory swapped for a link out of the
// root after WriteFileIn opened it does not redirect the write: the file
// lands in the directory that was opened, and the outside file keeps its
// bytes.
func TestWriteFileInLinkSwapped(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "stowage.lock.yaml")
	if err := os.WriteFile(victim, []byte("tenant\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inRootOpened = func() {
		if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "held")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
			t.Error(err)
		}
	}
	defer func() { inRootOpened = nil }()
	if err := WriteFileIn(context.Background(), root, filepath.Join("sub", "stowage.lock.yaml"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "tenant\n" {
		t.Fatalf("the outside file changed: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "held", "stowage.lock.yaml")); err != nil || string(b) != "new\n" {
		t.Fatalf("the opened directory holds %q, %v", b, err)
	}
}
