// Package bump computes what a lock update changes and words it for a
// reviewer: the difference between two locks with the config's uses of each
// image (Diff, over plan.All's Images), and a pull request's title,
// markdown body, branch name and JSON report (Title, Body, Branch,
// NewReport). Those are pure: no file, network or environment access, so
// that the same change gives the same text, byte for byte.
//
// Run and Lock are the ones that write. Run is the `stowage bump`
// transaction, resolving through the registry client its caller connects,
// rendering with the new lock, and writing the lock, the rendered
// directory and the pull request body together or not at all. Lock is a
// resolving `stowage lock` run, writing what NewUpdate decides.
package bump

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/words"
)

// Change is one lock entry that differs between an old and a new lock.
type Change struct {
	// Key is the entry's name, the lock key.
	Key string
	// Old is the entry before, nil when it was added.
	Old *lock.Entry
	// New is the entry after, nil when it was removed (pruned).
	New *lock.Entry
	// Uses are the config's uses of the image (plan.Image.Uses); empty for
	// a removed entry.
	Uses []*plan.Use
}

// Added reports an entry that only the new lock has.
func (c Change) Added() bool { return c.Old == nil }

// Removed reports an entry that only the old lock has.
func (c Change) Removed() bool { return c.New == nil }

// DigestChanged reports an entry in both locks whose digest differs.
func (c Change) DigestChanged() bool {
	return c.Old != nil && c.New != nil && c.Old.Digest != c.New.Digest
}

// SignerChanged reports whether the old entry records a signer and the new
// one another (another key, or another identity or issuer) or none (pinned
// unverified under an optional policy). The signature's own digest moving
// with the image is no change of signer.
func (c Change) SignerChanged() bool {
	if c.Old == nil || c.New == nil || c.Old.VerifiedBy == nil {
		return false
	}
	if c.New.VerifiedBy == nil {
		return true
	}
	o, n := *c.Old.VerifiedBy, *c.New.VerifiedBy
	return o.Key != n.Key || o.Identity != n.Identity || o.Issuer != n.Issuer
}

// KindChanged reports an entry in both locks whose kind differs (a single
// manifest became a multi-arch index, or the reverse).
func (c Change) KindChanged() bool {
	return c.Old != nil && c.New != nil && c.Old.Kind != c.New.Kind
}

// Entry is the new entry, or the old one for a removed entry.
func (c Change) Entry() lock.Entry {
	if c.New != nil {
		return *c.New
	}
	return *c.Old
}

// Ref is the entry's reference as recorded, parsed. When the recorded
// spelling does not parse (a hand-edited lock), Ref holds it in Written
// only.
func (c Change) Ref() imageref.Ref {
	e := c.Entry()
	r, err := imageref.Parse(e.Reference)
	if err != nil {
		return imageref.Ref{Written: e.Reference}
	}
	return r
}

// Diff lists the entries that differ between old and new (either may be
// nil, an empty lock), sorted by key, with the uses images give for each
// key. Entries equal in every field are not listed.
func Diff(old, new *lock.Lock, images []*plan.Image) []Change {
	uses := map[string][]*plan.Use{}
	for _, img := range images {
		uses[img.Key] = img.Uses
	}
	entries := func(l *lock.Lock) map[string]lock.Entry {
		m := map[string]lock.Entry{}
		if l != nil {
			for _, e := range l.Entries {
				m[e.Name] = e
			}
		}
		return m
	}
	before, after := entries(old), entries(new)
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	var out []Change
	for k := range keys {
		b, inOld := before[k]
		a, inNew := after[k]
		if inOld && inNew && reflect.DeepEqual(normal(b), normal(a)) {
			continue
		}
		c := Change{Key: k, Uses: uses[k]}
		if inOld {
			c.Old = &b
		}
		if inNew {
			c.New = &a
		}
		if !inNew {
			c.Uses = nil
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// StaleEntry is one difference `stowage lock` would make to a lock file
// (v1alpha1.StaleEntry, part of lock -o json).
type StaleEntry = v1alpha1.StaleEntry

// StaleEntries says what `stowage lock` would change in a lock file,
// without the network: next and missing are registry.Pending's answer for
// old and images, data is the file's bytes. One entry per lock key, sorted
// by key, or one "format" entry when only the bytes differ. Empty when
// `stowage lock` would change nothing.
func StaleEntries(old, next *lock.Lock, missing, images []*plan.Image, data []byte) []StaleEntry {
	var out []StaleEntry
	for _, img := range missing {
		out = append(out, StaleEntry{Status: "missing", Key: img.Key, Reference: img.Ref.Written})
	}
	for _, c := range Diff(old, next, images) {
		switch {
		case c.Removed():
			out = append(out, StaleEntry{Status: "unused", Key: c.Key})
		case c.Added():
			// Pending adds nothing.
		default:
			out = append(out, StaleEntry{Status: "changed", Key: c.Key, Reference: c.New.Reference, Recorded: c.Old.Reference})
		}
	}
	if len(out) == 0 && len(missing) == 0 && !bytes.Equal(next.Marshal(), data) {
		out = append(out, StaleEntry{Status: "format"})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Summary is `stowage lock`'s one-line report of changes to a lock of total
// entries: "up to date (N images)" or "A added, R removed, C changed (N
// images)".
func Summary(changes []Change, total int) string {
	if len(changes) == 0 {
		return fmt.Sprintf("up to date (%s)", words.Count(total, "image"))
	}
	var added, removed, changed int
	for _, c := range changes {
		switch {
		case c.Added():
			added++
		case c.Removed():
			removed++
		default:
			changed++
		}
	}
	return fmt.Sprintf("%d added, %d removed, %d changed (%s)", added, removed, changed, words.Count(total, "image"))
}

// normal makes empty and nil platform lists compare equal.
func normal(e lock.Entry) lock.Entry {
	if len(e.Platforms) == 0 {
		e.Platforms = nil
	}
	return e
}
