package bump

import (
	"errors"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/source"
)

// RecordLock records in r a resolving lock run's outcome: whether the
// file was written and, when it was, the entries of next, the lock it
// holds now, and the changes (as NewReport words them for bump -o json).
func RecordLock(r *v1alpha1.LockReport, next *lock.Lock, changes []Change, written bool) {
	r.Written = written
	if written {
		r.Entries = len(next.Entries)
		r.Changes = NewReport(changes, BodyOptions{}).Changes
	}
}

// FinishLock records lock's outcome err in r: OK, the failures of images
// (a registry.Errors) in Failures, any other error in Errors, one per
// place (source.ReportErrors). stale is set when err is a --check that
// found differences: not an error of the report (Stale says them), but
// not OK either.
func FinishLock(r *v1alpha1.LockReport, err error, stale bool) {
	r.OK = err == nil
	var failed registry.Errors
	switch {
	case err == nil, stale:
	case errors.As(err, &failed):
		for _, e := range failed {
			r.Failures = append(r.Failures, v1alpha1.LockFailure{Image: e.Image, Key: e.Key, UsedBy: e.UsedBy, Registry: e.Registry, Op: e.Op, Message: e.Error()})
		}
	default:
		r.Errors = source.ReportErrors(err)
	}
}
