package fluxoci

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestFluxPullsArtifactAtSite is the offline site's journey for Flux: the
// Flux example's config, given a site registry (site.cue), is locked
// against stand-ins of its images on a source docker-registry; stowage
// push writes its artifact there; stowage mirror --artifact carries the
// artifact with the images, once straight to a registry (--to) and once
// through a bundle (--to oci:, then --from oci: to a second
// docker-registry, the site, where the config's site field sends it).
// At each destination Flux's own client pulls the artifact by digest from
// the repository the site rule gives (the one mirror --dry-run lists) and
// extracts files equal byte for byte to render -o, whose images point at
// the site registry. With cosign (internal/testing/cosigntest; CI requires it) the
// artifact is signed at the source first, as for an OCIRepository with
// spec.verify.provider cosign, and cosign verify --key succeeds against
// both copies: mirror carries the signature with the artifact.
func TestFluxPullsArtifactAtSite(t *testing.T) {
	src := registrytest.Start(t, registrytest.Options{})
	siteReg := registrytest.Start(t, registrytest.Options{})
	bin := buildStowage(t)

	ex, err := registrytest.LoadExample(filepath.Join(repoRoot, "examples", "gitops-flux", "config"))
	if err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	if err := ex.Write(config); err != nil {
		t.Fatal(err)
	}
	lockFile, err := os.ReadFile(filepath.Join(repoRoot, "examples", "gitops-flux", "config", ex.Lock))
	if err != nil {
		t.Fatal(err)
	}
	sitePrefix := siteReg.Host + "/mirror"
	files := map[string]string{
		ex.Lock:    string(lockFile),
		"site.cue": "package stowage\n\nsite: registry: \"" + sitePrefix + "\"\n",
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(config, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The images, as the committed lock pins them (deterministic
	// stand-ins), at the source registry under --mirror paths.
	p, err := registrytest.SeedFor(ex.Config, src.Host)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := registry.New(append(p.Options(), registry.WithInsecure(src.Host))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.SeedStandIns(context.Background(), seed, nil, p.Refs, 4); err != nil {
		t.Fatal(err)
	}
	fromSource := append([]string{"--insecure-registry", src.Host, "--quiet"}, p.Flags()...)

	const created = "2026-12-01T10:00:00Z"
	pushed := strings.TrimSpace(run(t, bin, "push", config, "oci://"+src.Host+"/platform/notebook-prepull:v1",
		"--insecure-registry", src.Host, "--created", created, "--quiet"))
	ref, err := name.NewDigest(pushed, name.Insecure)
	if err != nil {
		t.Fatalf("push printed %q, want REGISTRY/REPOSITORY:TAG@sha256:…: %v", pushed, err)
	}
	// Signed with a key, offline (no transparency log), in cosign's tag
	// scheme, the signature Flux's cosign verification reads.
	var verify func(repo name.Repository)
	if cs := optionalCosign(t); cs != nil {
		key, pub := cs.KeyPair("flux")
		insecure := []string{"--allow-http-registry", "--allow-insecure-registry"}
		cs.Must(append([]string{"sign", "--key", key, "--tlog-upload=false", "--use-signing-config=false", "--new-bundle-format=false", "--yes"}, append(insecure, pushed)...)...)
		verify = func(repo name.Repository) {
			t.Helper()
			cs.Must(append([]string{"verify", "--key", pub, "--insecure-ignore-tlog"}, append(insecure, repo.Name()+"@"+ref.DigestStr())...)...)
			t.Logf("cosign verify --key: %s@%s is signed", repo, ref.DigestStr())
		}
	}
	rendered := filepath.Join(t.TempDir(), "prepull")
	run(t, bin, "render", config, "--output-dir", rendered)
	want := readTree(t, rendered)
	if !strings.Contains(string(bytes.Join(mapValues(want), nil)), sitePrefix+"/") {
		t.Fatalf("render -o names no image at the site registry %s", sitePrefix)
	}

	// pull checks what Flux's client extracts from repo at the pushed
	// digest.
	pull := func(repo name.Repository) {
		t.Helper()
		out := t.TempDir()
		at := repo.Name() + "@" + ref.DigestStr()
		meta, err := oci.NewClient([]crane.Option{crane.Insecure}).Pull(context.Background(), at, out)
		if err != nil {
			t.Fatalf("Flux's client could not pull %s: %v", at, err)
		}
		if meta.Digest != at || meta.Created != created {
			t.Errorf("pulled %s created %s, want %s created %s", meta.Digest, meta.Created, at, created)
		}
		got := readTree(t, out)
		if len(got) != len(want) {
			t.Errorf("%s holds %d files, render -o writes %d", at, len(got), len(want))
		}
		for n, b := range want {
			if !bytes.Equal(got[n], b) {
				t.Errorf("%s: %s differs from render -o's", at, n)
			}
		}
		if verify != nil {
			verify(repo)
		}
	}
	siteRepo := func(prefix string) name.Repository {
		t.Helper()
		r, err := site.Mapping{Default: prefix}.Repository(ref.Context())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Straight to a registry: --to PREFIX, the artifact at
	// PREFIX/<source registry>/<repository>.
	direct := siteReg.Host + "/direct"
	run(t, bin, append([]string{"mirror", config, "--to", direct, "--artifact", pushed, "--insecure-registry", siteReg.Host}, fromSource...)...)
	pull(siteRepo(direct))

	// Through a bundle, to where the config's site sends it.
	bundle := filepath.Join(t.TempDir(), "bundle")
	run(t, bin, append([]string{"mirror", config, "--to", "oci:" + bundle, "--artifact", pushed}, fromSource...)...)
	var plan struct {
		Images []struct {
			Name        string `json:"name"`
			Digest      string `json:"digest"`
			Destination string `json:"destination"`
		} `json:"images"`
	}
	out := run(t, bin, "mirror", "--from", "oci:"+bundle, "--insecure-registry", siteReg.Host, "--dry-run", "-o", "json")
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("mirror --dry-run -o json: %v\n%s", err, out)
	}
	atSite := siteRepo(sitePrefix)
	listed := false
	for _, im := range plan.Images {
		if im.Digest == ref.DigestStr() {
			listed = true
			if !strings.HasPrefix(im.Destination, atSite.Name()+":") && !strings.HasPrefix(im.Destination, atSite.Name()+"@") {
				t.Errorf("the bundle's plan sends the artifact %s to %s, want %s", im.Name, im.Destination, atSite)
			}
		}
	}
	if !listed {
		t.Fatalf("the bundle's plan does not list the artifact %s:\n%s", pushed, out)
	}
	run(t, bin, "mirror", "--from", "oci:"+bundle, "--insecure-registry", siteReg.Host, "--quiet")
	pull(atSite)
	t.Logf("%s carried to %s (direct) and %s (bundle), %d files each", pushed, siteRepo(direct), atSite, len(want))
}

// optionalCosign is cosigntest.Lookup's cosign, or nil (with one logged
// line) when there is none and cosigntest.RequireEnv is unset: the
// journey then runs unsigned.
func optionalCosign(t *testing.T) *cosigntest.Cosign {
	t.Helper()
	if os.Getenv(cosigntest.RequireEnv) == "" {
		_, err := exec.LookPath("cosign")
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		if _, serr := os.Stat(filepath.Join(strings.TrimSpace(string(gopath)), "bin", "cosign")); err != nil && serr != nil {
			t.Log("no cosign: the artifact goes unsigned (go install " + cosigntest.Module + "@" + cosigntest.Version + " to sign and verify it)")
			return nil
		}
	}
	return cosigntest.Lookup(t)
}

func mapValues(m map[string][]byte) [][]byte {
	var out [][]byte
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
