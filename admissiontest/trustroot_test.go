package admissiontest

import (
	"crypto/sha256"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	pcv1alpha1 "github.com/sigstore/policy-controller/pkg/apis/policy/v1alpha1"
	commonpb "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	trustrootpb "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// trustAuthority is a certificate authority (Fulcio or a timestamp
// authority) as an admission object carries it: a PEM chain.
type trustAuthority struct {
	Org, CN, URI string
	Chain        []byte
}

// trustLog is a Rekor or CT log as an admission object carries it.
type trustLog struct {
	URL string
	Key []byte // PEM
}

// writeTrustedRoot writes, as a sigstore trusted_root.json in dir, the
// trust an admission object carries, the way policy-controller turns a
// TrustRoot's sigstoreKeys into the trusted root it verifies with
// (pkg/apis/config.ConvertSigstoreKeys, not imported: it pulls in cosign
// v2 and every cloud's credential helper): each chain's PEM blocks in
// order, authorities valid from the epoch, each log's ID the SHA-256 of
// its DER key. It returns the file's path.
func writeTrustedRoot(t *testing.T, dir string, cas, tsas []trustAuthority, tlogs, ctlogs []trustLog) string {
	t.Helper()
	epoch := &commonpb.TimeRange{Start: &timestamppb.Timestamp{}}
	authority := func(a trustAuthority) *trustrootpb.CertificateAuthority {
		var certs []*commonpb.X509Certificate
		for rest := a.Chain; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			certs = append(certs, &commonpb.X509Certificate{RawBytes: b.Bytes})
		}
		if len(certs) == 0 {
			t.Fatalf("authority %s: no certificate in its chain", a.CN)
		}
		return &trustrootpb.CertificateAuthority{
			Subject:   &commonpb.DistinguishedName{Organization: a.Org, CommonName: a.CN},
			Uri:       a.URI,
			CertChain: &commonpb.X509CertificateChain{Certificates: certs},
			ValidFor:  epoch,
		}
	}
	log := func(l trustLog) *trustrootpb.TransparencyLogInstance {
		b, _ := pem.Decode(l.Key)
		if b == nil || b.Type != "PUBLIC KEY" {
			t.Fatalf("log %s: not a PEM public key: %q", l.URL, l.Key)
		}
		id := sha256.Sum256(b.Bytes)
		return &trustrootpb.TransparencyLogInstance{
			BaseUrl:       l.URL,
			HashAlgorithm: commonpb.HashAlgorithm_SHA2_256,
			PublicKey:     &commonpb.PublicKey{RawBytes: b.Bytes, KeyDetails: commonpb.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256, ValidFor: epoch},
			LogId:         &commonpb.LogId{KeyId: id[:]},
		}
	}
	tr := &trustrootpb.TrustedRoot{MediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1"}
	for _, a := range cas {
		tr.CertificateAuthorities = append(tr.CertificateAuthorities, authority(a))
	}
	for _, a := range tsas {
		tr.TimestampAuthorities = append(tr.TimestampAuthorities, authority(a))
	}
	for _, l := range tlogs {
		tr.Tlogs = append(tr.Tlogs, log(l))
	}
	for _, l := range ctlogs {
		tr.Ctlogs = append(tr.Ctlogs, log(l))
	}
	b, err := protojson.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// trustRootFile writes the trusted root a policy-controller TrustRoot
// carries (writeTrustedRoot).
func trustRootFile(t *testing.T, tr *pcv1alpha1.TrustRoot) string {
	t.Helper()
	k := tr.Spec.SigstoreKeys
	if k == nil {
		t.Fatalf("TrustRoot %s has no sigstoreKeys", tr.Name)
	}
	ca := func(as []pcv1alpha1.CertificateAuthority) []trustAuthority {
		var out []trustAuthority
		for _, a := range as {
			out = append(out, trustAuthority{Org: a.Subject.Organization, CN: a.Subject.CommonName, URI: a.URI.String(), Chain: a.CertChain})
		}
		return out
	}
	logs := func(ls []pcv1alpha1.TransparencyLogInstance) []trustLog {
		var out []trustLog
		for _, l := range ls {
			out = append(out, trustLog{URL: l.BaseURL.String(), Key: l.PublicKey})
		}
		return out
	}
	return writeTrustedRoot(t, t.TempDir(), ca(k.CertificateAuthorities), ca(k.TimeStampAuthorities), logs(k.TLogs), logs(k.CTLogs))
}
