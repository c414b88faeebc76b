package v1alpha1

// ImageLock is stowage.lock.yaml: every image reference of a config pinned
// to a digest. It is a KRM object kustomize never applies (metadata carries
// the config.kubernetes.io/local-config: "true" annotation):
//
//	apiVersion: stowage.dev/v1alpha1
//	kind: ImageLock
//	metadata:
//	  name: stowage-lock
//	  annotations:
//	    config.kubernetes.io/local-config: "true"
//	spec:
//	  images:
//	  - name: docker.io/library/busybox:1.31.1
//	    reference: busybox:1.31.1
//	    digest: sha256:<64 hex>
//	    kind: index
//	    platforms:
//	    - platform: linux/amd64
//	      digest: sha256:<64 hex>
//	      size: 1234
//
// Entries are sorted by name and carry no timestamps, so a bump changes
// only the lines of the digests that moved.
type ImageLock struct {
	// APIVersion is APIVersion.
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	// Kind is ImageLockKind.
	Kind     string        `json:"kind" yaml:"kind"`
	Metadata ObjectMeta    `json:"metadata" yaml:"metadata"`
	Spec     ImageLockSpec `json:"spec" yaml:"spec"`
}

const (
	// ImageLockKind is the kind of an ImageLock.
	ImageLockKind = "ImageLock"
	// ImageLockFile is the lock's file name, beside the config.
	ImageLockFile = "stowage.lock.yaml"
	// ImageLockName is the metadata.name stowage writes.
	ImageLockName = "stowage-lock"
)

// ImageLockSpec holds the lock's entries.
type ImageLockSpec struct {
	// Images are the entries, sorted by Name.
	Images []ImageLockEntry `json:"images" yaml:"images"`
}

// DigestKind says what an entry's digest points at.
type DigestKind string

const (
	// KindIndex is an OCI image index or a Docker manifest list: the entry
	// records its per-platform children.
	KindIndex DigestKind = "index"
	// KindManifest is a single image manifest.
	KindManifest DigestKind = "manifest"
)

// ImageLockEntry is the lock record of one normalised image reference.
type ImageLockEntry struct {
	// Name is the lock key: the reference normalised, registry and tag
	// spelled out, e.g. "docker.io/library/busybox:1.31.1".
	Name string `json:"name" yaml:"name"`
	// Reference is the reference as written in the config, e.g.
	// "busybox:1.31.1".
	Reference string `json:"reference" yaml:"reference"`
	// Digest is the resolved digest, "sha256:<64 hex>": the index digest for
	// KindIndex, the manifest digest for KindManifest.
	Digest string `json:"digest" yaml:"digest"`
	// Kind says whether Digest is an index or a single manifest.
	Kind DigestKind `json:"kind" yaml:"kind"`
	// Platform is a single manifest's platform, os/arch[/variant] as its
	// config gives it, recorded when a use asks for platforms so that a
	// requested platform is checked offline; empty otherwise, and always
	// for an index (its children carry theirs).
	Platform string `json:"platform,omitempty" yaml:"platform,omitempty"`
	// Platforms lists an index's children, sorted by Platform; empty for a
	// manifest.
	Platforms []ImageLockPlatform `json:"platforms,omitempty" yaml:"platforms,omitempty"`
	// Size is a manifest's config plus compressed layers, in bytes; 0 when
	// unknown and always 0 for an index (its sizes are per platform).
	Size int64 `json:"size,omitempty" yaml:"size,omitempty"`
	// VerifiedBy is what verified Digest under the config's verify
	// policy; nil when no policy applies, or when under an optional
	// policy nothing did.
	VerifiedBy *ImageLockSigner `json:"verifiedBy,omitempty" yaml:"verifiedBy,omitempty"`
}

// ImageLockSigner is what verified an entry's digest: a cosign key (Key)
// or a keyless certificate (Identity and Issuer), and the signature.
type ImageLockSigner struct {
	// Key is the fingerprint of the public key, "sha256:" and the hex
	// SHA-256 of its DER SubjectPublicKeyInfo.
	Key string `json:"key,omitempty" yaml:"key,omitempty"`
	// Identity is a keyless certificate's subject alternative name.
	Identity string `json:"identity,omitempty" yaml:"identity,omitempty"`
	// Issuer is a keyless certificate's OIDC issuer.
	Issuer string `json:"issuer,omitempty" yaml:"issuer,omitempty"`
	// Signature is the digest of the manifest carrying the signature
	// (the .sig manifest or the Sigstore bundle referrer), "sha256:<64 hex>".
	Signature string `json:"signature" yaml:"signature"`
	// Format is the signature's format, SignatureTag or SignatureBundle:
	// which admission engines can read it at the site. Empty in a lock
	// written before stowage recorded it (`stowage lock` verifies such an
	// entry again and records it).
	Format string `json:"format,omitempty" yaml:"format,omitempty"`
}

// The formats of a signature (ImageLockSigner.Format).
const (
	// SignatureTag is cosign's tag scheme: a manifest tagged
	// "sha256-<hex>.sig" in the image's repository, whose layers are
	// simple-signing payloads (cosign 2's default).
	SignatureTag = "sig"
	// SignatureBundle is a Sigstore bundle (application/vnd.dev.sigstore.bundle.v0.3+json)
	// attached to the digest as an OCI 1.1 referrer (cosign 3's default).
	SignatureBundle = "bundle"
)

// ImageLockPlatform is one child of an index entry.
type ImageLockPlatform struct {
	// Platform is os/arch[/variant][:osversion] as go-containerregistry's
	// v1.Platform.String() writes it, e.g. "linux/arm64/v8".
	Platform string `json:"platform" yaml:"platform"`
	// Digest is the child manifest digest, "sha256:<64 hex>".
	Digest string `json:"digest" yaml:"digest"`
	// Size is the child's config plus compressed layers, in bytes; 0 when
	// unknown.
	Size int64 `json:"size,omitempty" yaml:"size,omitempty"`
}
