// Package verifypolicy applies a config's verify policies to its images:
// which policies apply to an image (Of, the union over its uses), each
// loaded once (Load), the signatures `stowage lock` and `bump` check
// before they pin a digest (Pin), the entries `lock --check` finds
// unverified offline (Unverified), and lock --check's whole rule
// (CheckLock: stale entries and unverified ones), and the signatures an
// admission kind of a profile cannot read (UnreadableSignatures).
package verifypolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/admission"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/sigverify"
)

// At is a verify policy as written, with the field it is written at
// ("verify", "images.NAME.verify", "environments.NAME.verify").
type At struct {
	Field  string
	Verify *v1alpha1.Verify
}

// Of returns the verify policies that apply to img, one per
// distinct field, in the order of its uses: each use's policy by
// plan.VerifyPolicy (its image or environment, else its profile, else the
// top level). An image used in several profiles, or by several images
// or environments, is verified under each of them: the union. Empty when
// none applies.
func Of(cfg *v1alpha1.Config, img *plan.Image) []At {
	var out []At
	seen := map[string]bool{}
	for _, u := range img.Uses {
		if at, v := plan.VerifyPolicy(cfg, u); v != nil && !seen[at] {
			seen[at] = true
			out = append(out, At{at, v})
		}
	}
	return out
}

// Warning is a signature that did not verify under an optional policy:
// the entry is pinned all the same.
type Warning struct {
	// Err is the failure, as a required policy would report it.
	Err *registry.ImageError
	// At is the optional policy's field.
	At string
	// Verified is set when another policy of the image verified it.
	Verified bool
}

// Pin applies the config's verify policies (Of) to next,
// the lock r.Lock returned from old for images, with lockErr its error.
// Every entry whose digest is new, or whose recorded signer a policy of it
// does not trust, is verified with sigstore-go against the registry that
// served it (no Rekor, Fulcio or TUF request) under each of its policies:
// VerifiedBy records the signer the first of them found and its format
// (sigverify.Signer.Kind); an entry whose recorded signer has no format (a
// lock written before formats were recorded) is verified again. A digest that
// does not verify under a required policy is not pinned: the entry is
// replaced by old's (when old had one its policies trust) or left out, and
// the failure joins lockErr's registry.Errors (image, digest and why).
// Under an optional policy it stays, with a Warning, in entry order. An
// entry no policy applies to carries no VerifiedBy. A policy whose files
// cannot be read is an error with a nil lock.
func Pin(ctx context.Context, r *registry.Resolver, cfg *v1alpha1.Config, old, next *lock.Lock, images []*plan.Image, lockErr error) (*lock.Lock, []Warning, error) {
	if next == nil {
		return next, nil, lockErr
	}
	pols, err := Load(cfg, images)
	if err != nil {
		return nil, nil, err
	}
	byKey := map[string]*plan.Image{}
	for _, img := range images {
		byKey[img.Ref.Key()] = img
	}
	trusted := func(name string, s *lock.Signer) bool {
		for _, pol := range pols[name] {
			if !pol.Trusts(s) {
				return false
			}
		}
		return s != nil
	}
	var work []int
	for i, e := range next.Entries {
		next.Entries[i].VerifiedBy = nil
		if len(pols[e.Name]) == 0 {
			continue
		}
		// A signer recorded before the lock recorded formats is verified
		// again, so that the lock says which format each signature is in.
		if prev, ok := old.Lookup(e.Name); ok && prev.Digest == e.Digest && trusted(e.Name, prev.VerifiedBy) && prev.VerifiedBy.Format != "" {
			next.Entries[i].VerifiedBy = prev.VerifiedBy
			continue
		}
		work = append(work, i)
	}
	type outcome struct {
		refuse, warn *registry.ImageError
		// warnAt is the field of the optional policy warn is under.
		warnAt string
	}
	var (
		mu    sync.Mutex
		found = map[int]outcome{}
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 4)
	)
	for _, i := range work {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			e := next.Entries[i]
			img := byKey[e.Name]
			var o outcome
			var signer *sigverify.Signer
			for _, pol := range pols[e.Name] {
				s, err := checkEntry(ctx, r, pol, img, e.Digest)
				if err != nil {
					ie := &registry.ImageError{Image: img.Ref.Written, Key: e.Name, UsedBy: img.UsedBy(),
						Op: verifyOp(pol.At), Answer: r.Scrub(err.Error()), Err: err}
					if pol.Required && o.refuse == nil {
						o.refuse = ie
					} else if !pol.Required && o.warn == nil {
						o.warn, o.warnAt = ie, pol.At
					}
					continue
				}
				if signer == nil {
					signer = s
				}
			}
			mu.Lock()
			defer mu.Unlock()
			found[i] = o
			if signer != nil {
				next.Entries[i].VerifiedBy = &lock.Signer{Key: signer.Key, Identity: signer.Identity, Issuer: signer.Issuer, Signature: signer.Signature, Format: signer.Kind}
			}
		})
	}
	wg.Wait()
	var errs registry.Errors
	if lockErr != nil && !errors.As(lockErr, &errs) {
		return next, nil, lockErr
	}
	out := &lock.Lock{}
	var warnings []Warning
	for i, e := range next.Entries {
		o := found[i]
		if o.refuse == nil {
			if o.warn != nil {
				warnings = append(warnings, Warning{Err: o.warn, At: o.warnAt, Verified: e.VerifiedBy != nil})
			}
			out.Put(e)
			continue
		}
		if prev, ok := old.Lookup(e.Name); ok && trusted(e.Name, prev.VerifiedBy) {
			out.Put(prev)
		}
		errs = append(errs, o.refuse)
	}
	if len(errs) == 0 {
		return out, warnings, nil
	}
	return out, warnings, errs.Sorted()
}

// verifyOp is the operation a verify failure names: "verify" under the
// top-level policy, "verify under FIELD" under any other (an image's, an
// environment's or a profile's), so that the message says which policy
// refused.
func verifyOp(at string) string {
	if at == "verify" {
		return "verify"
	}
	return "verify under " + at
}

// Load reads, once each, the verify policies of images (Of), keyed by the image's lock key. Errors: a policy's key or
// trusted root cannot be read (sigverify.LoadPolicy, naming the field).
func Load(cfg *v1alpha1.Config, images []*plan.Image) (map[string][]*sigverify.Policy, error) {
	loaded := map[string]*sigverify.Policy{}
	pols := map[string][]*sigverify.Policy{}
	for _, img := range images {
		for _, p := range Of(cfg, img) {
			pol, ok := loaded[p.Field]
			if !ok {
				var err error
				if pol, err = sigverify.LoadPolicy(cfg.Dir, p.Field, p.Verify); err != nil {
					return nil, err
				}
				loaded[p.Field] = pol
			}
			pols[img.Ref.Key()] = append(pols[img.Ref.Key()], pol)
		}
	}
	return pols, nil
}

// Unverified lists, offline, the entries of old that a required
// verify policy of their image does not trust (no verifiedBy, or a signer
// it does not name): `stowage lock` would verify them again.
func Unverified(cfg *v1alpha1.Config, old *lock.Lock, images []*plan.Image) ([]bump.StaleEntry, error) {
	pols, err := Load(cfg, images)
	if err != nil {
		return nil, err
	}
	var out []bump.StaleEntry
	for _, img := range images {
		e, ok := old.Lookup(img.Ref.Key())
		if !ok {
			continue
		}
		for _, pol := range pols[e.Name] {
			if pol.Required && !pol.Trusts(e.VerifiedBy) {
				out = append(out, bump.StaleEntry{Status: "unverified", Key: e.Name, Reference: e.Reference})
				break
			}
		}
	}
	return out, nil
}

// checkEntry verifies digest of img under pol, reading img's repository
// as lock reads it (its mirror, its credentials).
func checkEntry(ctx context.Context, r *registry.Resolver, pol *sigverify.Policy, img *plan.Image, digest string) (*sigverify.Signer, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, err
	}
	repo, pl, err := r.Source(img.Ref.Repository, img.Auth)
	if err != nil {
		return nil, err
	}
	return pol.Check(ctx, repo, pl, h)
}

// CheckLock is the rule of `stowage lock --check`, offline: how the lock
// file (old, data its bytes) differs from what `stowage lock` would write
// for images (bump.StaleEntries over registry.Pending), and the entries
// that a required verify policy of their image does not trust
// (Unverified), which lock would verify again, and those whose signer
// the lock records without its format ("unrecorded": Pin verifies them
// again to record it). When some are either, a
// "format" entry is dropped (it says only the bytes differ, which is then
// no longer so) and the entries are sorted by key. Empty when lock would
// change nothing. Errors are Pending's (registry.Errors) and Load's.
func CheckLock(cfg *v1alpha1.Config, old *lock.Lock, data []byte, images []*plan.Image) ([]bump.StaleEntry, error) {
	next, missing, err := registry.Pending(old, images)
	if err != nil {
		return nil, err
	}
	stale := bump.StaleEntries(old, next, missing, images, data)
	unverified, err := Unverified(cfg, old, images)
	if err != nil {
		return nil, err
	}
	unverified = append(unverified, unrecorded(cfg, old, images, unverified)...)
	if len(unverified) > 0 {
		stale = slices.DeleteFunc(stale, func(s bump.StaleEntry) bool { return s.Status == "format" })
		stale = append(stale, unverified...)
		slices.SortStableFunc(stale, func(a, b bump.StaleEntry) int { return strings.Compare(a.Key, b.Key) })
	}
	return stale, nil
}

// unrecorded lists the entries of old, other than those in skip, that a
// verify policy applies to and whose recorded signer has no format: Pin
// verifies them again to record it.
func unrecorded(cfg *v1alpha1.Config, old *lock.Lock, images []*plan.Image, skip []bump.StaleEntry) []bump.StaleEntry {
	var out []bump.StaleEntry
	for _, img := range images {
		e, ok := old.Lookup(img.Ref.Key())
		if !ok || e.VerifiedBy == nil || e.VerifiedBy.Format != "" || len(Of(cfg, img)) == 0 {
			continue
		}
		if slices.ContainsFunc(skip, func(s bump.StaleEntry) bool { return s.Key == e.Name }) ||
			slices.ContainsFunc(out, func(s bump.StaleEntry) bool { return s.Key == e.Name }) {
			continue
		}
		out = append(out, bump.StaleEntry{Status: "unrecorded", Key: e.Name, Reference: e.Reference})
	}
	return out
}

// Unreadable is an image whose signature, as the lock records it, an
// admission kind of a profile that uses it cannot read
// (admission.Reads): render refuses that profile until it changes.
type Unreadable struct {
	// Image is the image's lock key; Profile the profile whose policy
	// field names Kind; Format the recorded verifiedBy.format.
	Image, Profile, Kind, Format string
}

// String is the warning lock and bump print.
func (u Unreadable) String() string {
	return fmt.Sprintf("image %s: its signature is %s, which %s in profiles.%s.policy.kinds cannot read; render will refuse profile %s until kinds uses kyverno-ivpol instead, or the image is signed in cosign's tag format as well",
		u.Image, admission.FormatWords(u.Format), u.Kind, u.Profile, u.Profile)
}

// UnreadableSignatures lists, for the entries of l that images pin, each
// admission kind (v1alpha1.Profile.Policy) of a profile using the image
// under a verify policy that cannot read the signature l records for it,
// sorted by image, profile and kind, each once.
func UnreadableSignatures(cfg *v1alpha1.Config, l *lock.Lock, images []*plan.Image) []Unreadable {
	var out []Unreadable
	for _, img := range images {
		e, ok := l.Lookup(img.Ref.Key())
		if !ok || e.VerifiedBy == nil {
			continue
		}
		for _, u := range img.Uses {
			prof, ok := cfg.Profiles[u.Profile]
			if !ok || prof.Policy == nil {
				continue
			}
			if _, v := plan.VerifyPolicy(cfg, u); v == nil {
				continue
			}
			for _, k := range prof.Policy.Kinds {
				if admission.Reads(k, *e.VerifiedBy) {
					continue
				}
				x := Unreadable{Image: e.Name, Profile: u.Profile, Kind: k, Format: e.VerifiedBy.Format}
				if !slices.Contains(out, x) {
					out = append(out, x)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Unreadable) int {
		return strings.Compare(a.Image+"\x00"+a.Profile+"\x00"+a.Kind, b.Image+"\x00"+b.Profile+"\x00"+b.Kind)
	})
	return out
}
