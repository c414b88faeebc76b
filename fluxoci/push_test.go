package fluxoci

import (
	"github.com/stowage/stowage/internal/testing/testbin"

	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/testing/registrytest"
)

// repoRoot is the main module's root, above this module.
const repoRoot = ".."

// buildStowage returns the stowage binary of the main module the tests
// share (testbin.Stowage: make test's, or built once).
func buildStowage(t *testing.T) string {
	t.Helper()
	return testbin.Stowage(t)
}

// run runs the binary with a 2-minute limit and returns stdout, failing
// the test on a non-zero exit.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("stowage %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.String()
}

// readTree returns every regular file beneath dir, by slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return errors.New(p + ": not a regular file")
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestFluxPullsPushedProfile pushes the Flux example's profile with
// `stowage push` to a real docker-registry on 127.0.0.1, and pulls it
// with Flux's own client (fluxcd/pkg/oci Client.Pull, what flux pull
// artifact and source-controller's OCIRepository use to fetch and
// extract): the annotations are the ones given, the manifest has Flux's
// config and content media types, the extracted files are byte for byte
// what `stowage render -o` writes, and a second push of the same render
// gives the same digest.
func TestFluxPullsPushedProfile(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	bin := buildStowage(t)
	config := filepath.Join(repoRoot, "examples", "gitops-flux", "config")
	url := "oci://" + reg.Host + "/platform/notebook-prepull:v1"
	const (
		source   = "https://git.example.org/platform/gitops.git"
		revision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
		created  = "2026-12-01T10:00:00Z"
	)
	push := func(tag string) string {
		return strings.TrimSpace(run(t, bin, "push", config, strings.TrimSuffix(url, ":v1")+":"+tag,
			"--insecure-registry", reg.Host, "--source", source, "--revision", revision, "--created", created, "--quiet"))
	}
	pushed := push("v1")
	ref, err := name.NewDigest(pushed, name.Insecure)
	if err != nil {
		t.Fatalf("push printed %q, want REGISTRY/REPOSITORY:TAG@sha256:…: %v", pushed, err)
	}
	if again := push("v2"); !strings.HasSuffix(again, "@"+ref.DigestStr()) {
		t.Errorf("the same render pushed again has another digest: %s, then %s", pushed, again)
	}

	client := oci.NewClient([]crane.Option{crane.Insecure})
	out := t.TempDir()
	meta, err := client.Pull(context.Background(), strings.TrimPrefix(url, "oci://"), out)
	if err != nil {
		t.Fatalf("Flux's client could not pull %s: %v", url, err)
	}
	if meta.Source != source || meta.Revision != revision || meta.Created != created {
		t.Errorf("annotations: source %q revision %q created %q, want %q %q %q", meta.Source, meta.Revision, meta.Created, source, revision, created)
	}
	if want := reg.Host + "/platform/notebook-prepull@" + ref.DigestStr(); meta.Digest != want {
		t.Errorf("Flux pulled %s, want %s", meta.Digest, want)
	}

	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != oci.CanonicalConfigMediaType ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != oci.CanonicalContentMediaType {
		t.Errorf("manifest %s, config %s, layers %v: want Flux's layout (%s config, one %s layer)",
			m.MediaType, m.Config.MediaType, m.Layers, oci.CanonicalConfigMediaType, oci.CanonicalContentMediaType)
	}

	rendered := filepath.Join(t.TempDir(), "prepull")
	run(t, bin, "render", config, "--output-dir", rendered)
	want, got := readTree(t, rendered), readTree(t, out)
	if len(got) != len(want) {
		t.Errorf("the artifact holds %d files, render -o writes %d", len(got), len(want))
	}
	for n, b := range want {
		if !bytes.Equal(got[n], b) {
			t.Errorf("%s: the artifact's file differs from render -o's", n)
		}
	}
	t.Logf("pushed %s: %d files, the same as render -o", pushed, len(got))
}
