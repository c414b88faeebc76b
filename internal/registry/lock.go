package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

// Mode says how Lock treats the entries it already has.
type Mode int

const (
	// Fill keeps every entry the old lock has for a wanted image (no
	// request) and resolves only the missing ones: `stowage lock`.
	Fill Mode = iota
	// Refresh re-resolves every tag with one HEAD, reading an image again
	// only when its digest changed, and checks every pin still exists:
	// `stowage bump`.
	Refresh
)

// Lock returns the lock for images (plan.All's Images): one entry per image, in mode's way,
// starting from old (nil is an empty lock). Entries of old that no image
// wants are left out (pruned). A pinned image's entry has the digest the
// user wrote. An entry's Reference is the image's Ref.Written.
//
// Every image is tried; the error is Errors, one *ImageError per image
// that failed (unreachable, unknown, unauthorised, a platform the entry
// lacks, ...). The lock is returned with it, holding what was learned:
// every entry that resolved, and for an image that failed, its old entry
// when old had one that still fits (same pin, the platforms asked for).
// It is a valid lock that lacks the failed images without an old entry,
// which render refuses by name; `stowage lock` writes it, `stowage bump`
// writes it only with --keep-going. Two images with the same key are a
// caller's mistake and an error, with a nil lock.
func (r *Resolver) Lock(ctx context.Context, old *lock.Lock, images []*plan.Image, mode Mode) (*lock.Lock, error) {
	if r == nil {
		return nil, errNoResolver
	}
	if old == nil {
		old = &lock.Lock{}
	}
	seen := map[string]bool{}
	for _, img := range images {
		if k := img.Ref.Key(); seen[k] {
			return nil, fmt.Errorf("registry: image %s given twice", k)
		} else {
			seen[k] = true
		}
	}
	entries := make([]lock.Entry, len(images))
	var work []int
	for i, img := range images {
		if e, ok := kept(old, img); ok && mode == Fill && !needsPlatform(e, img) {
			entries[i] = e
			continue
		}
		work = append(work, i)
	}

	ctx, cancel := r.runContext(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		errs Errors
	)
	r.each(ctx, len(work), func(j int) string { return images[work[j]].Ref.Written }, func(ctx context.Context, j int) {
		i := work[j]
		prev, has := old.Lookup(images[i].Ref.Key())
		var prevp *lock.Entry
		if has {
			prevp = &prev
		}
		e, err := r.resolve(ctx, images[i], prevp, mode)
		if err == nil && needsPlatform(e, images[i]) {
			e.Platform, err = r.manifestPlatform(ctx, images[i], e.Digest)
		}
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			// Keep what the old lock knew of the image, if it fits.
			if k, ok := kept(old, images[i]); ok && checkPlatforms(k, images[i]) == nil {
				entries[i] = k
			}
			return
		}
		entries[i] = e
	})

	out := &lock.Lock{}
	for i, img := range images {
		if entries[i].Digest == "" {
			continue // failed
		}
		e := entries[i]
		e.Name, e.Reference = img.Ref.Key(), img.Ref.Written
		if img.Ref.Digest != "" {
			e.Digest = img.Ref.Digest
		}
		// What a registry answered is checked before it reaches the
		// lock (sizes, platforms by the OCI grammar, digests), so that a
		// hostile answer cannot write a lock every command then refuses.
		if verr := lock.Validate(e); verr != nil {
			errs = append(errs, &ImageError{Image: img.Ref.Written, Key: img.Ref.Key(), UsedBy: img.UsedBy(), Op: "record",
				Answer: "the registry's answer cannot be recorded: " + r.scrub(strings.ReplaceAll(verr.Error(), "\n", "; ")), Err: verr})
			continue
		}
		if perr := checkPlatforms(e, img); perr != nil {
			errs = append(errs, perr)
			continue
		}
		out.Put(e)
	}
	if len(errs) > 0 {
		return out, errs.Sorted()
	}
	return out, nil
}

// needsPlatform reports whether e is a single manifest whose platform a
// use of img asks about and the entry does not record yet.
func needsPlatform(e lock.Entry, img *plan.Image) bool {
	return e.Kind == lock.KindManifest && e.Platform == "" && len(img.Platforms) > 0
}

// manifestPlatform reads the platform of the single manifest digest of
// img from its config (os, architecture, variant), the config bounded by
// MaxManifestBytes, so that a platform asked for can be checked against
// it: a tag that is one linux/amd64 manifest serves platforms
// ["linux/amd64"].
func (r *Resolver) manifestPlatform(ctx context.Context, img *plan.Image, digest string) (string, *ImageError) {
	t, err := r.locate(img.Ref.Repository)
	if err != nil {
		return "", r.imageError(img, target{repo: img.Ref.Repository}, &opFailure{op: "reference", err: err})
	}
	f := fetch{t: t, auth: img.Auth}
	fail := func(of *opFailure) (string, *ImageError) { return "", r.imageError(img, t, of) }
	d, of := r.get(ctx, f, digest)
	if of != nil {
		return fail(of)
	}
	m, err := v1.ParseManifest(bytes.NewReader(d.Manifest))
	if err != nil {
		return fail(&opFailure{op: "read manifest", err: err})
	}
	if m.Config.Size < 0 || m.Config.Size > MaxManifestBytes {
		return fail(&opFailure{op: "read config", err: fmt.Errorf("config %s declares %d bytes; stowage reads 0 to %d", m.Config.Digest, m.Config.Size, MaxManifestBytes)})
	}
	p, err := r.puller(f.auth, f.t)
	if err != nil {
		return fail(&opFailure{op: "credentials", err: err})
	}
	octx, st := withOp(ctx, f.t.repo.RegistryStr())
	op := "GET config " + m.Config.Digest.String()
	l, err := p.Layer(octx, f.t.repo.Digest(m.Config.Digest.String()))
	if err != nil {
		return fail(&opFailure{op: op, err: err, st: st})
	}
	rc, err := l.Compressed()
	if err != nil {
		return fail(&opFailure{op: op, err: err, st: st})
	}
	defer rc.Close()
	// go-containerregistry checks the digest as the stream ends; the
	// declared size bounds the read.
	raw, err := io.ReadAll(io.LimitReader(rc, m.Config.Size+1))
	if err == nil && int64(len(raw)) != m.Config.Size {
		err = fmt.Errorf("the config is %d bytes or more, its descriptor says %d", len(raw), m.Config.Size)
	}
	if err == nil {
		// Read to the end, so that the digest is checked.
		var n int64
		if n, err = io.Copy(io.Discard, io.LimitReader(rc, 1)); err == nil && n > 0 {
			err = fmt.Errorf("the config is longer than its descriptor's %d bytes", m.Config.Size)
		}
	}
	if err != nil {
		return fail(&opFailure{op: op, err: err, st: st})
	}
	var cfg struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.OS == "" || cfg.Architecture == "" {
		return fail(&opFailure{op: op, err: errors.New("the image's config names no os and architecture, so its platform cannot be checked")})
	}
	return (&v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}).String(), nil
}

// kept returns the old entry of img when Fill keeps it without a request:
// the lock has the key and, for a pin, the pinned digest.
func kept(old *lock.Lock, img *plan.Image) (lock.Entry, bool) {
	prev, has := old.Lookup(img.Ref.Key())
	if !has || (img.Ref.Digest != "" && img.Ref.Digest != prev.Digest) {
		return lock.Entry{}, false
	}
	return prev, true
}

// Pending is Lock in Fill mode without the network: the lock of the images
// old already covers (their entries, with Reference set to Ref.Written,
// unused entries pruned) and the images it lacks, which Fill would resolve.
// It is what `stowage lock --check` compares. Platforms are checked as Lock
// checks them; the error is Errors.
func Pending(old *lock.Lock, images []*plan.Image) (*lock.Lock, []*plan.Image, error) {
	if old == nil {
		old = &lock.Lock{}
	}
	out := &lock.Lock{}
	var missing []*plan.Image
	var errs Errors
	for _, img := range images {
		e, ok := kept(old, img)
		if !ok {
			missing = append(missing, img)
			continue
		}
		e.Name, e.Reference = img.Ref.Key(), img.Ref.Written
		if perr := checkPlatforms(e, img); perr != nil {
			errs = append(errs, perr)
			continue
		}
		out.Put(e)
	}
	if len(errs) > 0 {
		return nil, nil, errs.Sorted()
	}
	return out, missing, nil
}

// resolve finds the entry of one image; prev is its old entry, or nil.
func (r *Resolver) resolve(ctx context.Context, img *plan.Image, prev *lock.Entry, mode Mode) (lock.Entry, *ImageError) {
	t, err := r.locate(img.Ref.Repository)
	if err != nil {
		return lock.Entry{}, r.imageError(img, target{repo: img.Ref.Repository}, &opFailure{op: "reference", err: err})
	}
	f := fetch{t: t, auth: img.Auth}
	fail := func(of *opFailure) (lock.Entry, *ImageError) { return lock.Entry{}, r.imageError(img, t, of) }

	if pin := img.Ref.Digest; pin != "" {
		if prev != nil && prev.Digest == pin {
			// Recorded before: only check that it still exists.
			if _, _, of := r.head(ctx, f, pin); of != nil {
				return fail(of)
			}
			return *prev, nil
		}
		e, of := r.getEntry(ctx, f, pin)
		if of != nil {
			return fail(of)
		}
		return e, nil
	}

	if mode == Fill || prev == nil {
		// A new entry: one GET gives the digest and the body at once.
		e, of := r.getEntry(ctx, f, img.Ref.Tag)
		if of != nil {
			return fail(of)
		}
		return e, nil
	}
	h, d, of := r.head(ctx, f, img.Ref.Tag)
	if of != nil {
		return fail(of)
	}
	if h.String() == prev.Digest {
		return *prev, nil
	}
	if d == nil {
		// Read by the digest the HEAD answered, so that the entry is
		// what the tag pointed at then, even if it moves meanwhile.
		var of *opFailure
		if d, of = r.get(ctx, f, h.String()); of != nil {
			return fail(of)
		}
	}
	e, of := r.entryOf(ctx, f, d)
	if of != nil {
		return fail(of)
	}
	return e, nil
}

// checkPlatforms checks that the entry has every platform the image asks
// for (the rule of lock.DigestFor, which render applies too).
func checkPlatforms(e lock.Entry, img *plan.Image) *ImageError {
	for _, p := range img.Platforms {
		if _, err := lock.DigestFor(e, p); err != nil {
			return &ImageError{Image: img.Ref.Written, Key: img.Ref.Key(), UsedBy: img.UsedBy(), Op: "platform " + p, Answer: err.Error(), Err: err}
		}
	}
	return nil
}

// Pin is a digest that must still exist in the image's repository.
type Pin struct {
	// Image is the image the digest is pinned for.
	Image *plan.Image
	// Digest is the pinned digest, "sha256:…".
	Digest string
}

// Verify checks with one HEAD each (a GET where the registry sends no
// Docker-Content-Digest) that every pinned digest still exists. The error
// is Errors, one *ImageError per digest that does not (404) or could not
// be checked.
func (r *Resolver) Verify(ctx context.Context, pins []Pin) error {
	if r == nil {
		return errNoResolver
	}
	ctx, cancel := r.runContext(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		errs Errors
	)
	r.each(ctx, len(pins), func(i int) string { return pins[i].Image.Ref.Written }, func(ctx context.Context, i int) {
		p := pins[i]
		img := p.Image
		t, err := r.locate(img.Ref.Repository)
		var ie *ImageError
		if err != nil {
			ie = r.imageError(img, target{repo: img.Ref.Repository}, &opFailure{op: "reference", err: err})
		} else if _, _, of := r.head(ctx, fetch{t: t, auth: img.Auth}, p.Digest); of != nil {
			ie = r.imageError(img, t, of)
		}
		if ie != nil {
			mu.Lock()
			errs = append(errs, ie)
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		return errs.Sorted()
	}
	return nil
}

// each runs do(i) for i in [0, n) on at most jobs goroutines, telling the
// progress reporter (with name(i), the reference worked on, when it wants
// names).
func (r *Resolver) each(ctx context.Context, n int, name func(i int) string, do func(ctx context.Context, i int)) {
	named, _ := r.o.progress.(ProgressNames)
	if r.o.progress != nil {
		r.o.progress.Start(n)
	}
	if n == 0 {
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(r.o.jobs, n) {
		wg.Go(func() {
			for i := range next {
				if named != nil {
					named.Begin(name(i))
				}
				do(ctx, i)
				if named != nil {
					named.End(name(i))
				}
				if r.o.progress != nil {
					r.o.progress.Done()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
