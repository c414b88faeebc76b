package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadDirLinks: a config file that is a symbolic link inside the
// directory is followed (its settings count); one leading outside, a FIFO
// and a directory named like a config file are refused with a message,
// never skipped silently, and the message quotes nothing of the target.
func TestReadDirLinks(t *testing.T) {
	const canary = "CANARY-outside-config-5521"
	mk := func(t *testing.T) (root, dir string) {
		root = t.TempDir()
		dir = filepath.Join(root, "cfg")
		if err := os.MkdirAll(filepath.Join(dir, "parts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "outside.yaml"), []byte("images: x: reference: \""+canary+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "parts", "images.yaml"), []byte("images: busybox: reference: busybox:1.31.1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return root, dir
	}
	t.Run("inside", func(t *testing.T) {
		_, dir := mk(t)
		if err := os.Symlink("parts/images.yaml", filepath.Join(dir, "images.yaml")); err != nil {
			t.Fatal(err)
		}
		files, err := ReadDir(dir)
		if err != nil || len(files) != 1 || !strings.Contains(string(files[0].Data), "busybox:1.31.1") {
			t.Fatalf("got %v, %v; want the linked file read", files, err)
		}
	})
	for name, make := range map[string]func(dir string) error{
		"leads outside the directory": func(dir string) error {
			return os.Symlink("../outside.yaml", filepath.Join(dir, "site.yaml"))
		},
		"is not a regular file (a FIFO)": func(dir string) error { return mkfifo(filepath.Join(dir, "site.yaml"), 0o600) },
		"is not a regular file (a directory)": func(dir string) error {
			return os.Mkdir(filepath.Join(dir, "site.yaml"), 0o755)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, dir := mk(t)
			if err := make(dir); err != nil {
				t.Fatal(err)
			}
			_, err := ReadDir(dir)
			want := "config file " + filepath.Join(dir, "site.yaml") + ": " + name
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v, want an error starting %q", err, want)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("error quotes the target: %v", err)
			}
		})
	}
}
