package fn

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// FuzzResourceList: any bytes as the function's stdin: no panic; the same
// output and the same error twice; with no error, the output is a
// ResourceList kyaml reads back.
func FuzzResourceList(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*", "input.yaml"))
	for _, in := range inputs {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [{}]\n"))
	run := func(in []byte) ([]byte, string) {
		var out bytes.Buffer
		rw := &kio.ByteReadWriter{Reader: bytes.NewReader(in), Writer: &out, KeepReaderAnnotations: true}
		p := &Processor{Getenv: func(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }}
		err := framework.Execute(p, rw)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		return out.Bytes(), msg
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out1, err1 := run(in)
		out2, err2 := run(in)
		if !bytes.Equal(out1, out2) || err1 != err2 {
			t.Fatalf("two runs differ:\n%s\n%s\n---\n%s\n%s", out1, err1, out2, err2)
		}
		if err1 == "" && len(out1) > 0 {
			if _, err := (&kio.ByteReader{Reader: bytes.NewReader(out1)}).Read(); err != nil {
				t.Fatalf("output does not read back: %v\n%s", err, out1)
			}
		}
	})
}
