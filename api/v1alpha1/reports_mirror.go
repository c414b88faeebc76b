package v1alpha1

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/words"
)

// MirrorPlanReport is what `stowage mirror --dry-run -o json|yaml` prints:
// where the images go, each image and whether the destination holds it,
// and the unique blobs and bytes to move (a blob shared by several images
// counted once).
type MirrorPlanReport struct {
	// Destination is the destination as the messages name it: --to, or
	// the site the config or the bundle names.
	Destination string `json:"destination"`
	// Images are the images planned, failed ones left out (see Errors).
	Images []MirrorImage `json:"images"`
	// Present and Missing count Images the destination holds and lacks.
	Present int `json:"present"`
	Missing int `json:"missing"`
	// Blobs and Bytes are the unique blobs to move and their compressed
	// size; Mounts the blobs mounted from another repository of the
	// destination; Manifests the manifests to write.
	Blobs     int   `json:"blobs"`
	Bytes     int64 `json:"bytes"`
	Mounts    int   `json:"mounts"`
	Manifests int   `json:"manifests"`
	// OmittedBlobs and OmittedBytes are what a delta bundle (--have)
	// leaves out because the site holds it.
	OmittedBlobs int   `json:"omittedBlobs,omitempty"`
	OmittedBytes int64 `json:"omittedBytes,omitempty"`
	// Roles are the bytes to move per OpenPAI node role; absent without
	// OpenPAI.
	Roles []MirrorRoleBytes `json:"roles,omitempty"`
	// Attachments are the signatures, attestations, SBOMs and referrers
	// attached to the images (absent with --no-attachments or when
	// there are none); AttachmentBlobs and AttachmentBytes are their
	// unique blobs to move (within blobs and bytes).
	Attachments     []MirrorAttachment `json:"attachments,omitempty"`
	AttachmentBlobs int                `json:"attachmentBlobs,omitempty"`
	AttachmentBytes int64              `json:"attachmentBytes,omitempty"`
	// Verify are the images whose signatures are verified at the
	// destination after the copy, with their policies' fields; empty
	// into a bundle, with --no-verify, or without a policy.
	Verify []MirrorVerify `json:"verify,omitempty"`
	// TrustFiles are the keys and trusted roots of those policies (a
	// bundle records them, and the push from it verifies with them), by
	// content digest; TrustImages counts the images they apply to.
	TrustFiles  []MirrorTrustFile `json:"trustFiles,omitempty"`
	TrustImages int               `json:"trustImages,omitempty"`
	// SiteTrust names the trust a push from a bundle (--from) verifies
	// the site's copy under: the site's own file, or the bundle's
	// unauthenticated trust material; absent without --from.
	SiteTrust *MirrorTrust `json:"siteTrust,omitempty"`
	// BundleSignatures are, with --dry-run --from, the signatures the
	// bundle carries checked at the site before anything is pushed, one
	// per image and policy (reference names the bundle).
	BundleSignatures []MirrorSignature `json:"bundleSignatures,omitempty"`
	// Errors are the images that could not be planned, as stderr says.
	Errors []string `json:"errors,omitempty"`

	// Bundle is set when the destination is a bundle (--to oci:); text
	// output only.
	Bundle bool `json:"-"`
}

// MirrorImage is one image of a mirror plan.
type MirrorImage struct {
	// Name is the lock key; Reference the reference as the config
	// writes it.
	Name      string `json:"name"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	Tag       string `json:"tag,omitempty"`
	// Destination is the repository it is written to.
	Destination string `json:"destination"`
	// Present is set when the destination holds it already.
	Present bool `json:"present"`
	// Manifests, Blobs and Bytes are what it takes to copy it.
	Manifests int   `json:"manifests"`
	Blobs     int   `json:"blobs"`
	Bytes     int64 `json:"bytes"`
}

// MirrorRoleBytes are the unique blobs and bytes to move for one OpenPAI
// node role: its images and role "all"'s.
type MirrorRoleBytes struct {
	Role  string `json:"role"`
	Blobs int    `json:"blobs"`
	Bytes int64  `json:"bytes"`
}

// MirrorAttachment is one attachment of a plan.
type MirrorAttachment struct {
	// Image is the lock key of the image it is attached to, Subject the
	// digest of the manifest it hangs off (the image's or a child's).
	Image   string `json:"image"`
	Subject string `json:"subject"`
	// Kind is sig, att, sbom (cosign's tag scheme) or referrer.
	Kind        string `json:"kind"`
	Digest      string `json:"digest"`
	Tag         string `json:"tag,omitempty"`
	Destination string `json:"destination"`
	Present     bool   `json:"present"`
	Blobs       int    `json:"blobs"`
	Bytes       int64  `json:"bytes"`
}

// MirrorVerify is an image of a plan whose signatures are verified at the
// destination after the copy, with the config fields of its policies.
type MirrorVerify struct {
	Image       string   `json:"image"`
	Digest      string   `json:"digest"`
	Destination string   `json:"destination"`
	Policies    []string `json:"policies"`
}

// MirrorTrustFile is a file of the trust material (a key or a trusted
// root) the run verifies with or a bundle records: its path as the config
// wrote it, its policy and its content's digest.
type MirrorTrustFile struct {
	Policy string `json:"policy"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// MirrorTrust is the trust a push from a bundle verifies under.
type MirrorTrust struct {
	// Source is "site" (the operator's file) or "bundle" (the trust
	// material the bundle carries, which nothing authenticates).
	Source string `json:"source"`
	// File and Digest are the site trust file and its content's digest.
	File   string `json:"file,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Authenticated is false for the bundle's own trust.
	Authenticated bool `json:"authenticated"`
}

// MirrorSignature is one verification of an image's signature under one
// of its policies.
type MirrorSignature struct {
	// Image is the lock key; Reference the copy verified.
	Image     string `json:"image"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	// Policy is the config field of the policy.
	Policy string `json:"policy"`
	// Mode is required or optional.
	Mode     string           `json:"mode"`
	Verified bool             `json:"verified"`
	Signer   *ImageLockSigner `json:"signer,omitempty"`
	// Error says why it did not verify.
	Error string `json:"error,omitempty"`

	// Written is the image's reference as the config writes it; text
	// output only.
	Written string `json:"-"`
}

// MirrorReport is what `stowage mirror -o json|yaml` prints after a run,
// also when it fails: the plan it carried out, what it copied, and every
// error (a failed image's by name).
type MirrorReport struct {
	// OK is true when every image was copied and verified.
	OK bool `json:"ok"`
	// Plan is the plan as --dry-run -o json prints it.
	Plan MirrorPlanReport `json:"plan"`
	// Copied and Present count the images this run copied and those
	// already at the destination; Verified is their sum, each checked.
	Copied   int `json:"copied"`
	Present  int `json:"present"`
	Verified int `json:"verified"`
	// AttachmentsCopied and AttachmentsPresent count the same for what
	// is attached to the images (absent when nothing is).
	AttachmentsCopied  int `json:"attachmentsCopied,omitempty"`
	AttachmentsPresent int `json:"attachmentsPresent,omitempty"`
	// Bytes is the blob bytes moved (retries included).
	Bytes int64 `json:"bytes"`
	// Signatures are the verifications of the images' signatures at
	// the destination, one per image and policy.
	Signatures []MirrorSignature `json:"signatures,omitempty"`
	// Errors are the run's errors, each as stderr says it.
	Errors []string `json:"errors"`

	// Attachments is the number of attachments planned, failed ones
	// included; text output only.
	Attachments int `json:"-"`
}

// PushReport is what `stowage push -o json|yaml` prints: the tag pushed
// and the artifact's digest.
type PushReport struct {
	// Reference is the tag pushed, REGISTRY/REPOSITORY:TAG.
	Reference string `json:"reference"`
	// Digest is the artifact's manifest digest.
	Digest string `json:"digest"`
	// SecretsLeftOut are the Secrets (namespace/name) left out of the
	// artifact, without --include-secrets.
	SecretsLeftOut []string `json:"secretsLeftOut,omitempty"`
}

// WriteText writes the pushed reference with its digest:
// REGISTRY/REPOSITORY:TAG@sha256:….
func (r PushReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s@%s\n", r.Reference, r.Digest)
	return err
}

// WriteText writes the plan as a table of images (reference, digest,
// status, blobs, bytes, destination), then a line of totals, and the
// lines for what is attached, what is verified, the bundle's signatures,
// the trust used, a delta bundle's omissions, the bytes per OpenPAI role
// and each failed image.
func (r *MirrorPlanReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tSTATUS\tBLOBS\tBYTES\tDESTINATION")
	for _, im := range r.Images {
		status := "missing"
		if im.Present {
			status = "present"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", escape.Line(im.Reference), escape.Line(shortDigest(im.Digest)), status, im.Blobs, words.Bytes(im.Bytes), escape.Line(im.Destination))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s: %d present, %d missing; to move: %d unique blobs, %s (compressed, each blob once), %d mounts, %d manifests\n",
		words.Count(len(r.Images), "image"), r.Present, r.Missing, r.Blobs, words.Bytes(r.Bytes), r.Mounts, r.Manifests)
	if n := len(r.Attachments); n > 0 {
		present := 0
		for _, a := range r.Attachments {
			if a.Present {
				present++
			}
		}
		fmt.Fprintf(w, "attached to them (signatures, attestations, SBOMs, referrers): %d, %d present, %d missing; %d unique blobs, %s of the above\n",
			n, present, n-present, r.AttachmentBlobs, words.Bytes(r.AttachmentBytes))
	}
	r.writeVerify(w)
	writeBundleSignatures(w, r.BundleSignatures)
	r.SiteTrust.writeText(w)
	if r.OmittedBlobs > 0 {
		fmt.Fprintf(w, "left out of the delta bundle (the site holds them, --have): %d blobs, %s\n", r.OmittedBlobs, words.Bytes(r.OmittedBytes))
	}
	if len(r.Roles) > 0 {
		fmt.Fprintln(w, "\nbytes to move per OpenPAI node role (its images and role \"all\"'s; a blob shared between roles is in each):")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "ROLE\tBLOBS\tBYTES\t")
		for _, ro := range r.Roles {
			fmt.Fprintf(tw, "%s\t%d\t%s\t\n", ro.Role, ro.Blobs, words.Bytes(ro.Bytes))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, e := range r.Errors {
		if _, err := fmt.Fprintf(w, "failed: %s\n", escape.Text(e)); err != nil {
			return err
		}
	}
	return nil
}

// writeVerify writes what the run will verify, or what the bundle
// records, under the plan. A file several policies read (every
// environment of a vendor's set under one key) is named once; -o json
// lists it per policy.
func (r *MirrorPlanReport) writeVerify(w io.Writer) {
	if len(r.Verify) == 0 && len(r.TrustFiles) == 0 {
		return
	}
	var files []string
	seen := map[string]bool{}
	for _, f := range r.TrustFiles {
		if s := f.Path + " " + shortDigest(f.Digest); !seen[s] {
			seen[s] = true
			files = append(files, s)
		}
	}
	if r.Bundle {
		fmt.Fprintf(w, "the bundle records the verify policies of %s and their trust material (%s); the push from it verifies them at the site\n", words.Count(r.TrustImages, "image"), escape.Line(strings.Join(files, ", ")))
		return
	}
	fmt.Fprintf(w, "after the copy, the signatures of %s are verified at the destination under their verify policies, offline (%s)\n", words.Count(len(r.Verify), "image"), escape.Line(strings.Join(files, ", ")))
}

// writeBundleSignatures writes how many of a --dry-run --from's checks of
// the bundle's signatures verified, and each that did not.
func writeBundleSignatures(w io.Writer, sigs []MirrorSignature) {
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

// writeText says which trust a push from a bundle verified under; nothing
// for a nil t (no --from).
func (t *MirrorTrust) writeText(w io.Writer) {
	switch {
	case t == nil:
	case t.Source == "site":
		fmt.Fprintf(w, "trust: the site trust %s (%s)\n", escape.Line(t.File), t.Digest)
	default:
		fmt.Fprintf(w, "trust: the bundle's own trust material, unauthenticated (no --trust, no %s)\n", SiteTrustEnv)
	}
}

// WriteText writes what a run did: the images and bytes, the attachments,
// the signatures verified, the blobs a delta bundle left out, and the
// trust a push from a bundle verified under. The warnings for signatures
// that did not verify under optional policies are WriteWarnings'.
func (r *MirrorReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %s copied, %d already there, %s of blobs moved (%d unique blobs planned, %d mounted); %d verified\n",
		r.Plan.Destination, words.Count(r.Copied, "image"), r.Present, words.Bytes(r.Bytes), r.Plan.Blobs, r.Plan.Mounts, r.Verified)
	if r.Attachments > 0 {
		fmt.Fprintf(w, "attachments (signatures, attestations, SBOMs, referrers): %d copied, %d already there; %d verified\n",
			r.AttachmentsCopied, r.AttachmentsPresent, r.AttachmentsCopied+r.AttachmentsPresent)
	}
	if len(r.Signatures) > 0 {
		ok, images := 0, map[string]bool{}
		for _, s := range r.Signatures {
			images[s.Reference] = true
			if s.Verified {
				ok++
			}
		}
		fmt.Fprintf(w, "signatures: %d of %d checks verified at %s (%s, under their verify policies, offline)\n", ok, len(r.Signatures), r.Plan.Destination, words.Count(len(images), "image"))
	}
	if r.Plan.OmittedBlobs > 0 {
		fmt.Fprintf(w, "%d blobs (%s) left out of the delta bundle: the site holds them (--have); the push mounts them there\n", r.Plan.OmittedBlobs, words.Bytes(r.Plan.OmittedBytes))
	}
	r.Plan.SiteTrust.writeText(w)
	return nil
}

// WriteWarnings writes a warning for each signature that did not verify
// under an optional policy (a required one's failure is among Errors).
func (r *MirrorReport) WriteWarnings(w io.Writer) {
	for _, s := range r.Signatures {
		if !s.Verified && s.Mode != VerifyRequired {
			fmt.Fprintf(w, "stowage: warning: image %q: %s: %s (its policy %s is optional)\n", escape.Line(s.Written), escape.Line(s.Reference), escape.Line(s.Error), s.Policy)
		}
	}
}

// shortDigest is d's algorithm and its first 12 hex digits.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
