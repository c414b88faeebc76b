package fn

import (
	"bytes"
	"os"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// BenchmarkProcess runs the function in-process on the render case of
// testdata: the function's own cost inside a kustomize build, without
// process start-up.
func BenchmarkProcess(b *testing.B) {
	in, err := os.ReadFile("testdata/stowage-render/input.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p := &Processor{Getenv: func(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }}
	for b.Loop() {
		var out bytes.Buffer
		rw := &kio.ByteReadWriter{Reader: bytes.NewReader(in), Writer: &out, KeepReaderAnnotations: true}
		if err := framework.Execute(p, rw); err != nil {
			b.Fatal(err)
		}
	}
}
