package sigverify

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
)

// keylessBundle is a Sigstore bundle (v0.3 JSON) of an in-toto statement
// naming subject, signed by sigstore-go's virtual sigstore for identity and
// issuer: a Fulcio-style certificate, a Rekor entry with its inclusion
// proof, and an RFC 3161 timestamp.
func keylessBundle(t *testing.T, vs *ca.VirtualSigstore, identity, issuer string, subject v1.Hash) []byte {
	t.Helper()
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"image","digest":{"sha256":%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`, subject.Hex)
	// The time Attest uses, inside the certificate's validity.
	ent, err := vs.AttestAtTime(identity, issuer, []byte(stmt), time.Now().Add(5*time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := ent.VerificationContent()
	sc, _ := ent.SignatureContent()
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	tss, _ := ent.Timestamps()
	tles, _ := ent.TlogEntries()
	vm := &protobundle.VerificationMaterial{
		Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
		TimestampVerificationData: &protobundle.TimestampVerificationData{},
	}
	for _, e := range tles {
		tle := e.TransparencyLogEntry()
		// The virtual sigstore's entry leaves out the kind of a DSSE
		// entry, which a bundle carries.
		tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
		vm.TlogEntries = append(vm.TlogEntries, tle)
	}
	for _, ts := range tss {
		vm.TimestampVerificationData.Rfc3161Timestamps = append(vm.TimestampVerificationData.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	b, err := bundle.NewBundle(&protobundle.Bundle{
		MediaType:            bundleType,
		VerificationMaterial: vm,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// attach pushes raw as a Sigstore bundle referrer of subject in repo.
func attach(t *testing.T, repo name.Repository, subject v1.Descriptor, raw []byte) {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), static.NewLayer(raw, bundleType))
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, bundleType)
	img = mutate.Subject(img, subject).(v1.Image)
	d, _ := img.Digest()
	if err := remote.Write(repo.Digest(d.String()), img); err != nil {
		t.Fatal(err)
	}
}

// trustedRootFile writes vs's trusted root as a trusted_root.json and
// reads it back with LoadTrustedRoot.
func trustedRootFile(t *testing.T, vs *ca.VirtualSigstore) root.TrustedMaterial {
	t.Helper()
	// The virtual sigstore keeps a log's ID as its hex text; a trusted
	// root holds the raw bytes (and keys its logs by their hex).
	logs := map[string]*root.TransparencyLog{}
	for k, l := range vs.RekorLogs() {
		c := *l
		id, err := hex.DecodeString(string(l.ID))
		if err != nil {
			t.Fatal(err)
		}
		c.ID = id
		logs[k] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), vs.CTLogs(), vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadTrustedRoot(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
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
