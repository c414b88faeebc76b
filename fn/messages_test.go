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

// TestImageNotAString: an image or image volume reference that YAML reads
// as a number, a boolean, null or a map is an error result at its field,
// never read as an image name (`image: 42` is not docker.io/library/42).
func TestImageNotAString(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"42", "a number"},
		{"true", "a boolean"},
		{"null", "null"},
		{"{a: b}", "a map"},
	} {
		rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: stowage.dev/v1alpha1\n  kind: Stowage\n  metadata: {name: pin}\n  spec: {}\nitems:\n" + lockItem +
			"- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers: [{name: c, image: " + c.value + "}]\n    volumes: [{name: m, image: {reference: " + c.value + "}}]\n"
		got, _ := processText(t, rl)
		want := []string{
			"error: spec.containers[0].image: want a string image reference, got " + c.want,
			"error: spec.volumes[0].image.reference: want a string image reference, got " + c.want,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: results\n%s\nwant\n%s", c.value, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
