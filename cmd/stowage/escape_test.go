package main

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/mirror"
)

// TestErrorsEscaped: a config file whose name and content carry terminal
// escapes (a repository's merge request) is refused with a message that
// shows them as escapes: nothing reaches the terminal raw.
func TestErrorsEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := "bad\x1b]0;owned\x07\u202e.yaml"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("environments:\n  \"x\x1b[2J\":\n    image: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, nil, "vet", dir)
	if code != 1 || !strings.Contains(stderr, `bad\x1b]0;owned\x07\u202e.yaml`) {
		t.Errorf("exit %d, want 1 naming the file with its escapes:\n%s", code, stderr)
	}
	for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(stderr, raw) {
			t.Errorf("stderr holds %q raw:\n%q", raw, stderr)
		}
	}
}

// TestMirrorPlanEscapesBundleText: a bundle (an OCI layout a repository or
// a courier hands over) whose image's written reference annotation
// carries an OSC title sequence, a C1 CSI and a bidi override: `mirror
// --from --dry-run` shows them as escapes in the plan table, and -o json
// as \u escapes; nothing reaches the terminal raw.
func TestMirrorPlanEscapesBundleText(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	h := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	p, err := layout.Write(dir, mutate.Annotations(empty.Index, map[string]string{mirror.AnnotationBundle: mirror.BundleVersion}).(v1.ImageIndex))
	if err != nil {
		t.Fatal(err)
	}
	written := "team/app:1\x1b]0;pwned\x07\u009b31m\u202etxt"
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		mirror.AnnotationRefName:   "registry.example/team/app:1",
		mirror.AnnotationReference: written,
		mirror.AnnotationTag:       "1",
	})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{}
	l.Put(lock.Entry{Name: "registry.example/team/app:1", Reference: "registry.example/team/app:1", Digest: d.String(), Kind: lock.KindManifest})
	writeFile(t, filepath.Join(dir, mirror.BundleLock), l.Marshal())
	// The reference annotation is not a reference to its lock key: the
	// bundle is refused, the annotation shown with its escapes.
	for _, format := range []string{"text", "json"} {
		stdout, stderr, code := runCLI(t, nil, "mirror", "--from", "oci:"+dir, "--to", h+"/site", "--insecure-registry", h, "--dry-run", "-o", format)
		out := string(stdout) + stderr
		if code != 1 {
			t.Fatalf("%s: exit %d, want 1\n%s", format, code, out)
		}
		for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if strings.Contains(out, raw) {
				t.Errorf("%s: %q raw in:\n%q", format, raw, out)
			}
		}
		if want := `dev.stowage.reference "team/app:1\x1b]0;pwned\a\u009b31m\u202etxt" is not a reference to it`; !strings.Contains(out, want) {
			t.Errorf("%s: want %s in:\n%s", format, want, out)
		}
	}
}
