package atomicfile

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// cancelAfter is a context that is done from its n+1-th Err call on: a
// signal arriving after n steps of a write.
type cancelAfter struct {
	context.Context
	n, calls int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls > c.n {
		return context.Canceled
	}
	return nil
}

func (c *cancelAfter) Done() <-chan struct{} { return nil }
func (c *cancelAfter) Deadline() (time.Time, bool) {
	return time.Time{}, false
}

// TestReplaceDirContextCancelled cancels ReplaceDirContext at every step
// before the swap: dir keeps its old files and nothing is staged beside
// it. With no cancellation the new tree is in place.
func TestReplaceDirContextCancelled(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{"a.yaml": []byte("a\n"), "b/c.yaml": []byte("c\n"), "kustomization.yaml": []byte("k\n")}
	for n := 0; ; n++ {
		parent := t.TempDir()
		dir := filepath.Join(parent, "out")
		if err := ReplaceDir(dir, map[string][]byte{"old.yaml": []byte("old\n")}); err != nil {
			t.Fatal(err)
		}
		before := tree(t, dir)
		ctx := &cancelAfter{Context: context.Background(), n: n}
		err := ReplaceDirContext(ctx, dir, files)
		if err == nil {
			if n <= len(files) {
				t.Fatalf("cancelled after %d steps, but the write went through", n)
			}
			if got := tree(t, dir); len(got) != len(files) {
				t.Fatalf("after the write, %s holds %v", dir, got)
			}
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after %d steps: %v, want context.Canceled", n, err)
		}
		if got := tree(t, dir); !maps.Equal(before, got) {
			t.Errorf("cancelled after %d steps: %s changed to %v", n, dir, got)
		}
		if names := entries(t, parent); !slices.Equal(names, []string{"out"}) {
			t.Errorf("cancelled after %d steps: %s holds %v, want only out", n, parent, names)
		}
		if n > 10 {
			t.Fatal("never completes")
		}
	}
}

// TestWriteFileContextCancelled: a cancelled WriteFileContext, before the
// temporary file or before the rename, leaves the old file and no
// temporary file.
func TestWriteFileContextCancelled(t *testing.T) {
	t.Parallel()
	for n := range 2 {
		dir := t.TempDir()
		path := filepath.Join(dir, "stowage.lock.yaml")
		if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := WriteFileContext(&cancelAfter{Context: context.Background(), n: n}, path, []byte("new\n"), 0o644)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after %d steps: %v, want context.Canceled", n, err)
		}
		if b, _ := os.ReadFile(path); string(b) != "old\n" {
			t.Errorf("cancelled after %d steps: the file holds %q", n, b)
		}
		if names := entries(t, dir); !slices.Equal(names, []string{"stowage.lock.yaml"}) {
			t.Errorf("cancelled after %d steps: %s holds %v", n, dir, names)
		}
	}
}
