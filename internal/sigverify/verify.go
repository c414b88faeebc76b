// Package sigverify checks, offline, that an image digest carries a
// signature by a trusted signer, with sigstore-go's verifier: the
// signatures come from the registry (cosign's tag scheme
// "sha256-<hex>.sig", and Sigstore bundles attached as OCI 1.1 referrers),
// the trust from what is given — cosign public keys (Verify), or keyless
// identities and a trusted_root.json (VerifyKeyless). Nothing is asked of
// Rekor, Fulcio or a TUF mirror. With a key no transparency log entry or
// timestamp is required, so a signature is accepted on the key alone (what
// `cosign verify --key --insecure-ignore-tlog` accepts); keyless, the
// bundle's log entry and timestamp are checked against the trusted root.
//
// It is the verifier `lock` and `bump` call before pinning a digest, and
// `mirror` after copying, against the site's copy; LoadPolicy reads a
// config's verify policy, PolicyFrom one a bundle carries.
package sigverify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/stowage/stowage/api/v1alpha1"
)

// Media types and annotations of cosign's signatures.
const (
	// signatureAnnotation holds a tag-scheme signature's base64
	// signature of its layer (the simple-signing payload).
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// bundleType is the artifact type of a Sigstore bundle (v0.3)
	// attached as a referrer by `cosign sign --new-bundle-format`.
	bundleType = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// Bounds on what is read from a registry for one image.
const (
	// MaxSignatures bounds the signature layers of one .sig manifest
	// and the bundles among its referrers, each: 100.
	MaxSignatures = 100
	// maxPayload bounds a signature payload or a bundle: 1 MiB.
	maxPayload = 1 << 20
)

// Key is a cosign public key trusted to sign images.
type Key struct {
	// Name is where the key came from (a file name), for messages.
	Name string
	// Fingerprint is "sha256:" and the hex SHA-256 of the key's DER
	// SubjectPublicKeyInfo: what the lock records as the signer.
	Fingerprint string
	verifier    signature.Verifier
}

// LoadKey parses a PEM public key (cosign.pub). Errors name the key.
func LoadKey(name string, pemBytes []byte) (*Key, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("key %s: not a PEM public key: %w", name, err)
	}
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", name, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", name, err)
	}
	sum := sha256.Sum256(der)
	return &Key{Name: name, Fingerprint: "sha256:" + hex.EncodeToString(sum[:]), verifier: v}, nil
}

// Signer is what verified an image.
type Signer struct {
	// Key is the fingerprint of the key that verified (Key.Fingerprint).
	Key string
	// Signature is the digest of the manifest that carries the
	// signature: the .sig manifest, or the bundle referrer.
	Signature string
	// Kind is the signature's format: v1alpha1.SignatureTag (cosign's
	// tag scheme) or v1alpha1.SignatureBundle (a Sigstore bundle
	// referrer), what the lock records as verifiedBy.format.
	Kind string
	// Identity and Issuer are a keyless signer's certificate subject and
	// OIDC issuer (VerifyKeyless); empty for a key.
	Identity, Issuer string
}

// Error is an image digest that no trusted signer signed: Reasons says, per
// signature found (or that none was), why it did not verify.
type Error struct {
	// Image is the repository, Digest the digest asked about.
	Image, Digest string
	Reasons       []string
}

// Error names the image, the digest and every reason.
func (e *Error) Error() string {
	return fmt.Sprintf("image %s@%s: no trusted signature: %s", e.Image, e.Digest, strings.Join(e.Reasons, "; "))
}

// Verify checks that digest h in repo (read through p) carries a
// signature that one of keys verifies and that names h: a cosign
// tag-scheme signature (its simple-signing payload's
// critical.image.docker-manifest-digest) or a Sigstore bundle referrer
// (its in-toto statement's subject). It returns the first that verifies,
// tag-scheme signatures first, each in digest order. Errors: *Error when
// none verifies (unsigned, a wrong key, a tampered signature, a signature
// of another digest), else the registry's.
func Verify(ctx context.Context, repo name.Repository, p *remote.Puller, h v1.Hash, keys []*Key) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("no key to verify with")
	}
	verr := &Error{Image: repo.Name(), Digest: h.String()}
	// cosign's tag scheme.
	tag := repo.Tag(h.Algorithm + "-" + h.Hex + ".sig")
	desc, err := p.Get(ctx, tag)
	switch {
	case isNotFound(err):
		verr.Reasons = append(verr.Reasons, "no signature tag "+tag.TagStr())
	case err != nil:
		return nil, fmt.Errorf("image %s@%s: GET %s: %w", repo.Name(), h, tag.TagStr(), err)
	default:
		s, reasons, err := verifyTagged(ctx, repo, p, desc, h, keys)
		if err != nil {
			return nil, err
		}
		if s != nil {
			return s, nil
		}
		verr.Reasons = append(verr.Reasons, reasons...)
	}
	// Sigstore bundles among the referrers.
	bundles, err := bundleReferrers(ctx, repo, p, h)
	if err != nil {
		return nil, err
	}
	if len(bundles) == 0 {
		verr.Reasons = append(verr.Reasons, "no Sigstore bundle among the referrers")
	}
	for _, d := range bundles {
		s, reason, err := verifyBundle(ctx, repo, p, d, h, keys)
		if err != nil {
			return nil, err
		}
		if s != nil {
			return s, nil
		}
		verr.Reasons = append(verr.Reasons, reason)
	}
	return nil, verr
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// verifyTagged verifies the layers of a .sig manifest.
func verifyTagged(ctx context.Context, repo name.Repository, p *remote.Puller, desc *remote.Descriptor, h v1.Hash, keys []*Key) (*Signer, []string, error) {
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, []string{fmt.Sprintf("signature %s: not an image manifest: %v", desc.Digest, err)}, nil
	}
	if len(m.Layers) > MaxSignatures {
		return nil, nil, fmt.Errorf("image %s@%s: signature %s has %d layers, more than the %d read", repo.Name(), h, desc.Digest, len(m.Layers), MaxSignatures)
	}
	var reasons []string
	for i, l := range m.Layers {
		where := fmt.Sprintf("signature %s layer %d", desc.Digest, i)
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[signatureAnnotation])
		if err != nil || len(sig) == 0 {
			reasons = append(reasons, where+": no "+signatureAnnotation+" annotation")
			continue
		}
		payload, err := readBlob(ctx, repo, p, l)
		if err != nil {
			return nil, nil, fmt.Errorf("image %s@%s: %s: %w", repo.Name(), h, where, err)
		}
		signed, err := payloadDigest(payload)
		if err != nil {
			reasons = append(reasons, where+": "+err.Error())
			continue
		}
		var keyErrs []string
		for _, k := range keys {
			err := verifyWith(k, &legacySignature{payload: payload, sig: sig}, verify.WithArtifact(bytes.NewReader(payload)))
			if err != nil {
				keyErrs = append(keyErrs, fmt.Sprintf("does not verify with key %s (%s)", k.Name, k.Fingerprint))
				continue
			}
			if signed != h.String() {
				keyErrs = append(keyErrs, fmt.Sprintf("verifies with key %s but signs %s, another digest", k.Name, signed))
				continue
			}
			return &Signer{Key: k.Fingerprint, Signature: desc.Digest.String(), Kind: v1alpha1.SignatureTag}, nil, nil
		}
		reasons = append(reasons, where+": "+strings.Join(keyErrs, ", "))
	}
	if len(m.Layers) == 0 {
		reasons = append(reasons, fmt.Sprintf("signature %s: no layers", desc.Digest))
	}
	return nil, reasons, nil
}

// bundleReferrers lists the Sigstore bundles among the referrers of h,
// in digest order, at most MaxSignatures.
func bundleReferrers(ctx context.Context, repo name.Repository, p *remote.Puller, h v1.Hash) ([]v1.Descriptor, error) {
	idx, err := remote.Referrers(repo.Digest(h.String()), remote.Reuse(p), remote.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("image %s@%s: referrers: %w", repo.Name(), h, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image %s@%s: referrers: %w", repo.Name(), h, err)
	}
	var bundles []v1.Descriptor
	for _, d := range im.Manifests {
		if d.ArtifactType == bundleType {
			bundles = append(bundles, d)
		}
	}
	sort.Slice(bundles, func(i, j int) bool { return bundles[i].Digest.String() < bundles[j].Digest.String() })
	if len(bundles) > MaxSignatures {
		return nil, fmt.Errorf("image %s@%s: %d Sigstore bundles among the referrers, more than the %d read", repo.Name(), h, len(bundles), MaxSignatures)
	}
	return bundles, nil
}

// loadBundle reads the Sigstore bundle referrer d; reason says why it is
// not one.
func loadBundle(ctx context.Context, repo name.Repository, p *remote.Puller, d v1.Descriptor, h v1.Hash) (*bundle.Bundle, string, error) {
	where := "Sigstore bundle " + d.Digest.String()
	desc, err := p.Get(ctx, repo.Digest(d.Digest.String()))
	if err != nil {
		return nil, "", fmt.Errorf("image %s@%s: %s: %w", repo.Name(), h, where, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil || len(m.Layers) != 1 {
		return nil, where + ": want a manifest with one layer", nil
	}
	raw, err := readBlob(ctx, repo, p, m.Layers[0])
	if err != nil {
		return nil, "", fmt.Errorf("image %s@%s: %s: %w", repo.Name(), h, where, err)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, where + ": " + err.Error(), nil
	}
	return &b, "", nil
}

// verifyBundle verifies a Sigstore bundle referrer against h.
func verifyBundle(ctx context.Context, repo name.Repository, p *remote.Puller, d v1.Descriptor, h v1.Hash, keys []*Key) (*Signer, string, error) {
	where := "Sigstore bundle " + d.Digest.String()
	b, reason, err := loadBundle(ctx, repo, p, d, h)
	if b == nil {
		return nil, reason, err
	}
	digest, err := hex.DecodeString(h.Hex)
	if err != nil {
		return nil, "", err
	}
	var keyErrs []string
	for _, k := range keys {
		if err := verifyWith(k, b, verify.WithArtifactDigest(h.Algorithm, digest)); err != nil {
			keyErrs = append(keyErrs, fmt.Sprintf("does not verify with key %s (%s) for this digest: %v", k.Name, k.Fingerprint, err))
			continue
		}
		return &Signer{Key: k.Fingerprint, Signature: d.Digest.String(), Kind: v1alpha1.SignatureBundle}, "", nil
	}
	return nil, where + ": " + strings.Join(keyErrs, ", "), nil
}

// verifyWith runs sigstore-go's verifier with k as the only trusted
// material, no transparency log and no timestamp required.
func verifyWith(k *Key, e verify.SignedEntity, artifact verify.ArtifactPolicyOption) error {
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(k.verifier, time.Time{}, time.Time{}), nil
	})
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return err
	}
	_, err = v.Verify(e, verify.NewPolicy(artifact, verify.WithKey()))
	return err
}

// readBlob reads blob d of repo, at most maxPayload bytes, checked against
// its digest.
func readBlob(ctx context.Context, repo name.Repository, p *remote.Puller, d v1.Descriptor) ([]byte, error) {
	if d.Size > maxPayload {
		return nil, fmt.Errorf("blob %s is %d bytes, more than the %d read", d.Digest, d.Size, maxPayload)
	}
	l, err := p.Layer(ctx, repo.Digest(d.Digest.String()))
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	if len(b) > maxPayload {
		return nil, fmt.Errorf("blob %s is more than %d bytes", d.Digest, maxPayload)
	}
	if got := sha256.Sum256(b); "sha256:"+hex.EncodeToString(got[:]) != d.Digest.String() {
		return nil, fmt.Errorf("blob %s: content has another digest", d.Digest)
	}
	return b, nil
}

// payloadDigest is the digest a simple-signing payload signs.
func payloadDigest(payload []byte) (string, error) {
	var p struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", fmt.Errorf("payload is not a simple-signing document: %v", err)
	}
	if p.Critical.Image.Digest == "" {
		return "", errors.New("payload names no critical.image.docker-manifest-digest")
	}
	return p.Critical.Image.Digest, nil
}

// legacySignature is a cosign tag-scheme signature as sigstore-go's
// SignedEntity: a message signature over the payload, by a public key, with
// no log entry and no timestamp.
type legacySignature struct {
	verify.BaseSignedEntity
	payload, sig []byte
}

// Version is the bundle format whose checks apply: v0.3's.
func (l *legacySignature) Version() (string, error) { return "v0.3", nil }

// TlogEntries: none (no transparency log is asked).
func (l *legacySignature) TlogEntries() ([]*tlog.Entry, error) { return nil, nil }

// Timestamps: none.
func (l *legacySignature) Timestamps() ([][]byte, error) { return nil, nil }

// VerificationContent is a public key; the trusted material given to the
// verifier holds the one key tried.
func (l *legacySignature) VerificationContent() (verify.VerificationContent, error) {
	return &bundle.PublicKey{}, nil
}

// SignatureContent is the signature over the payload's SHA-256.
func (l *legacySignature) SignatureContent() (verify.SignatureContent, error) {
	sum := sha256.Sum256(l.payload)
	return bundle.NewMessageSignature(sum[:], "SHA2_256", l.sig), nil
}
