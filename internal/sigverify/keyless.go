package sigverify

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/stowage/stowage/api/v1alpha1"
)

// Identity is a keyless signer: the certificate's subject alternative name
// (an e-mail address or a workflow URI) and the OIDC issuer that vouched
// for it, each exact or a regular expression (RE2). One of Subject and
// SubjectRegexp, and one of Issuer and IssuerRegexp, is needed.
type Identity struct {
	Subject, SubjectRegexp string
	Issuer, IssuerRegexp   string
}

// String names the identity in messages: "SUBJECT from ISSUER", a regular
// expression marked with "~".
func (id Identity) String() string {
	s, i := id.Subject, id.Issuer
	if s == "" {
		s = "~" + id.SubjectRegexp
	}
	if i == "" {
		i = "~" + id.IssuerRegexp
	}
	return s + " from " + i
}

// LoadTrustedRoot reads a sigstore trusted_root.json (the file committed
// beside the config): the Fulcio CAs, Rekor logs, CT logs and timestamp
// authorities keyless signatures are checked against, offline.
func LoadTrustedRoot(path string) (root.TrustedMaterial, error) {
	tr, err := root.NewTrustedRootFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", path, err)
	}
	return tr, nil
}

// VerifyKeyless checks that digest h in repo (read through p) carries a
// Sigstore bundle referrer whose certificate one of ids matches, chained to
// a CA of trusted, entered in one of its transparency logs (checked offline
// with the log's key) and timestamped within the certificate's validity,
// and whose statement names h. Nothing is fetched but the registry's. It
// returns the signer with its identity and issuer. Errors: *Error naming
// each bundle's reason (or that there is none), else the registry's.
// Tag-scheme keyless signatures (a .sig with a certificate annotation) are
// not read.
func VerifyKeyless(ctx context.Context, repo name.Repository, p *remote.Puller, h v1.Hash, trusted root.TrustedMaterial, ids []Identity) (*Signer, error) {
	if len(ids) == 0 || trusted == nil {
		return nil, errors.New("no identity or no trusted root to verify with")
	}
	var policies []verify.PolicyOption
	for _, id := range ids {
		ci, err := verify.NewShortCertificateIdentity(id.Issuer, id.IssuerRegexp, id.Subject, id.SubjectRegexp)
		if err != nil {
			return nil, fmt.Errorf("identity %s: %w", id, err)
		}
		policies = append(policies, verify.WithCertificateIdentity(ci))
	}
	v, err := verify.NewVerifier(trusted, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return nil, err
	}
	digest, err := hex.DecodeString(h.Hex)
	if err != nil {
		return nil, err
	}
	verr := &Error{Image: repo.Name(), Digest: h.String()}
	bundles, err := bundleReferrers(ctx, repo, p, h)
	if err != nil {
		return nil, err
	}
	if len(bundles) == 0 {
		verr.Reasons = append(verr.Reasons, "no Sigstore bundle among the referrers")
	}
	for _, d := range bundles {
		b, reason, err := loadBundle(ctx, repo, p, d, h)
		if err != nil {
			return nil, err
		}
		if b == nil {
			verr.Reasons = append(verr.Reasons, reason)
			continue
		}
		res, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest(h.Algorithm, digest), policies...))
		if err != nil {
			verr.Reasons = append(verr.Reasons, fmt.Sprintf("Sigstore bundle %s: does not verify for this digest and the identities %s: %v", d.Digest, identities(ids), err))
			continue
		}
		s := &Signer{Signature: d.Digest.String(), Kind: v1alpha1.SignatureBundle}
		if c := res.Signature; c != nil && c.Certificate != nil {
			s.Identity, s.Issuer = c.Certificate.SubjectAlternativeName, c.Certificate.Issuer
		}
		return s, nil
	}
	return nil, verr
}

func identities(ids []Identity) string {
	var s []string
	for _, id := range ids {
		s = append(s, id.String())
	}
	return strings.Join(s, ", ")
}

// matches reports whether subject and issuer are id's: equal to the exact
// values, or matching the regular expressions (an invalid one matches
// nothing).
func (id Identity) matches(subject, issuer string) bool {
	one := func(exact, re, s string) bool {
		if re == "" {
			return exact == s
		}
		r, err := regexp.Compile(re)
		return err == nil && r.MatchString(s)
	}
	return one(id.Subject, id.SubjectRegexp, subject) && one(id.Issuer, id.IssuerRegexp, issuer)
}
