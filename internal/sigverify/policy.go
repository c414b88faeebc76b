package sigverify

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/trustfile"
)

// Policy is a config's verify policy with its files read.
type Policy struct {
	// At is the field the policy is written at ("verify",
	// "images.NAME.verify"), for messages and reports.
	At string
	// Spec is the policy as written, its file paths as the config gives
	// them.
	Spec v1alpha1.Verify
	// Files are the contents of the files Spec names (its keys and its
	// trusted root), keyed by the path as written: what a bundle carries
	// so that the site verifies with the same trust.
	Files map[string][]byte
	// Keys are the cosign public keys trusted.
	Keys []*Key
	// Identities are the keyless signers trusted, checked against Trusted.
	Identities []Identity
	// Trusted is the trusted root of Identities; nil without identities.
	Trusted root.TrustedMaterial
	// Required says a digest that does not verify is refused (else pinned
	// with a warning).
	Required bool
}

// LoadPolicy reads v's keys and trusted root from dir, each confined to
// it (internal/confined, like a file: password) and bounded by
// trustfile.Key and trustfile.TrustedRoot. nil v gives a nil Policy. Errors name the field
// (at, "verify" or "images.NAME.verify", then ".keys[0]") and the file.
func LoadPolicy(dir, at string, v *v1alpha1.Verify) (*Policy, error) {
	return PolicyFrom(at, v, func(path string, k confined.Kind) ([]byte, error) {
		return confined.ReadFile(dir, path, k)
	})
}

// PolicyFrom is LoadPolicy with the files read by read (path as v writes
// it, and the kind that bounds it): from a config directory, or from the
// trust material a bundle carries. nil v gives a nil Policy. Errors name
// the field (at, then ".keys[0]" or ".trustedRoot") and the file.
func PolicyFrom(at string, v *v1alpha1.Verify, read func(path string, k confined.Kind) ([]byte, error)) (*Policy, error) {
	if v == nil {
		return nil, nil
	}
	p := &Policy{At: at, Spec: *v, Files: map[string][]byte{}, Required: v.Required()}
	for i, k := range v.Keys {
		data, err := read(k, trustfile.Key)
		if err != nil {
			return nil, fmt.Errorf("%s.keys[%d]: %w", at, i, err)
		}
		key, err := LoadKey(k, data)
		if err != nil {
			return nil, fmt.Errorf("%s.keys[%d]: %w", at, i, err)
		}
		p.Keys = append(p.Keys, key)
		p.Files[k] = data
	}
	for _, id := range v.Identities {
		p.Identities = append(p.Identities, Identity{Subject: id.Identity, SubjectRegexp: id.IdentityRegexp, Issuer: id.Issuer, IssuerRegexp: id.IssuerRegexp})
	}
	if v.TrustedRoot != "" {
		data, err := read(v.TrustedRoot, trustfile.TrustedRoot)
		if err != nil {
			return nil, fmt.Errorf("%s.trustedRoot: %w", at, err)
		}
		tr, err := root.NewTrustedRootFromJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s.trustedRoot: trusted root %s: %w", at, v.TrustedRoot, err)
		}
		p.Trusted = tr
		p.Files[v.TrustedRoot] = data
	}
	return p, nil
}

// Check verifies digest h of repo (read through pl) under p: with its keys
// (Verify), then with its identities (VerifyKeyless). It returns the first
// signer that verifies. Errors: one *Error with the reasons of both, or
// the registry's.
func (p *Policy) Check(ctx context.Context, repo name.Repository, pl *remote.Puller, h v1.Hash) (*Signer, error) {
	all := &Error{Image: repo.Name(), Digest: h.String()}
	try := func(s *Signer, err error) (*Signer, error) {
		var verr *Error
		if errors.As(err, &verr) {
			all.Reasons = append(all.Reasons, verr.Reasons...)
			return nil, nil
		}
		return s, err
	}
	if len(p.Keys) > 0 {
		if s, err := try(Verify(ctx, repo, pl, h, p.Keys)); s != nil || err != nil {
			return s, err
		}
	}
	if len(p.Identities) > 0 && p.Trusted != nil {
		if s, err := try(VerifyKeyless(ctx, repo, pl, h, p.Trusted, p.Identities)); s != nil || err != nil {
			return s, err
		}
	}
	return nil, all
}

// Trusts reports whether a signer recorded in a lock is still one p
// trusts, so that its entry need not be verified again: its key is among
// p's keys, or p has identities and it is a keyless signer whose identity
// and issuer one of them names exactly or matches.
func (p *Policy) Trusts(s *v1alpha1.ImageLockSigner) bool {
	if s == nil {
		return false
	}
	if s.Key != "" {
		for _, k := range p.Keys {
			if k.Fingerprint == s.Key {
				return true
			}
		}
		return false
	}
	for _, id := range p.Identities {
		if id.matches(s.Identity, s.Issuer) {
			return true
		}
	}
	return false
}
