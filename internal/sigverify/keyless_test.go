package sigverify

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/stowage/stowage/internal/testing/cosigntest"
)

// trustedRootFile writes vs's trusted root as a trusted_root.json and
// reads it back with LoadTrustedRoot.
func trustedRootFile(t *testing.T, vs *ca.VirtualSigstore) root.TrustedMaterial {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(path, cosigntest.TrustedRootJSON(t, vs), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadTrustedRoot(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func keylessBundle(t *testing.T, vs *ca.VirtualSigstore, identity, issuer string, subject v1.Hash) []byte {
	return cosigntest.KeylessBundle(t, vs, identity, issuer, subject)
}

func attach(t *testing.T, repo name.Repository, subject v1.Descriptor, raw []byte) {
	cosigntest.AttachBundle(t, repo, subject, raw)
}

// TestVerifyKeyless: a keyless Sigstore bundle made by sigstore-go's
// virtual sigstore, attached to an image, verifies offline against the
// virtual sigstore's trusted root read from a trusted_root.json, for the
// exact identity and for a regular expression, and reports the identity
// and issuer; another identity, another issuer, another trusted root and a
// bundle of another digest are refused with the image, the digest and the
// reason.
func TestVerifyKeyless(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/team/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string) (v1.Descriptor, v1.Hash) {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(repo.Tag(tag), img); err != nil {
			t.Fatal(err)
		}
		h, _ := img.Digest()
		size, _ := img.Size()
		mt, _ := img.MediaType()
		return v1.Descriptor{MediaType: mt, Digest: h, Size: size}, h
	}
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	const who, issuer = "release@example.com", "https://accounts.example.com"
	signedDesc, signed := push("signed")
	attach(t, repo, signedDesc, keylessBundle(t, vs, who, issuer, signed))
	otherDesc, other := push("other")
	// A bundle for the signed image, attached to another one.
	attach(t, repo, otherDesc, keylessBundle(t, vs, who, issuer, signed))
	vs2, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	good, stranger := trustedRootFile(t, vs), trustedRootFile(t, vs2)
	p, err := remote.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		h       v1.Hash
		trusted root.TrustedMaterial
		id      Identity
		ok      bool
		want    string
	}{
		{"virtual sigstore itself", signed, vs, Identity{Subject: who, Issuer: issuer}, true, ""},
		{"exact identity", signed, good, Identity{Subject: who, Issuer: issuer}, true, ""},
		{"identity by regexp", signed, good, Identity{SubjectRegexp: `^[a-z]+@example\.com$`, Issuer: issuer}, true, ""},
		{"another identity", signed, good, Identity{Subject: "someone@example.com", Issuer: issuer}, false, "does not verify for this digest and the identities someone@example.com from " + issuer},
		{"another issuer", signed, good, Identity{Subject: who, Issuer: "https://elsewhere.example"}, false, "does not verify"},
		{"another trusted root", signed, stranger, Identity{Subject: who, Issuer: issuer}, false, "does not verify"},
		{"bundle of another digest", other, good, Identity{Subject: who, Issuer: issuer}, false, "does not verify for this digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := VerifyKeyless(ctx, repo, p, tc.h, tc.trusted, []Identity{tc.id})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if s.Identity != who || s.Issuer != issuer || s.Kind != "bundle" || !strings.HasPrefix(s.Signature, "sha256:") {
					t.Errorf("signer %+v, want %s from %s", s, who, issuer)
				}
				return
			}
			var verr *Error
			if !errors.As(err, &verr) {
				t.Fatalf("VerifyKeyless: %v (%T), want *Error", err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "image "+repo.Name()+"@"+tc.h.String()+": no trusted signature: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want the image, digest and %q", msg, tc.want)
			}
		})
	}
}
