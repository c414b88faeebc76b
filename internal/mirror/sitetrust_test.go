package mirror

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/sigverify"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestDirectCopyTagsOnlyVerified: a registry-to-registry copy under
// required verify policies pushes each image by digest, verifies its
// signatures there, and only then writes its tag: the image signed by
// another key fails, naming it, and its tag at the destination keeps the
// digest it had (its manifest is there by digest, untagged); the image
// signed by the trusted key and the one under no policy are tagged.
func TestDirectCopyTagsOnlyVerified(t *testing.T) {
	f := newFixture(t)
	trusted, other := newSigningKey(t), newSigningKey(t)
	good, forged, free := f.images[0], f.images[1], f.images[2]
	trusted.sign(t, good, good.Digest)
	other.sign(t, forged, forged.Digest)
	at := func(img Image) name.Repository {
		r, err := f.site().Repository(img.Source, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	old := registrytest.PushRandom(t, at(forged).Tag(forged.Tag)).Digest
	required := policy(t, "", trusted.pem)
	m := f.mirror(t, WithToSite(f.site()), WithAttachments(), WithVerify(map[string][]*sigverify.Policy{good.Name: {required}, forged.Name: {required}}))
	_, err := runAll(t, m, []Image{good, forged, free})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("run: %v, want the forged image's error alone", err)
	}
	for _, want := range []string{forged.Name, "verify signatures of ", "(tag " + forged.Tag + " not written)", "no trusted signature"} {
		if !strings.Contains(errs[0].Error(), want) {
			t.Errorf("error %q lacks %q", errs[0], want)
		}
	}
	if d, err := remote.Head(at(forged).Tag(forged.Tag)); err != nil || d.Digest != old {
		t.Errorf("the forged image's tag at the destination: %v %v, want its former %s", d, err, old)
	}
	if _, err := remote.Head(at(forged).Digest(forged.Digest.String())); err != nil {
		t.Errorf("the forged image's manifest by digest: %v, want there (pushed, not tagged)", err)
	}
	for _, img := range []Image{good, free} {
		if d, err := remote.Head(at(img).Tag(img.Tag)); err != nil || d.Digest != img.Digest {
			t.Errorf("%s: tag %v %v, want %s", img.Name, d, err, img.Digest)
		}
	}
}

// TestSitePoliciesCompareKeys: with a site trust of key A, a bundle whose
// policy trusts key B is refused naming the image, the field and the
// key's digest; one whose policy trusts A is accepted and verified under
// the site trust's policy; an image the site trust lists as unverified
// needs none. The site trust file is refused when it trusts no signer,
// has an unknown field, or lists a key twice.
func TestSitePoliciesCompareKeys(t *testing.T) {
	f := newFixture(t)
	a, b := newSigningKey(t), newSigningKey(t)
	img := f.images[0]
	siteDir := t.TempDir()
	writeTrust := func(body string) string {
		t.Helper()
		p := filepath.Join(siteDir, "trust.yaml")
		if err := os.WriteFile(p, []byte("apiVersion: stowage.dev/v1alpha1\nkind: SiteTrust\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.WriteFile(filepath.Join(siteDir, "a.pub"), a.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := LoadSiteTrust(writeTrust("verify: {keys: [a.pub]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	bundle := func(k signingKey) string {
		t.Helper()
		pol := policy(t, "", k.pem)
		trust := &Trust{}
		trust.Add(img.Name, TrustPolicy{At: pol.At, Verify: pol.Spec, Content: pol.Files})
		dir := filepath.Join(t.TempDir(), "bundle")
		if _, err := runAll(t, f.mirror(t, WithToLayout(dir, nil), WithTrust(trust)), []Image{img}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	swapped := bundle(b)
	images, _, err := BundleImages(swapped)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = SitePolicies(swapped, images, nil, st)
	want := fmt.Sprintf("image %s: the bundle's policy verify trusts keys[0] keys/k0.pub (%s), a key the site trust does not hold", img.Name, digestOf(b.pem))
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing pushed") {
		t.Errorf("a bundle trusting another key: %v, want %q", err, want)
	}
	same := bundle(a)
	// No lock in this bundle: the entry check names it.
	_, _, err = SitePolicies(same, images, nil, st)
	if err == nil || !strings.Contains(err.Error(), "image "+img.Name+": the bundle's lock has no entry for it") {
		t.Errorf("a bundle without a lock: %v", err)
	}
	st.Unverified[img.Name] = true
	pols, _, err := SitePolicies(same, images, nil, st)
	if err != nil || len(pols[img.Name]) != 0 {
		t.Errorf("an image the site accepts unverified: %v %v", pols, err)
	}
	for body, want := range map[string]string{
		"verify: {mode: optional}\n":              "a site trust that trusts no signer verifies nothing",
		"verify: {keys: [a.pub]}\nextra: true\n":  "unknown field",
		"verify: {keys: [../outside.pub]}\n":      "outside.pub",
		"verify: {identities: [{identity: x}]}\n": "verify.identities need verify.trustedRoot",
		"verify: {keys: [a.pub, a.pub]}\n":        `verify.keys[1]: key "a.pub" is listed twice (keys[0] too); list each key once`,
	} {
		if _, err := LoadSiteTrust(writeTrust(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("site trust %q: %v, want %q", body, err, want)
		}
	}
}
