package v1alpha1

import (
	"strings"
	"testing"
)

// TestMirrorPlanNamesEachFileOnce: a key several policies read (every
// environment of a vendor's set under one key) is named once in the text
// plan, each distinct file in the order listed.
func TestMirrorPlanNamesEachFileOnce(t *testing.T) {
	t.Parallel()
	const d1 = "sha256:13dff490d56f0000000000000000000000000000000000000000000000000000"
	const d2 = "sha256:6c1e000000000000000000000000000000000000000000000000000000000000"
	rep := MirrorPlanReport{TrustImages: 7, Bundle: true, TrustFiles: []MirrorTrustFile{
		{Policy: "environments.cuda.verify", Path: "keys/vendor.pub", Digest: d1},
		{Policy: "environments.driver.verify", Path: "keys/vendor.pub", Digest: d1},
		{Policy: "verify", Path: "trust/trusted_root.json", Digest: d2},
	}}
	var b strings.Builder
	rep.writeVerify(&b)
	want := "the bundle records the verify policies of 7 images and their trust material (keys/vendor.pub sha256:13dff490d56f, trust/trusted_root.json sha256:6c1e00000000); the push from it verifies them at the site\n"
	if b.String() != want {
		t.Errorf("writeVerify =\n%q\nwant\n%q", b.String(), want)
	}
}

// TestMirrorReportText: a run's text names the destination, the counts
// and bytes, the signatures verified and the trust used; a signature that
// did not verify under an optional policy is a warning, escaped.
func TestMirrorReportText(t *testing.T) {
	t.Parallel()
	rep := &MirrorReport{Copied: 2, Present: 1, Verified: 3, Bytes: 1_060_000_000, Attachments: 1, AttachmentsCopied: 1,
		Plan: MirrorPlanReport{Destination: "registry.site:5000", Blobs: 4, Mounts: 1, SiteTrust: &MirrorTrust{Source: "site", File: "/etc/t.yaml", Digest: "sha256:ab"}},
		Signatures: []MirrorSignature{
			{Reference: "registry.site:5000/a@sha256:1", Verified: true, Mode: "required"},
			{Reference: "registry.site:5000/b@sha256:2", Mode: "optional", Policy: "verify", Written: "b\x1b[31m", Error: "no signature"},
		}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "registry.site:5000: 2 images copied, 1 already there, 1.06GB of blobs moved (4 unique blobs planned, 1 mounted); 3 verified\n" +
		"attachments (signatures, attestations, SBOMs, referrers): 1 copied, 0 already there; 1 verified\n" +
		"signatures: 1 of 2 checks verified at registry.site:5000 (2 images, under their verify policies, offline)\n" +
		"trust: the site trust /etc/t.yaml (sha256:ab)\n"
	if b.String() != want {
		t.Errorf("WriteText =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	rep.WriteWarnings(&b)
	if got := b.String(); got != `stowage: warning: image "b\\x1b[31m": registry.site:5000/b@sha256:2: no signature (its policy verify is optional)`+"\n" {
		t.Errorf("WriteWarnings = %q", got)
	}
}

// TestPushReportText: push's text is REFERENCE@DIGEST.
func TestPushReportText(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := (PushReport{Reference: "r.example/a:v1", Digest: "sha256:00"}).WriteText(&b); err != nil || b.String() != "r.example/a:v1@sha256:00\n" {
		t.Errorf("WriteText = %q, %v", b.String(), err)
	}
}

// TestMirrorCountsOneImage: the counts of one image read "1 image", in the
// plan's summary line, a run's text and the trust line.
func TestMirrorCountsOneImage(t *testing.T) {
	t.Parallel()
	plan := &MirrorPlanReport{Destination: "registry.site:5000", Present: 1,
		Images: []MirrorImage{{Reference: "registry.example/a:1", Present: true, Destination: "registry.site:5000/a:1"}}}
	var b strings.Builder
	if err := plan.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n1 image: 1 present, 0 missing;") {
		t.Errorf("plan text has no \"1 image: 1 present\":\n%s", b.String())
	}
	run := &MirrorReport{Copied: 1, Plan: MirrorPlanReport{Destination: "registry.site:5000"},
		Signatures: []MirrorSignature{{Reference: "registry.site:5000/a@sha256:1", Verified: true}}}
	b.Reset()
	if err := run.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "registry.site:5000: 1 image copied, 0 already there, 0B of blobs moved (0 unique blobs planned, 0 mounted); 0 verified\n" +
		"signatures: 1 of 1 checks verified at registry.site:5000 (1 image, under their verify policies, offline)\n"
	if b.String() != want {
		t.Errorf("WriteText =\n%q\nwant\n%q", b.String(), want)
	}
	trust := MirrorPlanReport{TrustImages: 1, Bundle: true, TrustFiles: []MirrorTrustFile{{Policy: "verify", Path: "k.pub", Digest: "sha256:ab"}}}
	b.Reset()
	trust.writeVerify(&b)
	if !strings.HasPrefix(b.String(), "the bundle records the verify policies of 1 image and") {
		t.Errorf("writeVerify = %q", b.String())
	}
}
