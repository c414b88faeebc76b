package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runStdin runs the command line in-process with stdin.
func runStdin(t *testing.T, stdin []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &stdout, &stderr, envFrom(nil))
	return stdout.Bytes(), stderr.String(), code
}

// TestImagesStdin: `images from-list -` reads the list from standard
// input and writes what the file gives (the header naming -), a bad line
// is named -:LINE, a list over the bound is refused; `from-chart
// --values -` renders with the values standard input carries as with the
// same file, and - twice is a usage error.
func TestImagesStdin(t *testing.T) {
	t.Parallel()
	td := filepath.Join(repoRoot, "internal", "imageset", "testdata")
	list := filepath.Join(td, "kubespray-images.list")
	want, _, code := runCLI(t, nil, "images", "from-list", list)
	if code != 0 {
		t.Fatalf("from-list FILE: exit %d", code)
	}
	got, stderr, code := runStdin(t, readFile(t, list), "images", "from-list", "-")
	if code != 0 || string(got) != strings.Replace(string(want), "Images from "+list+",", "Images from -,", 1) {
		t.Errorf("from-list -: exit %d, %s\n%s\nwant\n%s", code, stderr, got, want)
	}
	if _, stderr, code := runStdin(t, readFile(t, filepath.Join(td, "bad.list")), "images", "from-list", "-"); code != 1 || !strings.Contains(stderr, `-:4: image "registry.k8s.io/Pause:3.9"`) {
		t.Errorf("a bad list on stdin: exit %d, %s", code, stderr)
	}
	big := bytes.Repeat([]byte("# padding\n"), 1<<19)
	if _, stderr, code := runStdin(t, big, "images", "from-list", "-"); code != 1 || !strings.Contains(stderr, "list of images -: is more than the 4194304 bytes") {
		t.Errorf("5 MiB on stdin: exit %d, %s", code, stderr)
	}

	chart := filepath.Join(td, "gpu-operator")
	values := filepath.Join(td, "kernel-535.yaml")
	want, stderr, code = runCLI(t, nil, "images", "from-chart", chart, "-f", values, "-o", "cue")
	if code != 0 || !strings.Contains(string(want), "535.161.08") {
		t.Fatalf("from-chart -f FILE: exit %d, %s\n%s", code, stderr, want)
	}
	got, stderr, code = runStdin(t, readFile(t, values), "images", "from-chart", chart, "--values", "-", "-o", "cue")
	if code != 0 || string(got) != string(want) {
		t.Errorf("from-chart --values -: exit %d, %s\n%s\nwant\n%s", code, stderr, got, want)
	}
	if _, stderr, code := runStdin(t, nil, "images", "from-chart", chart, "-f", "-", "-f", "-"); code != 2 || !strings.Contains(stderr, "--values - given twice") {
		t.Errorf("--values - twice: exit %d, %s", code, stderr)
	}
}

// TestImagesFromChartCapabilities: --kube-version reaches the render (in
// its child process too): a version that does not parse fails naming it.
func TestImagesFromChartCapabilities(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(repoRoot, "internal", "imageset", "testdata", "operator-chart")
	if _, err := os.Stat(chart); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, nil, "images", "from-chart", chart, "--kube-version", "one"); code != 1 || !strings.Contains(stderr, `--kube-version "one"`) {
		t.Errorf("--kube-version one: exit %d, %s", code, stderr)
	}
}
