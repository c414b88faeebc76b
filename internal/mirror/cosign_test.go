package mirror

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// spdx is a small SPDX 2.3 document, the predicate of the attestation and
// the SBOM attached.
const spdx = `{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT","name":"multi","documentNamespace":"https://example.invalid/spdx/multi","creationInfo":{"created":"2026-01-01T00:00:00Z","creators":["Tool: stowage-test"]},"packages":[{"name":"multi","SPDXID":"SPDXRef-Package","downloadLocation":"NOASSERTION"}]}`

// TestCosignSignaturesSurviveTheAirGap signs a multi-arch index and its
// children on a docker-registry (CNCF distribution 2.8: no Referrers API)
// with the real cosign — a signature of the index and of the amd64 child
// (cosign's tag scheme), an SPDX attestation of the arm64 child, an SBOM
// attached to the index, and a signature of the arm64 child as an OCI 1.1
// referrer (a Sigstore bundle, listed by the referrers tag-schema index)
// — then mirrors the index directly to one site registry and through a
// bundle to another, and checks, with no network beyond 127.0.0.1 and no
// transparency log: cosign verify --key and verify-attestation succeed
// against each site's copy; cosign tree lists the same artifacts at the
// source and at both sites; and the two sites hold the same digests.
func TestCosignSignaturesSurviveTheAirGap(t *testing.T) {
	cs := cosigntest.Lookup(t)
	src := registrytest.Start(t, registrytest.Options{})
	siteA := registrytest.Start(t, registrytest.Options{})
	siteB := registrytest.Start(t, registrytest.Options{})
	ctx := context.Background()

	// The image: an index of two platforms.
	repo, err := name.NewRepository(src.Host+"/lib/multi", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	amd := registrytest.Image(t, registrytest.Layer("base", 20000), registrytest.Layer("amd64", 3000))
	arm := registrytest.Image(t, registrytest.Layer("base", 20000), registrytest.Layer("arm64", 3100))
	idx := registrytest.Index(amd, arm)
	if err := remote.WriteIndex(repo.Tag("1.0"), idx); err != nil {
		t.Fatal(err)
	}
	hIdx, hAmd, hArm := registrytest.Digest(t, idx), registrytest.Digest(t, amd), registrytest.Digest(t, arm)
	at := func(r name.Repository, h v1.Hash) string { return r.Name() + "@" + h.String() }

	// Sign, attest and attach with the real cosign, offline.
	key, pub := cs.KeyPair("release")
	predicate := filepath.Join(cs.Dir, "sbom.spdx.json")
	if err := os.WriteFile(predicate, []byte(spdx), 0o644); err != nil {
		t.Fatal(err)
	}
	offline := []string{"--key", key, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--allow-insecure-registry", "--yes"}
	legacy := append([]string{"--new-bundle-format=false"}, offline...)
	cs.Must(append(append([]string{"sign"}, legacy...), at(repo, hIdx))...)
	cs.Must(append(append([]string{"sign"}, legacy...), at(repo, hAmd))...)
	cs.Must(append(append([]string{"attest", "--predicate", predicate, "--type", "spdxjson"}, legacy...), at(repo, hArm))...)
	cs.Must("attach", "sbom", "--sbom", predicate, "--type", "spdx", "--allow-http-registry", "--allow-insecure-registry", at(repo, hIdx))
	cs.Must(append(append([]string{"sign", "--new-bundle-format=true"}, offline...), at(repo, hArm))...)

	r, err := registry.New(registry.WithInsecure(src.Host, siteA.Host, siteB.Host), registry.WithKeychain(authn.NewMultiKeychain()))
	if err != nil {
		t.Fatal(err)
	}
	images := []Image{{Name: repo.Name() + ":1.0", Source: repo, Tag: "1.0", Digest: hIdx}}
	mapA, mapB := site.Mapping{Default: siteA.Host + "/site"}, site.Mapping{Default: siteB.Host + "/site"}

	// Direct to site A.
	m, err := New(WithResolver(r), WithToSite(mapA), WithAttachments())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := m.Plan(ctx, images)
	if err != nil || len(plan.Errors) > 0 {
		t.Fatalf("plan: %v %v", err, plan.Errors)
	}
	// .sig ×2, .att, .sbom, and the referrer.
	if plan.Attachments != 5 {
		var got []string
		for _, pi := range plan.Images {
			if pi.Attachment != nil {
				got = append(got, pi.Attachment.describe(pi.Image))
			}
		}
		t.Fatalf("plan: %d attachments %v, want 5", plan.Attachments, got)
	}
	if _, err := m.Run(ctx, plan); err != nil {
		t.Fatal(err)
	}
	// Through a bundle to site B.
	dir := filepath.Join(t.TempDir(), "bundle")
	mb, err := New(WithResolver(r), WithToLayout(dir, (&lock.Lock{}).Marshal()), WithAttachments())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runAll(t, mb, images); err != nil {
		t.Fatal(err)
	}
	fromBundle, _, err := BundleImages(dir)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := New(WithResolver(r), WithFromLayout(dir), WithToSite(mapB), WithAttachments())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runAll(t, mp, fromBundle); err != nil {
		t.Fatal(err)
	}

	toA, _ := mapA.Repository(repo, name.Insecure)
	toB, _ := mapB.Repository(repo, name.Insecure)
	verify := []string{"--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--allow-insecure-registry"}
	tree := func(r name.Repository, h v1.Hash) []string {
		out := cs.Must("tree", "--allow-http-registry", "--allow-insecure-registry", at(r, h))
		return treeLines(out, r)
	}
	for _, h := range []v1.Hash{hIdx, hAmd, hArm} {
		want := tree(repo, h)
		for _, to := range []name.Repository{toA, toB} {
			if got := tree(to, h); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("cosign tree %s:\n%s\nwant, as at the source:\n%s", at(to, h), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		if len(want) == 0 {
			t.Errorf("cosign tree lists nothing for %s at the source", h)
		}
	}
	for _, to := range []name.Repository{toA, toB} {
		// The index's and the amd64 child's signatures (tag scheme).
		cs.Must(append(append([]string{"verify"}, verify...), at(to, hIdx))...)
		cs.Must(append(append([]string{"verify"}, verify...), at(to, hAmd))...)
		// The arm64 child's: a Sigstore bundle, an OCI 1.1 referrer.
		cs.Must(append(append([]string{"verify", "--new-bundle-format=true"}, verify...), at(to, hArm))...)
		// The attestation of the arm64 child.
		cs.Must(append(append([]string{"verify-attestation", "--type", "spdxjson", "--new-bundle-format=false"}, verify...), at(to, hArm))...)
	}
	// The two sites hold the same digests under the same tags.
	for _, tag := range siteTags(t, toA) {
		a, errA := remote.Head(toA.Tag(tag))
		b, errB := remote.Head(toB.Tag(tag))
		if errA != nil || errB != nil || a.Digest != b.Digest {
			t.Errorf("tag %s: site A %v (%v), site B %v (%v)", tag, a, errA, b, errB)
		}
	}
	// A copy without the attachments does not verify: they are what
	// makes it verify.
	mapC := site.Mapping{Default: siteA.Host + "/bare"}
	mc, err := New(WithResolver(r), WithToSite(mapC))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runAll(t, mc, images); err != nil {
		t.Fatal(err)
	}
	toC, _ := mapC.Repository(repo, name.Insecure)
	if _, _, err := cs.Run(append(append([]string{"verify"}, verify...), at(toC, hIdx))...); err == nil {
		t.Errorf("cosign verify succeeded on a copy made without attachments")
	}
}

// digestRE matches a digest in cosign tree's output.
var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// treeLines are the lines of cosign tree's output that name an artifact,
// the repository name taken out, sorted.
func treeLines(out string, repo name.Repository) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, repo.Name(), "REPO"))
		if digestRE.MatchString(l) {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// siteTags lists the tags of repo.
func siteTags(t *testing.T, repo name.Repository) []string {
	t.Helper()
	tags, err := remote.List(repo)
	if err != nil {
		t.Fatal(err)
	}
	return tags
}
