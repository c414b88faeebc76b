package verifypolicy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

const example = "../../examples/gpu-platform"

// load is the example's config, its lock and every image it pins.
func load(t *testing.T) (*v1alpha1.Config, *lock.Lock, []*plan.Image) {
	t.Helper()
	cfg, err := schema.Load(example, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(example, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	all, err := plan.All(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, l, all.Images
}

// TestOfAndLoad: the vendor's environments are verified under their
// environment's policy, Node Feature Discovery and the model under none;
// Load reads each policy's key once, keyed by lock key.
func TestOfAndLoad(t *testing.T) {
	t.Parallel()
	cfg, _, images := load(t)
	pols, err := Load(cfg, images)
	if err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, img := range images {
		of := Of(cfg, img)
		if len(of) != len(pols[img.Ref.Key()]) {
			t.Errorf("%s: %d policies apply, %d loaded", img.Key, len(of), len(pols[img.Ref.Key()]))
		}
		for i, p := range of {
			if p.Verify.Mode != v1alpha1.VerifyOptional || pols[img.Ref.Key()][i].Required {
				t.Errorf("%s: policy %s mode %q, loaded required %v; want the example's optional one", img.Key, p.Field, p.Verify.Mode, pols[img.Ref.Key()][i].Required)
			}
		}
		if len(of) > 0 {
			with++
		}
	}
	if with == 0 || with == len(images) {
		t.Errorf("%d of %d images under a policy; want some, not all", with, len(images))
	}
}

// TestUnverified: under the example's optional policy no entry is
// unverified; made required, every entry under it without a signer is.
func TestUnverified(t *testing.T) {
	t.Parallel()
	cfg, l, images := load(t)
	got, err := Unverified(cfg, l, images)
	if err != nil || len(got) != 0 {
		t.Fatalf("optional: %v, %v; want none", got, err)
	}
	var under int
	for _, img := range images {
		if len(Of(cfg, img)) > 0 {
			under++
		}
	}
	for name, env := range cfg.Environments {
		if env.Verify != nil {
			v := *env.Verify
			v.Mode = v1alpha1.VerifyRequired
			env.Verify = &v
			cfg.Environments[name] = env
		}
	}
	got, err = Unverified(cfg, l, images)
	if err != nil || len(got) != under {
		t.Fatalf("required: %v, %v; want the %d entries under it", got, err, under)
	}
	for _, s := range got {
		if s.Status != "unverified" {
			t.Errorf("%+v: want status unverified", s)
		}
	}
}

// TestPinWithoutPolicies: an entry no policy applies to is pinned as
// resolved, carrying no signer; no registry is asked. A lock error that is
// not per image comes back as it is.
func TestPinWithoutPolicies(t *testing.T) {
	t.Parallel()
	cfg, l, images := load(t)
	// The catalogue images alone: none of them has a policy.
	all, err := plan.All(&v1alpha1.Config{Images: cfg.Images}, l)
	if err != nil {
		t.Fatal(err)
	}
	next := &lock.Lock{}
	for _, img := range all.Images {
		e, _ := l.Lookup(img.Key)
		e.VerifiedBy = &lock.Signer{Key: "stale"}
		next.Put(e)
	}
	out, warnings, err := Pin(t.Context(), nil, &v1alpha1.Config{Images: cfg.Images}, &lock.Lock{}, next, all.Images, nil)
	if err != nil || len(warnings) != 0 || len(out.Entries) != len(next.Entries) {
		t.Fatalf("got %d entries, %v, %v", len(out.Entries), warnings, err)
	}
	for _, e := range out.Entries {
		if e.VerifiedBy != nil {
			t.Errorf("%s carries signer %+v", e.Name, e.VerifiedBy)
		}
	}
	broken := errors.New("the lock could not be read")
	if _, _, err := Pin(t.Context(), nil, cfg, l, nil, images, broken); err != broken {
		t.Errorf("a nil lock: %v, want the run's error", err)
	}
}

// TestCheckLock: lock --check's rule on the example: its lock as
// committed is current; other bytes for the same entries are one format
// entry; an entry taken out is missing, one no profile uses is unused;
// with the policy made required the entries without a signer are
// unverified, sorted among the others by key, and the format entry is
// dropped.
func TestCheckLock(t *testing.T) {
	cfg, l, images := load(t)
	data, err := os.ReadFile(filepath.Join(example, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	got, err := CheckLock(cfg, l, data, images)
	if err != nil || len(got) != 0 {
		t.Fatalf("committed lock: %v, %v; want none", got, err)
	}
	reformatted := append([]byte("# a comment lock would not write\n"), data...)
	got, err = CheckLock(cfg, l, reformatted, images)
	if err != nil || !slices.Equal(got, []bump.StaleEntry{{Status: "format"}}) {
		t.Fatalf("reformatted: %v, %v; want one format entry", got, err)
	}

	edited := &lock.Lock{}
	dropped := images[0]
	for _, e := range l.Entries {
		if e.Name != dropped.Key {
			edited.Put(e)
		}
	}
	const unused = "registry.lab.internal/unused:1"
	edited.Put(lock.Entry{Name: unused, Reference: unused, Digest: "sha256:" + strings.Repeat("0", 64), Kind: lock.KindManifest, Size: 1})
	got, err = CheckLock(cfg, edited, edited.Marshal(), images)
	want := []bump.StaleEntry{{Status: "missing", Key: dropped.Key, Reference: dropped.Ref.Written}, {Status: "unused", Key: unused}}
	slices.SortFunc(want, func(a, b bump.StaleEntry) int { return strings.Compare(a.Key, b.Key) })
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("edited: %v, %v; want %v", got, err, want)
	}

	for name, env := range cfg.Environments {
		if env.Verify != nil {
			v := *env.Verify
			v.Mode = v1alpha1.VerifyRequired
			env.Verify = &v
			cfg.Environments[name] = env
		}
	}
	unverified, err := Unverified(cfg, l, images)
	if err != nil || len(unverified) == 0 {
		t.Fatalf("required: %v, %v; want entries without a signer", unverified, err)
	}
	got, err = CheckLock(cfg, l, reformatted, images)
	if err != nil || !slices.Equal(got, unverified) || !slices.IsSortedFunc(got, func(a, b bump.StaleEntry) int { return strings.Compare(a.Key, b.Key) }) {
		t.Errorf("required, reformatted: %v, %v; want the unverified entries alone, %v", got, err, unverified)
	}
}

// TestCheckLockUnrecorded: an entry under a policy whose recorded signer
// the policy trusts but whose format the lock does not record (a lock
// written before formats were recorded) is "unrecorded" for lock --check,
// and not unverified (vet still accepts it); with the format recorded the
// lock is current again. An entry no policy applies to is never
// unrecorded.
func TestCheckLockUnrecorded(t *testing.T) {
	t.Parallel()
	cfg, l, images := load(t)
	pols, err := Load(cfg, images)
	if err != nil {
		t.Fatal(err)
	}
	var under, free *plan.Image
	for _, img := range images {
		if len(pols[img.Key]) > 0 && under == nil {
			under = img
		}
		if len(pols[img.Key]) == 0 && free == nil {
			free = img
		}
	}
	if under == nil || free == nil {
		t.Fatal("the example has no image under a policy, or none outside")
	}
	sig := "sha256:" + strings.Repeat("1", 64)
	edited := &lock.Lock{}
	for _, e := range l.Entries {
		if e.Name == under.Key || e.Name == free.Key {
			e.VerifiedBy = &lock.Signer{Key: pols[under.Key][0].Keys[0].Fingerprint, Signature: sig}
		}
		edited.Put(e)
	}
	got, err := CheckLock(cfg, edited, edited.Marshal(), images)
	want := []bump.StaleEntry{{Status: "unrecorded", Key: under.Key, Reference: under.Ref.Written}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("without format: %v, %v; want %v", got, err, want)
	}
	if !strings.HasPrefix(got[0].String(), "unrecorded "+under.Key+" (") {
		t.Errorf("line %q", got[0].String())
	}
	if u, err := Unverified(cfg, edited, images); err != nil || len(u) != 0 {
		t.Errorf("Unverified = %v, %v; want none", u, err)
	}
	recorded := &lock.Lock{}
	for _, e := range edited.Entries {
		if e.Name == under.Key {
			s := *e.VerifiedBy
			s.Format = v1alpha1.SignatureTag
			e.VerifiedBy = &s
		}
		recorded.Put(e)
	}
	if got, err := CheckLock(cfg, recorded, recorded.Marshal(), images); err != nil || len(got) != 0 {
		t.Errorf("with format: %v, %v; want none", got, err)
	}
}

// TestUnreadableSignatures: in the example, whose profile gpu renders a
// Kyverno ImageValidatingPolicy and a CRI-O policy, an image under a
// verify policy whose locked signature is a Sigstore bundle is unreadable
// by crio alone, named with the profile; with a Kyverno ClusterPolicy
// instead, by both; in the tag format, or an image under no policy, by
// none.
func TestUnreadableSignatures(t *testing.T) {
	t.Parallel()
	cfg, l, images := load(t)
	pols, err := Load(cfg, images)
	if err != nil {
		t.Fatal(err)
	}
	var under, free *plan.Image
	for _, img := range images {
		if len(pols[img.Key]) > 0 && under == nil {
			under = img
		}
		if len(pols[img.Key]) == 0 && free == nil {
			free = img
		}
	}
	with := func(format string) *lock.Lock {
		out := &lock.Lock{}
		for _, e := range l.Entries {
			if e.Name == under.Key || e.Name == free.Key {
				e.VerifiedBy = &lock.Signer{Key: "sha256:" + strings.Repeat("1", 64), Signature: "sha256:" + strings.Repeat("2", 64), Format: format}
			}
			out.Put(e)
		}
		return out
	}
	want := []Unreadable{
		{Image: under.Key, Profile: "gpu", Kind: v1alpha1.AdmissionCRIO, Format: v1alpha1.SignatureBundle},
		{Image: under.Key, Profile: "gpu", Kind: v1alpha1.AdmissionKyverno, Format: v1alpha1.SignatureBundle},
	}
	// The example's kinds: kyverno-ivpol reads it, crio does not.
	if got := UnreadableSignatures(cfg, with(v1alpha1.SignatureBundle), images); !slices.Equal(got, want[:1]) {
		t.Errorf("kyverno-ivpol and crio: %+v, want %+v", got, want[:1])
	}
	prof := cfg.Profiles["gpu"]
	pol := *prof.Policy
	pol.Kinds = []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionCRIO}
	prof.Policy = &pol
	cfg.Profiles["gpu"] = prof
	got := UnreadableSignatures(cfg, with(v1alpha1.SignatureBundle), images)
	if !slices.Equal(got, want) {
		t.Fatalf("kyverno and crio, bundle: %+v, want %+v", got, want)
	}
	if s := got[1].String(); !strings.HasPrefix(s, "image "+under.Key+": its signature is a Sigstore bundle") || !strings.Contains(s, "which kyverno in profiles.gpu.policy.kinds cannot read") {
		t.Errorf("warning %q", s)
	}
	if got := UnreadableSignatures(cfg, with(v1alpha1.SignatureTag), images); len(got) != 0 {
		t.Errorf("tag scheme: %+v, want none", got)
	}
}
