package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsEscaped: a config file whose name and content carry terminal
// escapes (a repository's merge request) is refused with a message that
// shows them as escapes: nothing reaches the terminal raw.
func TestErrorsEscaped(t *testing.T) {
	dir := t.TempDir()
	name := "bad\x1b]0;owned\x07\u202e.yaml"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("environments:\n  \"x\x1b[2J\":\n    image: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, nil, "vet", dir)
	if code != 1 || !strings.Contains(stderr, `bad\x1b]0;owned\x07\u202e.yaml`) {
		t.Errorf("exit %d, want 1 naming the file with its escapes:\n%s", code, stderr)
	}
	for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(stderr, raw) {
			t.Errorf("stderr holds %q raw:\n%q", raw, stderr)
		}
	}
}
