// Package trustfile names the two files a verify policy points at, a
// cosign public key and a sigstore trusted_root.json, with the bound each
// is read under. lock and mirror read them to verify signatures
// (internal/sigverify), render to inline them in the admission policies
// (internal/render), and a bundle carries them (internal/mirror): one
// definition, so that every reader refuses the same files.
package trustfile

import "github.com/stowage/stowage/internal/confined"

// The verify policy files, with their bounds.
var (
	// Key is a cosign public key PEM file: 64 KiB at most (an ECDSA
	// P-256 key is under 200 bytes, an RSA-4096 key under 1 KiB).
	Key = confined.Kind{What: "verify key file", Max: 64 << 10}
	// TrustedRoot is a sigstore trusted_root.json: 1 MiB at most (the
	// public-good instance's is about 10 KiB).
	TrustedRoot = confined.Kind{What: "trusted root file", Max: 1 << 20}
	// SiteTrust is a site trust file (v1alpha1.SiteTrust, `mirror
	// --trust`): 1 MiB at most.
	SiteTrust = confined.Kind{What: "site trust file", Max: 1 << 20}
)
