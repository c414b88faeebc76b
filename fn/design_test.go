package fn

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubmarineDesignVerbatim feeds the JupyterImagePuller of the Submarine
// design exactly as the design writes it (testdata/submarine-design/
// jupyterimagepuller.yaml, copied from the design's text) as the
// functionConfig, and compares the whole ResourceList the function writes
// with output.yaml: its three problems (the hidden email written as a list,
// the inline password, the name jupyter used twice) are each an error at
// their own field, the port written as a path is a warning and the status
// block an info result, all in one run.
func TestSubmarineDesignVerbatim(t *testing.T) {
	dir := filepath.Join("testdata", "submarine-design")
	design, err := os.ReadFile(filepath.Join(dir, "jupyterimagepuller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	in.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n")
	for _, line := range strings.Split(strings.TrimRight(string(design), "\n"), "\n") {
		in.WriteString("  " + line + "\n")
	}
	in.WriteString(designLock)
	path := filepath.Join(t.TempDir(), "input.yaml")
	if err := os.WriteFile(path, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := runFn(t, path)
	if err == nil {
		t.Error("the function succeeded on the design's JupyterImagePuller; want error results")
	}
	golden := filepath.Join(dir, "output.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./fn -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got ---\n%s", golden, got)
	}
}

// designLock is an ImageLock item as kustomize passes it.
const designLock = `items:
- apiVersion: stowage.dev/v1alpha1
  kind: ImageLock
  metadata:
    name: stowage-lock
    annotations:
      config.kubernetes.io/local-config: "true"
      internal.config.kubernetes.io/path: stowage.lock.yaml
      internal.config.kubernetes.io/index: "0"
  spec:
    images:
    - name: docker.io/library/busybox:1.31.1
      reference: busybox:1.31.1
      digest: sha256:ea2528a21fc71247fdb25ff45a25fbe9abcbc635326ea364467f4a08abfbc9ba
      kind: manifest
      size: 2390
`
