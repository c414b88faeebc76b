package sigverify

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// raw is a manifest to PUT as it is.
type raw struct {
	b  []byte
	mt types.MediaType
}

func (r raw) RawManifest() ([]byte, error)        { return r.b, nil }
func (r raw) MediaType() (types.MediaType, error) { return r.mt, nil }

func key(t *testing.T, path string) *Key {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k, err := LoadKey(path, b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVerifyRealCosignSignatures: images signed with the real cosign on a
// docker-registry verify offline with the signing key, by tag scheme and
// as a Sigstore bundle referrer, and report the key's fingerprint and the
// signature's digest; a wrong key, an unsigned image, a signature copied
// to another digest and a tampered signature are each refused with the
// image, the digest and the reason.
func TestVerifyRealCosignSignatures(t *testing.T) {
	cs := cosigntest.Lookup(t)
	d := registrytest.Start(t, registrytest.Options{})
	ctx := context.Background()
	repo, err := name.NewRepository(d.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string) v1.Hash { return registrytest.PushRandom(t, repo.Tag(tag)).Digest }
	legacy, bundled, unsigned, copied, tampered := push("legacy"), push("bundled"), push("unsigned"), push("copied"), push("tampered")
	at := func(h v1.Hash) string { return repo.Name() + "@" + h.String() }
	keyA, pubA := cs.KeyPair("a")
	_, pubB := cs.KeyPair("b")
	offline := []string{"--key", keyA, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--allow-insecure-registry", "--yes"}
	cs.Must(append(append([]string{"sign", "--new-bundle-format=false"}, offline...), at(legacy))...)
	cs.Must(append(append([]string{"sign", "--new-bundle-format=false"}, offline...), at(tampered))...)
	cs.Must(append(append([]string{"sign", "--new-bundle-format=true"}, offline...), at(bundled))...)

	// The legacy signature, copied to the tag of another digest.
	sigTag := func(h v1.Hash) name.Tag { return repo.Tag(h.Algorithm + "-" + h.Hex + ".sig") }
	desc, err := remote.Get(sigTag(legacy))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(sigTag(copied), raw{desc.Manifest, desc.MediaType}); err != nil {
		t.Fatal(err)
	}
	// The tampered image's signature, one bit of it flipped.
	desc, err = remote.Get(sigTag(tampered))
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.StdEncoding.DecodeString(m.Layers[0].Annotations[signatureAnnotation])
	sig[len(sig)/2] ^= 1
	m.Layers[0].Annotations[signatureAnnotation] = base64.StdEncoding.EncodeToString(sig)
	b, _ := json.Marshal(m)
	if err := remote.Put(sigTag(tampered), raw{b, desc.MediaType}); err != nil {
		t.Fatal(err)
	}

	p, err := remote.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	a, wrong := key(t, pubA), key(t, pubB)
	for _, tc := range []struct {
		name string
		h    v1.Hash
		keys []*Key
		kind string   // the signer's kind when it verifies
		want []string // the reasons when it does not
	}{
		{"tag scheme", legacy, []*Key{wrong, a}, "sig", nil},
		{"Sigstore bundle referrer", bundled, []*Key{a}, "bundle", nil},
		{"wrong key", legacy, []*Key{wrong}, "", []string{"does not verify with key " + wrong.Name, "no Sigstore bundle among the referrers"}},
		{"wrong key for a bundle", bundled, []*Key{wrong}, "", []string{"no signature tag", "Sigstore bundle sha256:", "does not verify with key " + wrong.Name}},
		{"unsigned", unsigned, []*Key{a}, "", []string{"no signature tag " + sigTag(unsigned).TagStr(), "no Sigstore bundle among the referrers"}},
		{"signature of another digest", copied, []*Key{a}, "", []string{"verifies with key " + a.Name + " but signs " + legacy.String() + ", another digest"}},
		{"tampered signature", tampered, []*Key{a}, "", []string{"does not verify with key " + a.Name}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Verify(ctx, repo, p, tc.h, tc.keys)
			if tc.kind != "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.Kind != tc.kind || s.Key != a.Fingerprint || !strings.HasPrefix(s.Signature, "sha256:") {
					t.Errorf("signer %+v, want kind %s, key %s", s, tc.kind, a.Fingerprint)
				}
				return
			}
			var verr *Error
			if !errors.As(err, &verr) {
				t.Fatalf("Verify: %v (%T), want *Error", err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "image "+repo.Name()+"@"+tc.h.String()+": no trusted signature: ") {
				t.Errorf("error %q names not the image and digest", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
	// The bundle, checked against another digest than its subject's:
	// its statement names the image it was made for.
	refs, err := remote.Referrers(repo.Digest(bundled.String()))
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := refs.IndexManifest()
	if len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != bundleType {
		t.Fatalf("referrers of the bundled image: %+v", rm.Manifests)
	}
	if s, reason, err := verifyBundle(ctx, repo, p, rm.Manifests[0], legacy, []*Key{a}); s != nil || err != nil || !strings.Contains(reason, "for this digest") {
		t.Errorf("a bundle checked against another digest: %+v, %q, %v; want refused", s, reason, err)
	}
	// cosign agrees on the signed ones.
	verify := []string{"verify", "--key", pubA, "--insecure-ignore-tlog", "--allow-http-registry", "--allow-insecure-registry"}
	cs.Must(append(append(verify, "--new-bundle-format=false"), at(legacy))...)
	if _, _, err := cs.Run(append(append(verify, "--new-bundle-format=false"), at(tampered))...); err == nil {
		t.Error("cosign verify accepted the tampered signature")
	}
}
