package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// The keyless signer of the tests: sigstore-go's virtual sigstore vouches
// for this identity from this issuer.
const (
	testIdentity = "release@example.com"
	testIssuer   = "https://accounts.example.com"
)

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLockVerifiesKeyless: with a verify policy of identities and a
// trusted root committed beside the config, `stowage lock` pins an image
// whose keyless Sigstore bundle (made by sigstore-go's virtual sigstore,
// attached as an OCI 1.1 referrer on a docker-registry without the
// Referrers API) names the identity and issuer, and records both; a bundle
// for another identity, one from another issuer and one chained to
// another trusted root are refused, each named with its digest and why,
// and lock exits 1.
func TestLockVerifiesKeyless(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(d.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	vs, stranger := cosigntest.VirtualSigstore(t), cosigntest.VirtualSigstore(t)
	signed := map[string]v1.Hash{}
	for _, c := range []struct{ tag, identity, issuer string }{
		{"good", testIdentity, testIssuer},
		{"helper", testIdentity, testIssuer},
		{"wrongid", "intruder@example.com", testIssuer},
		{"wrongissuer", testIdentity, "https://elsewhere.example"},
		{"stranger", testIdentity, testIssuer},
	} {
		desc := registrytest.PushRandom(t, repo.Tag(c.tag))
		by := vs
		if c.tag == "stranger" {
			by = stranger
		}
		cosigntest.AttachBundle(t, repo, desc, cosigntest.KeylessBundle(t, by, c.identity, c.issuer, desc.Digest))
		signed[c.tag] = desc.Digest
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "trust", "trusted_root.json"), cosigntest.TrustedRootJSON(t, vs))
	var b strings.Builder
	b.WriteString("images:\n")
	for _, tag := range []string{"good", "wrongid", "wrongissuer", "stranger"} {
		fmt.Fprintf(&b, "  %s: {reference: %q}\n", tag, repo.Tag(tag).Name())
	}
	fmt.Fprintf(&b, "helper: {image: %q}\n", repo.Tag("helper").Name())
	b.WriteString("profiles:\n  p:\n    pullers: [{name: pre, namespace: pre, images: [good, wrongid, wrongissuer, stranger]}]\n")
	fmt.Fprintf(&b, "verify:\n  identities: [{identity: %q, issuer: %q}]\n  trustedRoot: trust/trusted_root.json\n", testIdentity, testIssuer)
	writeFile(t, filepath.Join(dir, "stowage.yaml"), []byte(b.String()))

	_, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", d.Host, "-q")
	if code != 1 {
		t.Fatalf("lock exit %d, want 1:\n%s", code, stderr)
	}
	l, err := lock.Read(filepath.Join(dir, "stowage.lock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 2 {
		t.Fatalf("lock has %d entries, want the good one and the helper: %+v", len(l.Entries), l.Entries)
	}
	e, _ := l.Lookup(repo.Tag("good").Name())
	if e.Digest != signed["good"].String() || e.VerifiedBy == nil || e.VerifiedBy.Identity != testIdentity || e.VerifiedBy.Issuer != testIssuer ||
		e.VerifiedBy.Key != "" || !strings.HasPrefix(e.VerifiedBy.Signature, "sha256:") {
		t.Errorf("good: %+v verifiedBy %+v, want %s from %s", e, e.VerifiedBy, testIdentity, testIssuer)
	}
	for _, c := range []struct{ tag, why string }{
		{"wrongid", "does not verify for this digest and the identities " + testIdentity + " from " + testIssuer},
		{"wrongissuer", "does not verify for this digest and the identities"},
		{"stranger", "does not verify for this digest and the identities"},
	} {
		want := fmt.Sprintf("image %q (used by image %q in pre/pre): verify: image %s@%s: no trusted signature: ", repo.Tag(c.tag).Name(), c.tag, repo.Name(), signed[c.tag])
		found := false
		for _, line := range strings.Split(stderr, "\n") {
			found = found || (strings.Contains(line, want) && strings.Contains(line, c.why))
		}
		if !found {
			t.Errorf("%s: stderr lacks %q … %q:\n%s", c.tag, want, c.why, stderr)
		}
	}
}

// TestMirrorVerifiesTheSiteCopy is the verified offline journey: an image
// signed with a cosign key (the real cosign) under a policy of its own and
// one signed keyless (the virtual sigstore) under the top-level policy are
// locked, mirrored directly to one site and through a bundle to another.
// After each copy stowage verifies the site's copy offline and says so in
// -o json; the bundle records the key and the trusted root by digest, and
// the push verifies with them, no config there; the real cosign verifies
// both images at both sites, with --key and with --trusted-root and the
// identity and issuer, and no network beyond loopback. A trusted root
// changed in the bundle is refused naming it; --no-attachments under a
// required policy is refused up front unless --no-verify.
func TestMirrorVerifiesTheSiteCopy(t *testing.T) {
	t.Parallel()
	cs := cosigntest.Lookup(t)
	src := registrytest.Start(t, registrytest.Options{})
	siteA := registrytest.Start(t, registrytest.Options{})
	siteB := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(src.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	vs := cosigntest.VirtualSigstore(t)
	keyed, keyless, helper := registrytest.PushRandom(t, repo.Tag("keyed")), registrytest.PushRandom(t, repo.Tag("keyless")), registrytest.PushRandom(t, repo.Tag("helper"))
	for _, d := range []v1.Descriptor{keyless, helper} {
		cosigntest.AttachBundle(t, repo, d, cosigntest.KeylessBundle(t, vs, testIdentity, testIssuer, d.Digest))
	}
	key, pub := cs.KeyPair("release")
	cs.Must("sign", "--new-bundle-format=false", "--key", key, "--tlog-upload=false", "--use-signing-config=false",
		"--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+keyed.Digest.String())

	dir := t.TempDir()
	pem, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	rootJSON := cosigntest.TrustedRootJSON(t, vs)
	writeFile(t, filepath.Join(dir, "keys", "release.pub"), pem)
	writeFile(t, filepath.Join(dir, "trust", "trusted_root.json"), rootJSON)
	rootFile := filepath.Join(cs.Dir, "trusted_root.json")
	writeFile(t, rootFile, rootJSON)
	cfg := fmt.Sprintf(`images:
  keyed: {reference: %q, verify: {keys: [keys/release.pub]}}
  keyless: {reference: %q}
helper: {image: %q}
profiles:
  p:
    pullers: [{name: pre, namespace: pre, images: [keyed, keyless]}]
verify:
  identities: [{identity: %q, issuer: %q}]
  trustedRoot: trust/trusted_root.json
`, repo.Tag("keyed").Name(), repo.Tag("keyless").Name(), repo.Tag("helper").Name(), testIdentity, testIssuer)
	writeFile(t, filepath.Join(dir, "stowage.yaml"), []byte(cfg))
	insecure := []string{"--insecure-registry", src.Host, "--insecure-registry", siteA.Host, "--insecure-registry", siteB.Host}
	if _, stderr, code := runCLI(t, nil, append([]string{"lock", dir, "-q"}, insecure...)...); code != 0 {
		t.Fatalf("lock exit %d:\n%s", code, stderr)
	}

	// The plan says what it will verify.
	toA := append([]string{"mirror", dir, "--to", siteA.Host + "/site", "-q"}, insecure...)
	stdout, stderr, code := runCLI(t, nil, append(toA, "--dry-run")...)
	if code != 0 || !strings.Contains(string(stdout), "after the copy, the signatures of 3 images are verified at the destination under their verify policies, offline (keys/release.pub sha256:") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var plan v1alpha1.MirrorPlanReport
	stdout, _, _ = runCLI(t, nil, append(toA, "--dry-run", "-o", "json")...)
	if err := json.Unmarshal(stdout, &plan); err != nil || len(plan.Verify) != 3 || len(plan.TrustFiles) != 2 {
		t.Errorf("dry run -o json: %v: verify %+v, trust files %+v", err, plan.Verify, plan.TrustFiles)
	}

	// Direct to site A.
	checkRun := func(what string, stdout []byte, stderr string, code int) {
		t.Helper()
		var rep v1alpha1.MirrorReport
		if err := json.Unmarshal(stdout, &rep); err != nil || code != 0 || !rep.OK {
			t.Fatalf("%s: exit %d, %v\n%s\n%s", what, code, err, stdout, stderr)
		}
		if len(rep.Signatures) != 3 {
			t.Fatalf("%s: %d signature checks, want 3: %+v", what, len(rep.Signatures), rep.Signatures)
		}
		for _, s := range rep.Signatures {
			keyedOne := s.Image == repo.Tag("keyed").Name()
			switch {
			case !s.Verified || s.Mode != "required" || s.Signer == nil:
				t.Errorf("%s: %+v, want verified", what, s)
			case keyedOne && (s.Policy != "images.keyed.verify" || s.Signer.Key == ""):
				t.Errorf("%s: keyed %+v signer %+v, want its own policy's key", what, s, s.Signer)
			case !keyedOne && (s.Policy != "verify" || s.Signer.Identity != testIdentity || s.Signer.Issuer != testIssuer):
				t.Errorf("%s: %+v signer %+v, want %s from %s", what, s, s.Signer, testIdentity, testIssuer)
			}
		}
	}
	stdout, stderr, code = runCLI(t, nil, append(toA, "-o", "json")...)
	checkRun("direct", stdout, stderr, code)

	// Through a bundle to site B, no config at the push.
	bundle := filepath.Join(t.TempDir(), "bundle")
	if _, stderr, code := runCLI(t, nil, append([]string{"mirror", dir, "--to", "oci:" + bundle, "-q"}, insecure...)...); code != 0 {
		t.Fatalf("bundle: exit %d\n%s", code, stderr)
	}
	trust, err := mirror.BundleTrust(bundle)
	if err != nil || trust == nil || len(trust.Policies) != 2 {
		t.Fatalf("the bundle's trust material: %+v %v", trust, err)
	}
	fromB := append([]string{"mirror", "--from", "oci:" + bundle, "--to", siteB.Host + "/site", "-q"}, insecure...)
	stdout, stderr, code = runCLI(t, nil, append(fromB, "-o", "json")...)
	checkRun("from the bundle", stdout, stderr, code)

	// The real cosign at both sites, offline.
	for _, host := range []string{siteA.Host, siteB.Host} {
		to, err := (site.Mapping{Default: host + "/site"}).Repository(repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		http := []string{"--allow-http-registry", "--allow-insecure-registry"}
		cs.Must(append(append([]string{"verify", "--key", pub, "--insecure-ignore-tlog"}, http...), to.Name()+"@"+keyed.Digest.String())...)
		// The virtual sigstore's certificates carry no SCT.
		cs.Must(append(append([]string{"verify", "--new-bundle-format=true", "--trusted-root", rootFile, "--certificate-identity", testIdentity,
			"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct", "--use-signed-timestamps"}, http...), to.Name()+"@"+keyless.Digest.String())...)
		if _, _, err := cs.Run(append(append([]string{"verify", "--new-bundle-format=true", "--trusted-root", rootFile, "--certificate-identity", "intruder@example.com",
			"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct", "--use-signed-timestamps"}, http...), to.Name()+"@"+keyless.Digest.String())...); err == nil {
			t.Errorf("cosign verify at %s accepted another identity", host)
		}
	}

	// A trusted root changed in the bundle.
	tampered := filepath.Join(t.TempDir(), "tampered")
	if err := os.CopyFS(tampered, os.DirFS(bundle)); err != nil {
		t.Fatal(err)
	}
	rootDigest := ""
	for _, f := range mirror.TrustFiles(trust) {
		if f.Path == "trust/trusted_root.json" {
			rootDigest = strings.TrimPrefix(f.Digest, "sha256:")
		}
	}
	blob := filepath.Join(tampered, "blobs", "sha256", rootDigest)
	if err := os.Chmod(blob, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, blob, cosigntest.TrustedRootJSON(t, cosigntest.VirtualSigstore(t)))
	_, stderr, code = runCLI(t, nil, append([]string{"mirror", "--from", "oci:" + tampered, "--to", siteB.Host + "/other", "-q"}, insecure...)...)
	if code != 1 || !strings.Contains(stderr, "trust material: file trust/trusted_root.json (verify.trustedRoot) (blobs/sha256/"+rootDigest+")") ||
		!strings.Contains(stderr, "changed after the bundle was written") {
		t.Errorf("tampered trusted root: exit %d, want 1 naming the file:\n%s", code, stderr)
	}

	// --no-attachments and the policies.
	_, stderr, code = runCLI(t, nil, append(toA, "--no-attachments")...)
	if code != 2 || !strings.Contains(stderr, "--no-attachments leaves the signatures out") || !strings.Contains(stderr, repo.Tag("keyed").Name()+" (images.keyed.verify)") || !strings.Contains(stderr, "--no-verify") {
		t.Errorf("--no-attachments under required policies: exit %d, want 2:\n%s", code, stderr)
	}
	if _, stderr, code = runCLI(t, nil, append(toA, "--no-attachments", "--no-verify")...); code != 0 {
		t.Errorf("--no-attachments --no-verify: exit %d\n%s", code, stderr)
	}
}
