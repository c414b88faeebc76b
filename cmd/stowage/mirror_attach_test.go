package main

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"

	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestMirrorCarriesAttachments: a signature of the locked index and an
// SBOM of one of its children (cosign's tag scheme) are in the plan
// (-o json: kind, subject, bytes), copied by the run and said so, left
// out with --no-attachments; a rerun finds the image present and asks
// nothing more about it.
func TestMirrorCarriesAttachments(t *testing.T) {
	t.Parallel()
	s := newMirrorSetup(t, nil)
	repo, err := name.NewRepository(s.src.Host+"/lib/multi", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	auth := remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: "alice", Password: canary}))
	idx, err := remote.Index(repo.Tag("1.0"), auth)
	if err != nil {
		t.Fatal(err)
	}
	hIdx, _ := idx.Digest()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	child := im.Manifests[1].Digest
	tags := map[string]v1.Hash{}
	for _, a := range []struct {
		subject v1.Hash
		suffix  string
	}{{hIdx, ".sig"}, {child, ".sbom"}} {
		img := registrytest.Image(t, static.NewLayer([]byte("attached to "+a.subject.String()), "application/vnd.dev.cosign.simplesigning.v1+json"))
		tag := strings.Replace(a.subject.String(), ":", "-", 1) + a.suffix
		if err := remote.Write(repo.Tag(tag), img, auth); err != nil {
			t.Fatal(err)
		}
		tags[tag], _ = img.Digest()
	}
	to := []string{"--to", s.proxy.Host + "/site", "--insecure-registry", s.src.Host, "--insecure-registry", s.proxy.Host}

	rep := s.dryRun(t, to...)
	if len(rep.Attachments) != 2 {
		t.Fatalf("plan lists %d attachments, want 2: %+v", len(rep.Attachments), rep.Attachments)
	}
	for _, a := range rep.Attachments {
		if want, ok := tags[a.Tag]; !ok || a.Digest != want.String() || a.Present || a.Bytes <= 0 || !strings.HasSuffix(a.Image, "lib/multi:1.0") {
			t.Errorf("plan attachment %+v: want one of the tags %v, missing, with bytes", a, tags)
		}
		if (a.Kind == "sig") != (a.Subject == hIdx.String()) {
			t.Errorf("plan attachment %+v: the signature is the index's, the SBOM the child's", a)
		}
	}
	if rep.AttachmentBytes <= 0 || rep.AttachmentBytes > rep.Bytes {
		t.Errorf("plan: attachment bytes %d of %d", rep.AttachmentBytes, rep.Bytes)
	}
	if bare := s.dryRun(t, append(to, "--no-attachments")...); len(bare.Attachments) != 0 || bare.Bytes >= rep.Bytes {
		t.Errorf("--no-attachments: %d attachments, %d bytes (with them %d)", len(bare.Attachments), bare.Bytes, rep.Bytes)
	}

	stdout, stderr, code := runCLI(t, s.env, append([]string{"mirror", s.dir, "--quiet"}, to...)...)
	if code != 0 {
		t.Fatalf("mirror: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(string(stdout), "attachments (signatures, attestations, SBOMs, referrers): 2 copied, 0 already there; 2 verified") {
		t.Errorf("mirror output:\n%s", stdout)
	}
	dst, err := (site.Mapping{Default: s.site.Host + "/site"}).Repository(repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range tags {
		d, err := remote.Head(dst.Tag(tag))
		if err != nil || d.Digest != want {
			t.Errorf("%s at the site: %v %v, want %s", tag, d, err, want)
		}
	}
	stdout, stderr, code = runCLI(t, s.env, append([]string{"mirror", s.dir, "--quiet"}, to...)...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(string(stdout), "0 images copied") || strings.Contains(string(stdout), "attachments") {
		t.Errorf("rerun output:\n%s", stdout)
	}
}
