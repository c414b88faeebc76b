package fn

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// TestReportEscapes: the result lines the function writes to stderr (which
// kustomize and Argo CD's repo server show) carry what the functionConfig
// says, a namespace with a terminal escape and a bidi control here, only
// as escapes.
func TestReportEscapes(t *testing.T) {
	in := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: stowage.dev/v1alpha1, kind: ImageLock, metadata: {name: l, annotations: {config.kubernetes.io/local-config: \"true\"}}, spec: {images: []}}\nfunctionConfig:\n" +
		"  apiVersion: stowage.dev/v1alpha1\n  kind: Stowage\n  metadata: {name: n}\n  spec:\n" +
		"    environments: {e: {image: \"r.example/a:1\"}}\n" +
		"    profiles: {p: {pullers: [{name: x, namespace: \"ns\\e]0;owned\\a\\u202e\", environments: [e]}]}}\n"
	var out, stderr bytes.Buffer
	p := &Processor{Getenv: func(string) (string, bool) { return "", false }, Stderr: &stderr}
	if err := framework.Execute(p, &kio.ByteReadWriter{Reader: strings.NewReader(in), Writer: &out}); err == nil {
		t.Fatalf("the function accepted a bad namespace:\n%s", out.String())
	}
	got := stderr.String()
	if !strings.Contains(got, `ns\x1b]0;owned\a\u202e`) {
		t.Errorf("stderr does not show the namespace escaped:\n%s", got)
	}
	for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(got, raw) {
			t.Errorf("stderr holds %q raw:\n%q", raw, got)
		}
	}
}
