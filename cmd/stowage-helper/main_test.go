package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestInstallThenRun builds the real helper, installs it with its own
// "install" command into an empty directory (as the first init container
// does into the emptyDir) and runs the copy with "pulled".
func TestInstallThenRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the helper runs in Linux containers")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "stowage-helper")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(shared, "stowage-helper")
	if out, err := exec.Command(bin, "install", dest).CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o555 {
		t.Errorf("mode = %v, want 0555", fi.Mode().Perm())
	}
	out, err := exec.Command(dest, "pulled", "busybox:1.31.1@sha256:abc").Output()
	if err != nil {
		t.Fatalf("pulled: %v", err)
	}
	if want := "pulled busybox:1.31.1@sha256:abc\n"; string(out) != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	if ents, _ := os.ReadDir(shared); len(ents) != 1 {
		t.Errorf("shared dir holds %d entries, want only the binary (no temp files)", len(ents))
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"install"}, {"bogus", "x"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
}
