package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFnReportsOnce: stowage fn writes each problem to stderr once, as
// its file:line: field: message line, not again in the framework's
// "[error] …" block; the exit code is still 1.
func TestFnReportsOnce(t *testing.T) {
	t.Parallel()
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: org.apache.submarine/v1\n  kind: JupyterImagePuller\n  metadata: {name: pin}\n  spec: {images: [{name: x}]}\nitems: []\n"
	var stdout, stderr bytes.Buffer
	code := run([]string{"fn"}, strings.NewReader(rl), &stdout, &stderr, envFrom(nil))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, msg := range []string{`spec.images[0].image: environment "x" has no image`, "no stowage.dev/v1alpha1/ImageLock in the input"} {
		if n := strings.Count(stderr.String(), msg); n != 1 {
			t.Errorf("%q %d times on stderr, want once:\n%s", msg, n, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "[error]") {
		t.Errorf("stderr holds the framework's block:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "results:") {
		t.Errorf("stdout holds no results:\n%s", stdout.String())
	}
}
