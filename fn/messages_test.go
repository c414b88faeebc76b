package fn

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// processText runs the function on a ResourceList and returns its results
// as one "severity: field: message" line each, and what it wrote to
// Processor.Stderr.
func processText(t *testing.T, rl string) ([]string, string) {
	t.Helper()
	var out, stderr bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: strings.NewReader(rl), Writer: &out, KeepReaderAnnotations: true}
	p := &Processor{Getenv: func(string) (string, bool) { return "", false }, Stderr: &stderr}
	rlist := &framework.ResourceList{}
	_ = framework.Execute(framework.ResourceListProcessorFunc(func(l *framework.ResourceList) error {
		rlist = l
		return p.Process(l)
	}), rw)
	var lines []string
	for _, r := range rlist.Results {
		f := ""
		if r.Field != nil {
			f = r.Field.Path
		}
		lines = append(lines, string(r.Severity)+": "+f+": "+r.Message)
	}
	return lines, stderr.String()
}

const lockItem = `- apiVersion: stowage.dev/v1alpha1
  kind: ImageLock
  metadata:
    name: stowage-lock
    annotations: {config.kubernetes.io/local-config: "true"}
  spec: {images: []}
`

// TestDecodeFailureNamed: a functionConfig of a known kind that kyaml
// cannot decode is reported as such, with kyaml's reason, never as "not a
// kind stowage reads".
func TestDecodeFailureNamed(t *testing.T) {
	for _, spec := range []string{"{x: .nan}", "{? [a] : b}"} {
		rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: stowage.dev/v1alpha1\n  kind: Stowage\n  metadata: {name: pin}\n  spec: " + spec + "\nitems:\n" + lockItem
		got, _ := processText(t, rl)
		if len(got) != 1 || !strings.HasPrefix(got[0], "error: : functionConfig Stowage pin cannot be decoded (") || !strings.HasSuffix(got[0], "): keep to plain YAML data (string keys; no .nan, .inf or binary values)") {
			t.Errorf("spec %s: results %q", spec, got)
		}
	}
}

// TestMissingLockDoesNotMaskConfig: without an ImageLock item, the
// functionConfig's own problems are reported beside the missing lock, for
// both kinds.
func TestMissingLockDoesNotMaskConfig(t *testing.T) {
	noLock := "error: : no stowage.dev/v1alpha1/ImageLock in the input: list stowage.lock.yaml in the kustomization's resources (it is local-config, so kustomize does not emit it)"
	for _, c := range []struct{ fc, want string }{
		{"  apiVersion: org.apache.submarine/v1\n  kind: JupyterImagePuller\n  metadata: {name: pin}\n  spec: {images: [{name: x}]}\n",
			`error: spec.images[0].image: environment "x" has no image`},
		{"  apiVersion: stowage.dev/v1alpha1\n  kind: Stowage\n  metadata: {name: pin}\n  spec: {profiles: {p: {pullers: [{namespace: n}]}}}\n",
			"error: spec.profiles.p.pullers[0].name: name is required and missing: write name: followed by a string"},
	} {
		got, stderr := processText(t, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n"+c.fc+"items: []\n")
		if len(got) != 2 || got[0] != noLock || got[1] != c.want {
			t.Errorf("results %q\nwant %q and %q", got, noLock, c.want)
		}
		if strings.Count(stderr, "\n") != 2 {
			t.Errorf("stderr:\n%s\nwant one line per result", stderr)
		}
	}
}
