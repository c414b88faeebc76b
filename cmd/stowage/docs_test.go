package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocs: the hidden docs command writes a man page per visible command
// and the four completion scripts, the same bytes on a second run (the
// pages' date is SOURCE_DATE_EPOCH's), and refuses a directory that
// exists.
func TestDocs(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SOURCE_DATE_EPOCH": "1764583200"}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, dir := range []string{a, b} {
		if _, stderr, code := runCLI(t, env, "docs", dir); code != 0 {
			t.Fatalf("docs %s: exit %d: %s", dir, code, stderr)
		}
	}
	for _, f := range []string{"man/stowage.1", "man/stowage-render.1", "man/stowage-push.1", "man/stowage-cmp-generate.1",
		"completions/stowage.bash", "completions/_stowage", "completions/stowage.fish", "completions/stowage.ps1"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil || len(x) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(x))
			continue
		}
		y, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", f)
		}
	}
	if _, err := os.Stat(filepath.Join(a, "man", "stowage-docs.1")); err == nil {
		t.Error("the hidden docs command has a man page")
	}
	page, _ := os.ReadFile(filepath.Join(a, "man", "stowage.1"))
	if !strings.Contains(string(page), `"Dec 2025"`) {
		t.Errorf("stowage.1 is not dated from SOURCE_DATE_EPOCH:\n%.200s", page)
	}
	if _, stderr, code := runCLI(t, env, "docs", a); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("docs into an existing directory: exit %d, %s", code, stderr)
	}
}
