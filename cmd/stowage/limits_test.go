package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// TestBinaryBoundsComputingConfig: the real binary renders a config of
// data in one process and still bounds CUE that computes in its child: a
// string doubled towards 4 GiB ends with exit 1 and the memory limit's
// message at the file, nothing on stdout.
func TestBinaryBoundsComputingConfig(t *testing.T) {
	t.Parallel()
	bin := testbin.Stowage(t)
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package stowage\n_s0: \"0123456789abcdef\"\n")
	for i := 1; i <= 28; i++ {
		b.WriteString("_s" + strconv.Itoa(i) + ": _s" + strconv.Itoa(i-1) + " + _s" + strconv.Itoa(i-1) + "\n")
	}
	b.WriteString("images: x: reference: \"busybox:\\(len(_s28))\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"ns\", images: [\"x\"]}]\n")
	if err := os.WriteFile(filepath.Join(dir, "double.cue"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "render", dir, "--max-config-memory", "268435456")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	want := "stowage: " + filepath.Join(dir, "double.cue") + ": evaluating the config took more than 268435456 bytes of memory, the limit of a config; raise it with --max-config-memory\n"
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("render of the doubling: %v, stdout %d bytes, stderr:\n%s\nwant exit 1 and:\n%s", err, stdout.Len(), stderr.String(), want)
	}
}
