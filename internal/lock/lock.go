// Package lock reads and writes stowage.lock.yaml, the file that pins every
// image reference of a config to a digest.
//
// The file is a KRM object that kustomize never applies:
//
//	apiVersion: stowage.dev/v1alpha1
//	kind: ImageLock
//	metadata:
//	  name: stowage-lock
//	  annotations:
//	    config.kubernetes.io/local-config: "true"
//	spec:
//	  images:
//	  - name: docker.io/library/busybox:1.31.1         # Key of the reference
//	    reference: busybox:1.31.1                      # as written in the config
//	    digest: sha256:<64 hex>                        # what gets pinned by default
//	    kind: index                                    # "index" or "manifest"
//	    platforms:                                     # index only, sorted by platform
//	    - platform: linux/amd64                        # v1.Platform.String()
//	      digest: sha256:<64 hex>
//	      size: 1234                                   # bytes: config + compressed layers
//	  - name: ...
//	    kind: manifest
//	    size: 1234                                     # manifest only; omitted when unknown
//
// Entries are sorted by name and carry no timestamps, so a bump touches only
// the lines of the digests that changed. Only the entries are kept in memory
// ([Lock]); metadata is written in the canonical form above by [Lock.Marshal].
//
// The package never talks to a registry: [ManifestEntry] and [IndexEntry]
// summarise images the caller already holds (remote or stand-in).
package lock

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
)

const (
	// APIVersion is the apiVersion of the lock object.
	APIVersion = "stowage.dev/v1alpha1"
	// ObjectKind is the kind of the lock object. (It is not named Kind: that
	// name is the type of Entry.Kind.)
	ObjectKind = "ImageLock"
	// FileName is the lock file's base name, beside the config.
	FileName = "stowage.lock.yaml"
	// ObjectName is metadata.name written by Marshal.
	ObjectName = "stowage-lock"
	// LocalConfigAnnotation marks the object as local configuration so that
	// kustomize never applies it; Marshal sets it to "true".
	LocalConfigAnnotation = "config.kubernetes.io/local-config"
)

var (
	// ErrNoPlatform is wrapped by DigestFor when the entry has no child for
	// the requested platform.
	ErrNoPlatform = errors.New("platform not in lock entry")
	// ErrMissing is wrapped by the errors of a lock without an entry for a
	// reference (plan.Pin.Errs).
	ErrMissing = errors.New("image not in lock")
)

// Entry is the lock record of one normalised image reference; Name is
// its lock key, imageref.Ref.Key of the parsed Reference.
type Entry = v1alpha1.ImageLockEntry

// Platform is one child of an index entry.
type Platform = v1alpha1.ImageLockPlatform

// Signer is what verified an entry's digest (Entry.VerifiedBy).
type Signer = v1alpha1.ImageLockSigner

// Kind says what an entry's digest points at.
type Kind = v1alpha1.DigestKind

// The kinds of an entry.
const (
	KindIndex    = v1alpha1.KindIndex
	KindManifest = v1alpha1.KindManifest
)

// Lock is the in-memory content of a lock file: its entries, sorted by Name.
// The zero value is an empty lock.
type Lock struct {
	Entries []Entry
}

// Object returns l as the ImageLock object of its file, sharing l's
// entries: what render.Input.Lock takes. A nil l is an empty lock.
func (l *Lock) Object() *v1alpha1.ImageLock {
	o := &v1alpha1.ImageLock{APIVersion: APIVersion, Kind: ObjectKind}
	if l != nil {
		o.Spec.Images = l.Entries
	}
	return o
}

// Lookup returns the entry whose Name is key (imageref.Ref.Key, the one
// lock key) and whether it exists.
// Entries sorted by name (as Parse and Put leave them) are binary-searched,
// so rendering n images costs O(n log n), not O(n²); a key not found that
// way is looked for entry by entry, so that a Lock built by hand in another
// order still finds it.
func (l *Lock) Lookup(key string) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	if i, found := slices.BinarySearchFunc(l.Entries, key, func(e Entry, k string) int { return strings.Compare(e.Name, k) }); found {
		return l.Entries[i], true
	}
	i := slices.IndexFunc(l.Entries, func(e Entry) bool { return e.Name == key })
	if i < 0 {
		return Entry{}, false
	}
	return l.Entries[i], true
}

// New returns the lock of entries, as Put of each in turn would leave it
// (sorted by Name, platforms sorted, a later entry replacing an earlier one
// of the same Name), in O(n log n) where n Puts in an unsorted order would
// move O(n²) entries. entries is not modified, and is not validated.
func New(entries []Entry) *Lock {
	// Sort positions, not entries: ties broken by position keep the
	// order of entries of one Name, so the last of each run is the one
	// that Put would have kept.
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	if !slices.IsSortedFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) }) {
		slices.SortFunc(order, func(i, j int) int {
			return cmp.Or(strings.Compare(entries[i].Name, entries[j].Name), cmp.Compare(i, j))
		})
	}
	l := &Lock{Entries: make([]Entry, 0, len(entries))}
	for k, i := range order {
		if k+1 < len(order) && entries[order[k+1]].Name == entries[i].Name {
			continue // a later entry of this Name replaces it
		}
		e := entries[i]
		e.Platforms = sortedPlatforms(e.Platforms)
		l.Entries = append(l.Entries, e)
	}
	return l
}

// Put inserts e, or replaces the entry with the same Name, keeping Entries
// sorted by Name and e's platforms sorted by Platform. Entries must already be
// sorted, as Parse and Put leave them. It does not validate e (see
// Validate).
func (l *Lock) Put(e Entry) {
	e.Platforms = sortedPlatforms(e.Platforms)
	i, found := slices.BinarySearchFunc(l.Entries, e.Name, func(x Entry, n string) int { return strings.Compare(x.Name, n) })
	if found {
		l.Entries[i] = e
		return
	}
	l.Entries = slices.Insert(l.Entries, i, e)
}

// DigestFor returns the digest to pin for entry e. With platform "" it is
// the entry digest (the index itself for a multi-arch image). With a platform
// "os/arch[/variant]" it is, for a single manifest, its own digest when its
// recorded Platform matches (by the same rule), else the digest of the
// matching child: a child matches
// when every part the request names is equal, so a requested "linux/arm64"
// matches a recorded "linux/arm64/v8" but a requested "linux/arm64/v8" does
// not match a recorded "linux/arm64". An exact match wins over a variant
// match; several variant matches are ambiguous. When nothing matches, or the
// entry is a single manifest (it has no children), the error wraps
// ErrNoPlatform and names the image and the platforms available.
func DigestFor(e Entry, platform string) (string, error) {
	if platform == "" {
		return e.Digest, nil
	}
	want, err := v1.ParsePlatform(platform)
	if err != nil || want.OS == "" || want.Architecture == "" {
		return "", fmt.Errorf("image %s: platform %q: want os/arch[/variant], e.g. linux/arm64", label(e), platform)
	}
	if e.Kind != KindIndex {
		if e.Platform == "" {
			return "", fmt.Errorf("image %s: platform %s requested, but the image is a single %s whose platform the lock does not record (run `stowage lock` to read it from the image's config): %w", label(e), platform, e.Kind, ErrNoPlatform)
		}
		have, err := v1.ParsePlatform(e.Platform)
		if err == nil && (have.String() == want.String() || have.Satisfies(*want)) {
			return e.Digest, nil
		}
		return "", fmt.Errorf("image %s: platform %s requested, but the image is a single %s for %s (available: %s): %w", label(e), platform, e.Kind, e.Platform, e.Platform, ErrNoPlatform)
	}
	var matches []Platform
	for _, p := range e.Platforms {
		if p.Platform == want.String() {
			return p.Digest, nil
		}
		have, err := v1.ParsePlatform(p.Platform)
		if err == nil && have.Satisfies(*want) {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0].Digest, nil
	case 0:
		return "", fmt.Errorf("image %s: no platform %s (available: %s): %w", label(e), platform, platformList(e.Platforms), ErrNoPlatform)
	default:
		return "", fmt.Errorf("image %s: platform %s is ambiguous (matches %s); name the variant", label(e), platform, platformList(matches))
	}
}

// label names the entry in messages: the reference as written and its key.
func label(e Entry) string {
	switch {
	case e.Reference == "":
		return e.Name
	case e.Name == "" || e.Name == e.Reference:
		return e.Reference
	default:
		return fmt.Sprintf("%s (%s)", e.Reference, e.Name)
	}
}

func platformList(ps []Platform) string {
	if len(ps) == 0 {
		return "none"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Platform
	}
	return strings.Join(names, ", ")
}

func sortedPlatforms(ps []Platform) []Platform {
	if len(ps) == 0 {
		return nil
	}
	ps = slices.Clone(ps)
	slices.SortStableFunc(ps, func(a, b Platform) int { return strings.Compare(a.Platform, b.Platform) })
	return ps
}
