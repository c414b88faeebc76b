package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/sigverify"
)

// sitePolicies are the verify policies of a mirror run, by lock key, and
// the trust material they make (what a bundle records).
type sitePolicies struct {
	pols  map[string][]*sigverify.Policy
	trust *mirror.Trust
}

// trustOf is the trust material of pols: each image's policies as the
// config wrote them, with the files they read.
func trustOf(pols map[string][]*sigverify.Policy) *mirror.Trust {
	if len(pols) == 0 {
		return nil
	}
	t := &mirror.Trust{}
	keys := make([]string, 0, len(pols))
	for k := range pols {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, p := range pols[k] {
			t.Add(k, mirror.TrustPolicy{At: p.At, Verify: p.Spec, Content: p.Files})
		}
	}
	return t
}

// trustUsed is the trust a push from a bundle verifies under, as the
// reports name it.
type trustUsed struct {
	// Source is "site" (the operator's file) or "bundle" (the trust
	// material the bundle carries, which nothing authenticates).
	Source string `json:"source"`
	// File and Digest are the site trust file and its content's digest.
	File   string `json:"file,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Authenticated is false for the bundle's own trust.
	Authenticated bool `json:"authenticated"`
}

// bundlePolicies are the policies a push from the bundle at path verifies
// under (mirror.SitePolicies): the site trust o.trust names when given,
// else the bundle's own, with a warning on stderr that it is
// unauthenticated; none with --no-verify.
func bundlePolicies(stderr io.Writer, path string, images []mirror.Image, lockBytes []byte, o mirrorOptions) (sitePolicies, *trustUsed, error) {
	if o.noVerify {
		// Asked not to verify: no trust is read (a site trust is a
		// usage error with --no-verify).
		return sitePolicies{}, nil, nil
	}
	var st *mirror.SiteTrust
	used := &trustUsed{Source: "bundle"}
	if o.trust != "" {
		var err error
		if st, err = mirror.LoadSiteTrust(o.trust); err != nil {
			return sitePolicies{}, nil, err
		}
		used = &trustUsed{Source: "site", File: st.Path, Digest: st.Digest, Authenticated: true}
	}
	pols, t, err := mirror.SitePolicies(path, images, lockBytes, st)
	if err != nil {
		return sitePolicies{}, nil, err
	}
	if st == nil {
		fmt.Fprintf(stderr, "stowage: warning: no site trust (--trust FILE or %s): the site's copy is verified with the keys and policies the bundle itself carries, which nothing authenticates (whoever wrote the bundle chose them)\n", mirror.SiteTrustEnv)
	}
	if len(pols) == 0 {
		pols = nil
	}
	if st != nil {
		// The reports name the files verified with: the site's.
		t = trustOf(pols)
	}
	return sitePolicies{pols: pols, trust: t}, used, nil
}

// writeTrustUsed says, in text, which trust a push from a bundle
// verified under.
func writeTrustUsed(w io.Writer, used *trustUsed) {
	switch {
	case used == nil:
	case used.Source == "site":
		fmt.Fprintf(w, "trust: the site trust %s (%s)\n", escape.Line(used.File), used.Digest)
	default:
		fmt.Fprintf(w, "trust: the bundle's own trust material, unauthenticated (no --trust, no %s)\n", mirror.SiteTrustEnv)
	}
}

// withoutAttachments reconciles --no-attachments with the policies: the
// site's copy of an image under a required policy cannot verify without
// its signatures, so that is refused up front (a usage error naming the
// images) unless --no-verify says not to verify; under optional ones
// verification is left out with a note on stderr.
func (sp *sitePolicies) withoutAttachments(stderr io.Writer, noVerify bool) error {
	if noVerify {
		sp.pols, sp.trust = nil, nil
		return nil
	}
	var required, optional []string
	for _, image := range slices.Sorted(maps.Keys(sp.pols)) {
		req := false
		for _, pol := range sp.pols[image] {
			req = req || pol.Required
		}
		if req {
			required = append(required, image+" ("+policyFields(sp.pols[image])+")")
		} else {
			optional = append(optional, image)
		}
	}
	if len(required) > 0 {
		return usageError{fmt.Errorf("--no-attachments leaves the signatures out, so the destination's copy of these images, under a required verify policy, cannot verify: %s; carry them (leave out --no-attachments), or add --no-verify to copy without verifying", strings.Join(required, ", "))}
	}
	if len(optional) > 0 {
		fmt.Fprintf(stderr, "stowage: note: --no-attachments: the signatures of %d images under optional verify policies are not carried, nor verified at the destination\n", len(optional))
	}
	sp.pols, sp.trust = nil, nil
	return nil
}

func policyFields(pols []*sigverify.Policy) string {
	var at []string
	for _, p := range pols {
		at = append(at, p.At)
	}
	return strings.Join(at, ", ")
}

// planVerify is an image of a -o json plan whose signatures are verified
// at the destination after the copy.
type planVerify struct {
	Image       string   `json:"image"`
	Digest      string   `json:"digest"`
	Destination string   `json:"destination"`
	Policies    []string `json:"policies"`
}

// planTrustFile is a file of the trust material (a key or a trusted root)
// the run verifies with or a bundle records: its path as the config wrote
// it, its policy and its digest.
type planTrustFile struct {
	Policy string `json:"policy"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// trustFiles lists t's files, sorted by policy and path.
func trustFiles(t *mirror.Trust) []planTrustFile {
	if t == nil {
		return nil
	}
	var out []planTrustFile
	seen := map[planTrustFile]bool{}
	for _, p := range t.Policies {
		for _, path := range slices.Sorted(maps.Keys(p.Files)) {
			f := planTrustFile{Policy: p.At, Path: path, Digest: p.Files[path]}
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Policy != out[j].Policy {
			return out[i].Policy < out[j].Policy
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// siteSignature is one verification of a run's -o json report.
type siteSignature struct {
	Image     string `json:"image"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	Policy    string `json:"policy"`
	// Mode is required or optional.
	Mode     string       `json:"mode"`
	Verified bool         `json:"verified"`
	Signer   *lock.Signer `json:"signer,omitempty"`
	Error    string       `json:"error,omitempty"`
}

func siteSignatures(rep *mirror.Report) []siteSignature {
	var out []siteSignature
	for _, s := range rep.Signatures {
		ss := siteSignature{Image: s.Name, Reference: s.Reference, Digest: s.Digest.String(), Policy: s.Policy, Mode: "optional", Verified: s.Signer != nil}
		if s.Required {
			ss.Mode = "required"
		}
		if s.Signer != nil {
			ss.Signer = &lock.Signer{Key: s.Signer.Key, Identity: s.Signer.Identity, Issuer: s.Signer.Issuer, Signature: s.Signer.Signature}
		}
		if s.Err != nil {
			ss.Error = s.Err.Error()
		}
		out = append(out, ss)
	}
	return out
}

// writeSignatures prints, after a run, how many images' signatures
// verified at the destination, and warns of each that did not under an
// optional policy (a required one's failure is among the run's errors).
func writeSignatures(stdout, stderr io.Writer, to string, rep *mirror.Report) {
	if len(rep.Signatures) == 0 {
		return
	}
	ok, images := 0, map[string]bool{}
	for _, s := range rep.Signatures {
		images[s.Reference] = true
		switch {
		case s.Signer != nil:
			ok++
		case !s.Required:
			fmt.Fprintf(stderr, "stowage: warning: image %q: %s: %s (its policy %s is optional)\n", escape.Line(s.Written), escape.Line(s.Reference), escape.Line(s.Err.Error()), s.Policy)
		}
	}
	fmt.Fprintf(stdout, "signatures: %d of %d checks verified at %s (%d images, under their verify policies, offline)\n", ok, len(rep.Signatures), to, len(images))
}

// writeVerifyPlan prints what the run will verify, or what the bundle
// records, under the plan.
func writeVerifyPlan(w io.Writer, rep planReport, bundle bool) {
	if len(rep.Verify) == 0 && len(rep.TrustFiles) == 0 {
		return
	}
	// A file several policies read (every environment of a vendor's set
	// under one key) is named once; -o json lists it per policy.
	var files []string
	seen := map[string]bool{}
	for _, f := range rep.TrustFiles {
		if s := f.Path + " " + shortDigest(f.Digest); !seen[s] {
			seen[s] = true
			files = append(files, s)
		}
	}
	if bundle {
		fmt.Fprintf(w, "the bundle records the verify policies of %d images and their trust material (%s); the push from it verifies them at the site\n", rep.TrustImages, escape.Line(strings.Join(files, ", ")))
		return
	}
	fmt.Fprintf(w, "after the copy, the signatures of %d images are verified at the destination under their verify policies, offline (%s)\n", len(rep.Verify), escape.Line(strings.Join(files, ", ")))
}

// writeBundleSignatures prints how many of a --dry-run --from's checks of
// the bundle's signatures verified, and each that did not.
func writeBundleSignatures(w io.Writer, sigs []siteSignature) {
	if len(sigs) == 0 {
		return
	}
	ok := 0
	for _, s := range sigs {
		if s.Verified {
			ok++
			continue
		}
		fmt.Fprintf(w, "not verified (%s policy %s): %s: %s\n", s.Mode, s.Policy, escape.Line(s.Image), escape.Line(s.Error))
	}
	fmt.Fprintf(w, "signatures in the bundle: %d of %d checks verified at the site before the push, offline\n", ok, len(sigs))
}
