package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildHelper builds the real static helper into dir and returns its path.
func buildHelper(t *testing.T, dir string) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the helper runs in Linux containers")
	}
	bin := filepath.Join(dir, "stowage-helper")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestInstallThenRun builds the real helper, installs it with its own
// "install" command into an empty directory (as the first init container
// does into the emptyDir) and runs the copy with "pulled".
func TestInstallThenRun(t *testing.T) {
	dir := t.TempDir()
	bin := buildHelper(t, dir)
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

// TestInstallCopiesArgv0 runs the helper with an argv[0] naming another
// file: install copies that file, so it follows argv[0] and does not read
// /proc/self/exe (which would name the real binary).
func TestInstallCopiesArgv0(t *testing.T) {
	dir := t.TempDir()
	bin := buildHelper(t, dir)
	marker := filepath.Join(dir, "marker")
	if err := os.WriteFile(marker, []byte("not the binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "copy")
	cmd := exec.Command(bin, "install", dest)
	cmd.Args[0] = marker
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "not the binary\n" {
		t.Errorf("install copied %d bytes of something else, want the file argv[0] names", len(got))
	}
}

// TestInstallWithoutProc runs install in a private mount namespace with an
// empty tmpfs over /proc, as in a container without /proc. It needs
// unshare(1) and the right to create a mount namespace (root); otherwise it
// skips.
func TestInstallWithoutProc(t *testing.T) {
	dir := t.TempDir()
	bin := buildHelper(t, dir)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) not found (util-linux); the no-/proc case is not exercised")
	}
	dest := filepath.Join(dir, "copy")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The shell runs before /proc is hidden; exec replaces it with the helper.
	script := `mount -t tmpfs none /proc && test ! -e /proc/self && exec "$0" install "$1"`
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--propagation", "private", "sh", "-c", script, bin, dest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "Operation not permitted") {
			t.Skipf("cannot create a mount namespace here (%s); the no-/proc case is not exercised", strings.TrimSpace(string(out)))
		}
		t.Fatalf("install without /proc: %v\n%s", err, out)
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copy (%d bytes) differs from the binary (%d bytes)", len(got), len(want))
	}
}

// TestWaitExitsOnSignal starts the real helper in wait mode, checks that
// it is still running, sends SIGTERM (then, in a second run, SIGINT) and
// expects exit code 0.
func TestWaitExitsOnSignal(t *testing.T) {
	bin := buildHelper(t, t.TempDir())
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "wait")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Fatalf("wait returned before any signal: %v\n%s", err, stderr.String())
			case <-time.After(300 * time.Millisecond):
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("wait after %v: %v\n%s", sig, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("wait did not exit within 30s of %v", sig)
			}
		})
	}
}

// TestWaitReturnsOnContext checks the in-process path: wait returns exit
// code 0 when its context ends.
func TestWaitReturnsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"stowage-helper", "wait"}, nil, nil) }()
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d, want 0", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return after its context ended")
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"stowage-helper"}, {"stowage-helper", "install"}, {"stowage-helper", "bogus", "x"},
		{"stowage-helper", "wait", "x"}, {"stowage-helper", "pulled"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
		if !strings.Contains(errb.String(), "usage:") {
			t.Errorf("run(%q) stderr = %q, want the usage line", args, errb.String())
		}
	}
}

func TestInstallEmptyArgv0(t *testing.T) {
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"", "install", filepath.Join(t.TempDir(), "x")}, nil, &errb); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(errb.String(), "argv[0] is empty") {
		t.Errorf("stderr = %q", errb.String())
	}
}
