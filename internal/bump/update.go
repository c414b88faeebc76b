package bump

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/words"
)

// LockInput is what one resolving `stowage lock` run starts from
// (source.Source.LockInputs): the source, whose lock file is written;
// its images; the lock the file holds (empty when it does not exist) and
// its bytes (nil then).
type LockInput struct {
	Source  *source.Source
	Images  []*plan.Image
	Old     *lock.Lock
	OldData []byte
	// Connect is called once the source is known to own its lock and
	// before anything is resolved; its error is returned as it is. It
	// returns resolve, which fills Old with the images it lacks
	// (registry.Fill, pins checked and signatures verified) into the new
	// lock: on failure an error, with the lock of the images that
	// resolved when the error is a registry.Errors.
	Connect func() (resolve func(context.Context) (*lock.Lock, error), err error)
}

// Lock is one resolving `stowage lock` run: the images the lock lacks
// resolved, and the file written with what was learned (NewUpdate), also
// when some images failed. It records the outcome in rep (RecordLock) and
// returns the line saying what the file holds now, "PATH: " and Summary
// ("" after a failure that did not change the file), and the run's error:
// Update.Err, or a failure that is no registry.Errors, which leaves the
// file as it was.
func Lock(ctx context.Context, in LockInput, rep *v1alpha1.LockReport) (string, error) {
	src, path := in.Source, in.Source.LockPath
	if err := src.OwnLock(); err != nil {
		return "", err
	}
	resolve, err := in.Connect()
	if err != nil {
		return "", err
	}
	next, lockErr := resolve(ctx)
	var failed registry.Errors
	if lockErr != nil && (next == nil || !errors.As(lockErr, &failed)) {
		return "", fmt.Errorf("%s not changed: %w", path, lockErr)
	}
	u := NewUpdate(path, in.Old, next, in.OldData, in.Images, lockErr, len(failed))
	if u.Write {
		if err := src.WriteLock(ctx, u.Data); err != nil {
			return "", err
		}
	}
	RecordLock(rep, next, u.Changes, u.Write)
	if lockErr != nil && !u.Write {
		return "", u.Err
	}
	return path + ": " + Summary(u.Changes, len(next.Entries)), u.Err
}

// Update is what `stowage lock` makes of one run: the changes from the
// old lock to the new, the new file's bytes and whether they are written.
type Update struct {
	// Changes are Diff of the old and the new lock.
	Changes []Change
	// Data is the new lock's bytes (lock.Lock.Marshal).
	Data []byte
	// Write is set when the file is to be written: its bytes change,
	// and a run that failed learned something (a run that failed and
	// learned nothing creates no file).
	Write bool
	// Err is the run's outcome: nil, or the failure of failed of the
	// images, saying what the file keeps.
	Err error
}

// rerun is the advice after failures, "" when there is none. It is again
// (the words given) only when every failure may pass by itself
// (registry.ImageError.Transient: the network, a timeout, 429, a 5xx);
// when none may, it says that running lock again unchanged fails the same
// way; for a mix, how many of each. Failures not known one by one (an
// error that is no registry.Errors) get no advice: they are not a
// registry's passing trouble.
func rerun(failures registry.Errors, again string) string {
	transient := failures.Transient()
	other := len(failures) - transient
	switch {
	case len(failures) == 0:
		return ""
	case other == 0:
		return again
	case transient == 0 && other == 1:
		return "running lock again will not help until the change the failure names is made"
	case transient == 0:
		return "running lock again will not help until the changes the failures name are made"
	case other == 1:
		return fmt.Sprintf("%d failed on the network or the registry's side and may pass when lock runs again; the other 1 needs the change its failure names first", transient)
	}
	return fmt.Sprintf("%d failed on the network or the registry's side and may pass when lock runs again; the other %d need the changes their failures name first",
		transient, other)
}

// NewUpdate decides what a lock run writes to path: next is what it
// learned from old (data its bytes, nil when the file did not exist)
// about images; runErr, when set, the failures of failed of them. The
// entries that resolved are kept even when others failed. Update.Err
// wraps runErr, saying what the file keeps and, when runErr is a
// registry.Errors, whether running lock again can resolve the rest
// (rerun).
func NewUpdate(path string, old, next *lock.Lock, data []byte, images []*plan.Image, runErr error, failed int) Update {
	u := Update{Changes: Diff(old, next, images), Data: next.Marshal()}
	learned := runErr == nil || data != nil || len(next.Entries) > 0
	u.Write = learned && !bytes.Equal(u.Data, data)
	var failures registry.Errors
	errors.As(runErr, &failures)
	entries := words.CountAs(len(next.Entries), "entry", "entries")
	missing := fmt.Sprintf("%d of %s missing", failed, words.Count(len(images), "image"))
	switch {
	case runErr == nil:
	case len(next.Entries) == 0:
		none, again := fmt.Sprintf("none of the %d images resolved", len(images)), "run `stowage lock` again once they do"
		if len(images) == 1 {
			none, again = "the image did not resolve", "run `stowage lock` again once it does"
		}
		u.Err = fmt.Errorf("%w\n%s not written: %s%s", runErr, path, none, advice("; ", rerun(failures, again)))
	case !u.Write:
		u.Err = fmt.Errorf("%w\n%s not changed: it keeps its %s; %s%s", runErr, path, entries, missing, advice(": ", rerun(failures, "run `stowage lock` again to resolve them")))
	default:
		u.Err = fmt.Errorf("%w\n%s keeps the %s it has; %s%s", runErr, path, entries, missing, advice(": ", rerun(failures, "run `stowage lock` again to resolve them")))
	}
	return u
}

// advice is sep and a, or "" when there is no advice a.
func advice(sep, a string) string {
	if a == "" {
		return ""
	}
	return sep + a
}

// WrittenPins are warnings for the images bump does not re-resolve
// because a digest written in the config pins them, when another spelling
// of the same image is written with a tag alone: that tag does not follow
// its registry either (a pin applies to every spelling of the image).
func WrittenPins(images []*plan.Image) []string {
	var out []string
	for _, img := range images {
		if img.Ref.Digest == "" {
			continue
		}
		for _, u := range img.Uses {
			if u.Ref.Digest == "" {
				out = append(out, fmt.Sprintf("%s is not re-resolved: %s pins it by the digest written there, and that pin also holds %s (%s), written without one; remove the digest to let bump follow the tag",
					img.Key, img.Ref.Written, u.Ref.Written, u.UsedBy()))
				break
			}
		}
	}
	return out
}
