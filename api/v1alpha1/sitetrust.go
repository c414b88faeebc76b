package v1alpha1

// SiteTrustKind is the kind of a SiteTrust file.
const SiteTrustKind = "SiteTrust"

// SiteTrustEnv is the environment variable naming the site trust file
// when `mirror --from` is given no --trust.
const SiteTrustEnv = "STOWAGE_SITE_TRUST"

// SiteTrust is the trust a site operator gives `stowage mirror --from`
// (--trust FILE, or the file STOWAGE_SITE_TRUST names), kept at the site,
// outside any bundle: the signers every image pushed from a bundle must be
// signed by. With it, a bundle whose own trust material is missing, weaker
// (an optional policy) or trusts a signer this file does not, or that has
// an image under no policy, is refused before anything is pushed, and the
// site's copy of each image is verified under Verify, not under what the
// bundle carries.
type SiteTrust struct {
	// APIVersion is APIVersion; Kind is SiteTrustKind.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Verify is the policy, in the config's verify shape: its keys and
	// trusted root are paths relative to the file's directory. Mode
	// defaults to required.
	Verify Verify `json:"verify"`
	// Unverified are the lock keys of images the operator accepts from a
	// bundle without a signature (an OCI artifact stowage push wrote,
	// say); every other image must verify.
	Unverified []string `json:"unverified,omitempty"`
}
