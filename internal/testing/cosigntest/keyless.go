package cosigntest

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
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

// BundleType is the artifact type of a Sigstore bundle (v0.3) attached as
// an OCI 1.1 referrer, as `cosign sign --new-bundle-format` writes it.
const BundleType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// VirtualSigstore is sigstore-go's test CA, Rekor log and timestamp
// authority, in memory: keyless signatures without Fulcio, Rekor or an
// OIDC provider.
func VirtualSigstore(tb testing.TB) *ca.VirtualSigstore {
	tb.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		tb.Fatal(err)
	}
	return vs
}

// KeylessBundle is a Sigstore bundle (v0.3 JSON) of an in-toto statement
// naming subject (cosign's signing predicate), signed by vs for identity
// and issuer: a Fulcio-style certificate, a Rekor entry with its inclusion
// proof, and an RFC 3161 timestamp. The certificate is valid for ten
// minutes from now; the signature is timestamped within them.
func KeylessBundle(tb testing.TB, vs *ca.VirtualSigstore, identity, issuer string, subject v1.Hash) []byte {
	tb.Helper()
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"image","digest":{"sha256":%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`, subject.Hex)
	ent, err := vs.AttestAtTime(identity, issuer, []byte(stmt), time.Now().Add(5*time.Minute), true)
	if err != nil {
		tb.Fatal(err)
	}
	vc, _ := ent.VerificationContent()
	sc, _ := ent.SignatureContent()
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		tb.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		tb.Fatal(err)
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
		MediaType:            BundleType,
		VerificationMaterial: vm,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := b.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// AttachBundle pushes raw (a Sigstore bundle) to repo as an OCI 1.1
// referrer of subject, as cosign does: a manifest of one layer with the
// bundle's media type, naming subject; go-containerregistry writes the
// referrers tag-schema index where the registry has no Referrers API. It
// returns the referrer's digest.
func AttachBundle(tb testing.TB, repo name.Repository, subject v1.Descriptor, raw []byte, opts ...remote.Option) v1.Hash {
	tb.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), static.NewLayer(raw, BundleType))
	if err != nil {
		tb.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, BundleType)
	img = mutate.Subject(img, subject).(v1.Image)
	d, _ := img.Digest()
	if err := remote.Write(repo.Digest(d.String()), img, opts...); err != nil {
		tb.Fatal(err)
	}
	return d
}

// TrustedRootJSON is vs's trusted root as a sigstore trusted_root.json
// (media type 0.1): its Fulcio CA, CT log, timestamp authority and Rekor
// log, as committed beside a config.
func TrustedRootJSON(tb testing.TB, vs *ca.VirtualSigstore) []byte {
	tb.Helper()
	// The virtual sigstore keeps a log's ID as its hex text; a trusted
	// root holds the raw bytes (and keys its logs by their hex).
	logs := map[string]*root.TransparencyLog{}
	for k, l := range vs.RekorLogs() {
		c := *l
		id, err := hex.DecodeString(string(l.ID))
		if err != nil {
			tb.Fatal(err)
		}
		c.ID = id
		logs[k] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), vs.CTLogs(), vs.TimestampingAuthorities(), logs)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
