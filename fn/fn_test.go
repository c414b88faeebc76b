package fn

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/stowage/stowage/internal/testing/kubecheck"
)

var update = flag.Bool("update", false, "rewrite fn/testdata/*/output.yaml from the current output")

// testEnv is the environment the function sees in the golden tests.
var testEnv = map[string]string{"STOWAGE_HARBOR_PASSWORD": "fn-test-harbor-password", "AWS_SECRET_ACCESS_KEY": "fn-test-aws-canary"}

// TestGoldenResourceLists runs the function on every
// testdata/<case>/input.yaml ResourceList and compares the ResourceList it
// writes (items and results) with output.yaml byte for byte; the exit
// status must match the presence of error results. -update rewrites them.
func TestGoldenResourceLists(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "input.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no test cases: %v", err)
	}
	for _, in := range inputs {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got, err := runFn(t, in)
			golden := filepath.Join(dir, "output.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, rerr := os.ReadFile(golden)
			if rerr != nil {
				t.Fatalf("%v (run go test ./fn -update)", rerr)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s:\n--- got ---\n%s", golden, got)
			}
			hasError := strings.Contains(string(got), "severity: error")
			if (err != nil) != hasError {
				t.Errorf("Execute error = %v, but error results present = %v", err, hasError)
			}
			// Whatever the function renders passes the Kubernetes checks.
			if !hasError {
				checkItems(t, got)
			}
		})
	}
}

// runFn runs the function on a ResourceList file as kustomize would.
func runFn(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(in), Writer: &out, KeepReaderAnnotations: true}
	p := &Processor{Getenv: func(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }}
	err = framework.Execute(p, rw)
	return out.Bytes(), err
}

// checkItems runs the strict Kubernetes checks over the rendered items of a
// ResourceList (the kinds stowage renders).
func checkItems(t *testing.T, rl []byte) {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(rl), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.GetAnnotations()["stowage.dev/images-hash"] == "" && n.GetLabels()["app.kubernetes.io/managed-by"] != "stowage" {
			continue
		}
		s, err := n.String()
		if err != nil {
			t.Fatal(err)
		}
		if err := kubecheck.Check([]byte(s)); err != nil {
			t.Errorf("rendered item fails the Kubernetes checks: %v", err)
		}
	}
}
