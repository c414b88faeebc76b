package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// renderedRefs are the distinct pinned references ("host/path:tag@sha256:…")
// that `stowage render DIR` writes: every image: field and every
// images.list line.
func renderedRefs(t *testing.T, env map[string]string, dir string) []string {
	t.Helper()
	stdout, stderr, code := runCLI(t, env, "render", dir)
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	re := regexp.MustCompile(`[a-z0-9.:_-]+/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?@sha256:[0-9a-f]{64}`)
	seen := map[string]bool{}
	for _, m := range re.FindAllString(string(stdout), -1) {
		seen[m] = true
	}
	var out []string
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// TestMirrorBundleLandsWhereRenderPoints is the offline-site journey with
// site.registries: lock, bundle (--to oci:), push from the bundle with no
// --to and no config, and every reference render names exists at the site
// with its pinned digest (digest and tag). A --to that would put the
// images elsewhere is refused, naming the image; the bundle's index.json
// records each image's site repository.
func TestMirrorBundleLandsWhereRenderPoints(t *testing.T) {
	t.Parallel()
	s := newMirrorSetup(t, nil)
	siteYAML := fmt.Sprintf("site:\n  registry: %q\n  registries:\n    %q: %q\n", s.site.Host+"/unused", s.src.Host, s.site.Host+"/mapped")
	if err := os.WriteFile(filepath.Join(s.dir, "site.yaml"), []byte(siteYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	refs := renderedRefs(t, s.env, s.dir)
	if len(refs) < 6 {
		t.Fatalf("render names %d references: %v", len(refs), refs)
	}
	for _, r := range refs {
		if !strings.HasPrefix(r, s.site.Host+"/mapped/") || strings.Contains(r, "127.0.0.1_") {
			t.Fatalf("render names %s, not under the mapped prefix", r)
		}
	}
	b := filepath.Join(t.TempDir(), "bundle")
	stdout, stderr, code := runCLI(t, s.env, "mirror", s.dir, "--to", "oci:"+b, "--insecure-registry", s.src.Host)
	noCanary(t, "bundle", stdout, stderr)
	if code != 0 {
		t.Fatalf("bundle: exit %d\n%s", code, stderr)
	}
	// The bundle says where each image goes.
	var idx struct {
		Annotations map[string]string `json:"annotations"`
		Manifests   []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(b, "index.json")), &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Annotations["dev.stowage.bundle"] != "1" || len(idx.Manifests) < 6 {
		t.Errorf("index.json: %+v", idx)
	}
	for _, m := range idx.Manifests {
		if !strings.HasPrefix(m.Annotations["dev.stowage.site"], s.site.Host+"/mapped/") {
			t.Errorf("%s records site %q", m.Annotations["org.opencontainers.image.ref.name"], m.Annotations["dev.stowage.site"])
		}
	}
	// The upstream is not needed any more.
	if err := s.src.Stop(); err != nil {
		t.Fatal(err)
	}

	// A --to under which render does not look is refused.
	_, stderr, code = runCLI(t, nil, "mirror", "--from", "oci:"+b, "--to", s.site.Host+"/elsewhere", "--insecure-registry", s.site.Host)
	if code != 1 || !strings.Contains(stderr, "render points at "+s.site.Host+"/mapped/") {
		t.Errorf("--to elsewhere: exit %d\n%s", code, stderr)
	}
	// No --to: where the bundle says, which is where render points.
	stdout, stderr, code = runCLI(t, nil, "mirror", "--from", "oci:"+b, "--insecure-registry", s.site.Host)
	if code != 0 {
		t.Fatalf("push: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(string(stdout), " 0 already there") {
		t.Errorf("push says %q", stdout)
	}
	for _, r := range refs {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Head(ref); err != nil {
			t.Errorf("render names %s; the site lacks it: %v", r, err)
		}
		base, digest, _ := strings.Cut(r, "@")
		if tagged, err := name.NewTag(base, name.Insecure); err == nil && strings.Contains(base[strings.LastIndex(base, "/"):], ":") {
			if d, err := remote.Head(tagged); err != nil || d.Digest.String() != digest {
				// A child pinned alone has no tag at the site.
				if !strings.Contains(r, "armonly") {
					t.Errorf("%s: tag at the site: %v %v", r, d, err)
				}
			}
		}
	}
	// A rerun finds everything there.
	stdout, stderr, code = runCLI(t, nil, "mirror", "--from", "oci:"+b, "--insecure-registry", s.site.Host)
	if code != 0 || !strings.Contains(string(stdout), "0 images copied") {
		t.Errorf("second push: exit %d %s\n%s", code, stdout, stderr)
	}
}

// TestMirrorDeltaBundleCarriesOnlyNewBlobs: the site holds a first bundle's
// images; one image is rebuilt with a 604-byte change on top of its
// layers and bumped. The delta bundle (--have the first bundle's lock)
// carries that image's new layer, config and manifest, not its 350 kB of
// unchanged layers, and says so; pushed with no --to, every reference render
// names is at the site.
func TestMirrorDeltaBundleCarriesOnlyNewBlobs(t *testing.T) {
	t.Parallel()
	s := newMirrorSetup(t, nil)
	siteYAML := fmt.Sprintf("site:\n  registry: %q\n  registries:\n    %q: %q\n", s.site.Host+"/unused", s.src.Host, s.site.Host+"/mapped")
	if err := os.WriteFile(filepath.Join(s.dir, "site.yaml"), []byte(siteYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(t.TempDir(), "first")
	if _, stderr, code := runCLI(t, s.env, "mirror", s.dir, "--to", "oci:"+first, "--insecure-registry", s.src.Host); code != 0 {
		t.Fatalf("bundle: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "mirror", "--from", "oci:"+first, "--insecure-registry", s.site.Host); code != 0 {
		t.Fatalf("push: exit %d\n%s", code, stderr)
	}
	// app-a again: the same layers and a 604-byte one on top.
	push := mustResolver(t, registry.WithInsecure(s.src.Host))
	alice := &authn.AuthConfig{Username: "alice", Password: canary}
	fixed := registrytest.Image(t, registrytest.Layer("base layer", 300_000), registrytest.Layer("app-a", 50_000), registrytest.Layer("the fix", 604))
	if err := registrytest.Write(context.Background(), push, registrytest.Ref(t, s.src.Host+"/team/app-a:v1"), alice, fixed, nil); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, s.env, "bump", s.dir, "--insecure-registry", s.src.Host); code != 0 && code != 3 {
		t.Fatalf("bump: exit %d\n%s", code, stderr)
	}
	delta := filepath.Join(t.TempDir(), "delta")
	stdout, stderr, code := runCLI(t, s.env, "mirror", s.dir, "--to", "oci:"+delta, "--have", filepath.Join(first, "stowage.lock.yaml"), "--insecure-registry", s.src.Host)
	noCanary(t, "delta", stdout, stderr)
	if code != 0 {
		t.Fatalf("delta: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(string(stdout), "2 blobs (350.00kB) left out of the delta bundle") {
		t.Errorf("the delta run says %q", stdout)
	}
	var blobBytes int64
	for p, b := range treeFiles(t, delta) {
		if strings.HasPrefix(p, "blobs/") {
			blobBytes += int64(len(b))
		}
	}
	if blobBytes > 5_000 {
		t.Errorf("the delta bundle carries %d bytes of blobs for a 604-byte change", blobBytes)
	}
	if err := s.src.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, nil, "mirror", "--from", "oci:"+delta, "--insecure-registry", s.site.Host); code != 0 {
		t.Fatalf("push delta: exit %d\n%s", code, stderr)
	}
	for _, r := range renderedRefs(t, s.env, s.dir) {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Head(ref); err != nil {
			t.Errorf("render names %s; the site lacks it: %v", r, err)
		}
	}
}
