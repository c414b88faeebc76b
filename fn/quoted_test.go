package fn

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// TestQuotedFunctionConfigKind: a functionConfig written in JSON style
// ("apiVersion": "stowage.dev/v1alpha1") is the same kind as a plain one;
// pin-only gives the same output either way.
func TestQuotedFunctionConfigKind(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "pin-only", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plain := "functionConfig:\n  apiVersion: stowage.dev/v1alpha1\n  kind: Stowage\n  metadata:\n    name: pin\n  spec: {}\n"
	if !bytes.Contains(in, []byte(plain)) {
		t.Fatalf("testdata/pin-only/input.yaml no longer holds %q", plain)
	}
	quoted := bytes.Replace(in, []byte(plain), []byte(`functionConfig: {"apiVersion": "stowage.dev/v1alpha1", "kind": "Stowage", "metadata": {"name": "pin"}, "spec": {}}`+"\n"), 1)
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(quoted), Writer: &out, KeepReaderAnnotations: true}
	if err := framework.Execute(&Processor{}, rw); err != nil {
		t.Fatalf("Execute: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "severity: error") || !strings.Contains(out.String(), "@sha256:") {
		t.Errorf("quoted functionConfig: want pinned items and no error result, got\n%s", out.String())
	}
}
