package main

import (
	"errors"
	"io"

	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
)

// lockReport is lock's -o json output, on stdout also when lock fails:
// the verdict, the lock file, whether this run wrote it and how many
// entries it holds now, the entries that changed, the images that failed,
// for --check what is out of date, and every other error with its place.
// Field names are stable; every list is sorted (changes and stale by lock
// key, failures by lock key as registry.Errors are) and present, empty
// when there is nothing to list.
type lockReport struct {
	OK bool `json:"ok"`
	// Lock is the lock file's path; empty when the config (which says
	// where the lock is) could not be read.
	Lock string `json:"lock"`
	// Written is true when this run replaced (or created) the file.
	Written bool `json:"written"`
	// Entries is the number of entries the file holds after the run.
	Entries int `json:"entries"`
	// Changes are the entries this run added, removed or changed, as in
	// bump -o json.
	Changes []bump.ReportChange `json:"changes"`
	// Failures are the images that did not resolve, with the registry's
	// answer.
	Failures []lockFailure `json:"failures"`
	// Stale is what --check found out of date; always empty without
	// --check.
	Stale []bump.StaleEntry `json:"stale"`
	// Errors are the failures that are not an image's (the config, the
	// lock file, the flags' files), located as vet -o json locates them.
	Errors []vetError `json:"errors"`
}

// lockFailure is one image lock could not resolve. Message is the line
// lock prints on stderr for it; like every registry answer stowage
// words, it holds no credential.
type lockFailure struct {
	Image    string `json:"image"`
	Key      string `json:"key"`
	UsedBy   string `json:"usedBy,omitempty"`
	Registry string `json:"registry,omitempty"`
	Op       string `json:"operation,omitempty"`
	Message  string `json:"message"`
}

// newLockReport is the report of a run before anything is known.
func newLockReport() *lockReport {
	return &lockReport{Changes: []bump.ReportChange{}, Failures: []lockFailure{},
		Stale: []bump.StaleEntry{}, Errors: []vetError{}}
}

// loaded records the lock file as read: its path and its entries.
func (r *lockReport) loaded(path string, old *lock.Lock) {
	r.Lock = path
	r.Entries = len(old.Entries)
}

// resolved records a resolving run's outcome: the lock it wrote (or kept),
// the changes and whether the file was written.
func (r *lockReport) resolved(next *lock.Lock, changes []bump.Change, written bool) {
	r.Written = written
	if written {
		r.Entries = len(next.Entries)
		r.Changes = bump.NewReport(changes, bump.BodyOptions{}).Changes
	}
}

// write prints the report as JSON with lock's outcome err and returns err
// unchanged, so that the exit code and stderr stay as they are. The
// failures of images go to Failures, a located config error to Errors one
// per place, anything else to Errors as its message; a --check that found
// differences is not an error (Stale says them). A usage error prints no
// report.
func (r *lockReport) write(w io.Writer, err error) error {
	if isUsage(err) {
		return err
	}
	r.OK = err == nil
	var failed registry.Errors
	switch {
	case err == nil, errors.Is(err, errCheckFailed):
	case errors.As(err, &failed):
		for _, e := range failed {
			r.Failures = append(r.Failures, lockFailure{Image: e.Image, Key: e.Key, UsedBy: e.UsedBy, Registry: e.Registry, Op: e.Op, Message: e.Error()})
		}
	default:
		r.Errors = reportErrors(err)
	}
	if werr := writeReport(w, r); werr != nil && err == nil {
		return werr
	}
	return err
}
