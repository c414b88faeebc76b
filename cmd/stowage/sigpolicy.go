package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/sigverify"
)

// verifyPinned applies cfg's verify policy to next, the lock r.Lock
// returned from old for images, with lockErr its error. Every entry whose
// digest is new, or whose recorded signer the policy no longer trusts, is
// verified with sigstore-go against the registry that served it (no
// Rekor, Fulcio or TUF request): on success its VerifiedBy records the
// signer. A digest that does not verify under a required policy is not
// pinned: the entry is replaced by old's (when old had one the policy
// trusts) or left out, and the failure joins lockErr's registry.Errors
// (image, digest and why). Under an optional policy it stays, unverified,
// with a warning on stderr. Without a policy every VerifiedBy is dropped.
// A policy whose files cannot be read is an error with a nil lock.
func verifyPinned(ctx context.Context, stderr io.Writer, r *registry.Resolver, cfg *v1alpha1.Config, old, next *lock.Lock, images []*plan.Image, lockErr error) (*lock.Lock, error) {
	if next == nil {
		return next, lockErr
	}
	if cfg.Verify == nil {
		for i := range next.Entries {
			next.Entries[i].VerifiedBy = nil
		}
		return next, lockErr
	}
	pol, err := sigverify.LoadPolicy(cfg.Dir, cfg.Verify)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*plan.Image{}
	for _, img := range images {
		byKey[img.Ref.Key()] = img
	}
	var work []int
	for i, e := range next.Entries {
		if prev, ok := old.Lookup(e.Name); ok && prev.Digest == e.Digest && pol.Trusts(prev.VerifiedBy) {
			next.Entries[i].VerifiedBy = prev.VerifiedBy
			continue
		}
		next.Entries[i].VerifiedBy = nil
		if byKey[e.Name] != nil {
			work = append(work, i)
		}
	}
	var (
		mu     sync.Mutex
		failed = map[int]*registry.ImageError{}
		wg     sync.WaitGroup
		sem    = make(chan struct{}, 4)
	)
	for _, i := range work {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			e := next.Entries[i]
			img := byKey[e.Name]
			s, err := checkEntry(ctx, r, pol, img, e.Digest)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[i] = &registry.ImageError{Image: img.Ref.Written, Key: e.Name, UsedBy: img.UsedBy(),
					Op: "verify", Answer: r.Scrub(err.Error()), Err: err}
				return
			}
			next.Entries[i].VerifiedBy = &v1alpha1.ImageLockSigner{Key: s.Key, Identity: s.Identity, Issuer: s.Issuer, Signature: s.Signature}
		})
	}
	wg.Wait()
	if len(failed) == 0 {
		return next, lockErr
	}
	var errs registry.Errors
	if !errors.As(lockErr, &errs) && lockErr != nil {
		return next, lockErr
	}
	out := &lock.Lock{}
	for i, e := range next.Entries {
		f := failed[i]
		if f == nil {
			out.Put(e)
			continue
		}
		if !pol.Required {
			fmt.Fprintf(stderr, "stowage: warning: %s; pinned unverified (verify.mode is optional)\n", escape.Line(f.Error()))
			out.Put(e)
			continue
		}
		if prev, ok := old.Lookup(e.Name); ok && pol.Trusts(prev.VerifiedBy) {
			out.Put(prev)
		}
		errs = append(errs, f)
	}
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs.Sorted()
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
