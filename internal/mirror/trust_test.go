package mirror

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/sigverify"
)

// signingKey is an ECDSA P-256 key, as cosign generate-key-pair makes, and
// its public key as PEM.
type signingKey struct {
	signer signature.Signer
	pem    []byte
}

func newSigningKey(t *testing.T) signingKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.LoadSigner(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{signer: s, pem: pem}
}

// sign writes, under img's cosign signature tag, a signature of subject
// shaped as cosign's tag scheme writes it: a simple-signing payload layer
// with its signature in the dev.cosignproject.cosign/signature annotation.
func (k signingKey) sign(t *testing.T, img Image, subject v1.Hash) {
	t.Helper()
	payload := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, img.Source.Name(), subject)
	sig, err := k.signer.SignMessage(strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	l := static.NewLayer([]byte(payload), "application/vnd.dev.cosign.simplesigning.v1+json")
	si, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: l, Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(img.Source.Tag(subject.Algorithm+"-"+subject.Hex+".sig"), si); err != nil {
		t.Fatal(err)
	}
}

// policy is a required (or optional) policy of key at "verify", read as
// sigverify reads a config's.
func policy(t *testing.T, mode string, pems ...[]byte) *sigverify.Policy {
	t.Helper()
	v := &v1alpha1.Verify{Mode: mode}
	files := map[string][]byte{}
	for i, p := range pems {
		path := fmt.Sprintf("keys/k%d.pub", i)
		v.Keys = append(v.Keys, path)
		files[path] = p
	}
	pol, err := sigverify.PolicyFrom("verify", v, func(path string, _ confined.Kind) ([]byte, error) { return files[path], nil })
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestSiteCopyVerified: with WithVerify, the signatures of each image are
// checked at the destination after the copy: a signed image verifies with
// the key and the report names the signer; an unsigned one under a
// required policy fails, naming the image, the destination reference, the
// digest and why; under an optional policy it is reported, not failed. A
// copy without the attachments fails a required policy (its signature is
// not at the destination).
func TestSiteCopyVerified(t *testing.T) {
	f := newFixture(t)
	k := newSigningKey(t)
	signed, unsigned := f.images[0], f.images[1]
	k.sign(t, signed, signed.Digest)
	images := []Image{signed, unsigned}
	required, optional := policy(t, "", k.pem), policy(t, "optional", k.pem)

	m := f.mirror(t, WithToSite(f.site()), WithAttachments(), WithVerify(map[string][]*sigverify.Policy{signed.Name: {required}, unsigned.Name: {optional}}))
	rep, err := runAll(t, m, images)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Signatures) != 2 {
		t.Fatalf("%d signature checks, want 2: %+v", len(rep.Signatures), rep.Signatures)
	}
	for _, s := range rep.Signatures {
		switch s.Name {
		case signed.Name:
			if s.Signer == nil || s.Signer.Key != required.Keys[0].Fingerprint || !s.Required || !strings.HasPrefix(s.Reference, f.dst+"/site/") {
				t.Errorf("signed: %+v, want verified by %s at the site", s, required.Keys[0].Fingerprint)
			}
		case unsigned.Name:
			if s.Signer != nil || s.Required || s.Err == nil || !strings.Contains(s.Err.Error(), "no trusted signature") {
				t.Errorf("unsigned under optional: %+v, want reported, not verified", s)
			}
		}
	}

	// Required, unsigned: the image fails with a located message.
	m = f.mirror(t, WithToSite(f.site()), WithAttachments(), WithVerify(map[string][]*sigverify.Policy{unsigned.Name: {required}}))
	_, err = runAll(t, m, []Image{unsigned})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("required, unsigned: %v, want one image error", err)
	}
	msg := errs[0].Error()
	for _, want := range []string{unsigned.Name, "verify signatures of " + f.dst + "/site/", "under verify", "@" + unsigned.Digest.String() + ": no trusted signature: no signature tag"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}

	// Without attachments, the signed image does not verify at another
	// prefix.
	bare := f.mirror(t, WithToSite(f.site()), WithVerify(map[string][]*sigverify.Policy{signed.Name: {required}}))
	bare.dst.(*registrySink).site.Default = f.dst + "/bare"
	if _, err := runAll(t, bare, []Image{signed}); err == nil || !strings.Contains(err.Error(), "no trusted signature") {
		t.Errorf("a copy without its signature: %v, want refused", err)
	}

	if _, err := New(WithResolver(f.resolver), WithToLayout(t.TempDir(), nil), WithVerify(map[string][]*sigverify.Policy{signed.Name: {required}})); err == nil {
		t.Error("WithVerify into a bundle: accepted")
	}
}

// TestBundleCarriesTrust: a bundle records the verify policies of its
// images and their files (WithTrust) as one trust manifest listed in
// index.json, by content digest, the same bytes twice; BundleTrust reads
// them back and the push verifies the site's copy with them. A key file
// changed in the bundle is refused by BundleTrust and by a write into the
// bundle, naming the file as the config wrote it and its blob.
func TestBundleCarriesTrust(t *testing.T) {
	f := newFixture(t)
	k := newSigningKey(t)
	img := f.images[2] // the index
	k.sign(t, img, img.Digest)
	pol := policy(t, "", k.pem)
	trust := &Trust{}
	trust.Add(img.Name, TrustPolicy{At: pol.At, Verify: pol.Spec, Content: pol.Files})

	write := func(dir string) {
		t.Helper()
		m := f.mirror(t, WithToLayout(dir, nil), WithAttachments(), WithTrust(trust))
		if _, err := runAll(t, m, []Image{img}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	write(dir)
	first := files(t, dir)
	write(dir)
	if again := files(t, dir); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Error("writing the same images and trust again changed the bundle's files")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	var trustDesc *v1.Descriptor
	for _, d := range idx.Manifests {
		if d.Annotations[AnnotationTrust] == TrustVersion {
			trustDesc = &d
		}
	}
	if trustDesc == nil || trustDesc.ArtifactType != TrustArtifactType {
		t.Fatalf("index.json lists no trust material:\n%s", raw)
	}
	got, err := BundleTrust(dir)
	if err != nil {
		t.Fatal(err)
	}
	ps := got.For(img.Name)
	keyDigest := digestOf(k.pem).String()
	if len(ps) != 1 || ps[0].At != "verify" || ps[0].Files["keys/k0.pub"] != keyDigest || string(ps[0].Content["keys/k0.pub"]) != string(k.pem) {
		t.Fatalf("BundleTrust: %+v, want verify with keys/k0.pub %s", ps, keyDigest)
	}
	if images, _, err := BundleImages(dir); err != nil || len(images) == 0 {
		t.Fatalf("BundleImages: %v %v", images, err)
	}

	// The push verifies with the bundle's trust.
	fromBundle, _, err := BundleImages(dir)
	if err != nil {
		t.Fatal(err)
	}
	sitePol, err := sigverify.PolicyFrom(ps[0].At, &ps[0].Verify, func(path string, _ confined.Kind) ([]byte, error) { return ps[0].Content[path], nil })
	if err != nil {
		t.Fatal(err)
	}
	mp := f.mirror(t, WithFromLayout(dir), WithToSite(f.site()), WithAttachments(), WithVerify(map[string][]*sigverify.Policy{img.Name: {sitePol}}))
	rep, err := runAll(t, mp, fromBundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Signatures) != 1 || rep.Signatures[0].Signer == nil || rep.Signatures[0].Signer.Key != pol.Keys[0].Fingerprint {
		t.Errorf("push from the bundle: signatures %+v, want verified by %s", rep.Signatures, pol.Keys[0].Fingerprint)
	}

	// A tampered key.
	tampered := copyTree(t, dir)
	blob := filepath.Join(tampered, "blobs", "sha256", strings.TrimPrefix(keyDigest, "sha256:"))
	other := newSigningKey(t)
	if err := os.WriteFile(blob, other.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = BundleTrust(tampered)
	var terr *TrustError
	if !errors.As(err, &terr) {
		t.Fatalf("BundleTrust of a tampered key: %v, want *TrustError", err)
	}
	for _, want := range []string{"oci:" + tampered, "file keys/k0.pub (verify.keys[0])", "blobs/sha256/" + strings.TrimPrefix(keyDigest, "sha256:"), "the bundle records", "changed after the bundle was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := New(WithResolver(f.resolver), WithToLayout(tampered, nil)); !errors.As(err, &terr) {
		t.Errorf("writing into a bundle with a tampered key: %v, want *TrustError", err)
	}
}
