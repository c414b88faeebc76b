package bump

import (
	"bytes"
	"fmt"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

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

// NewUpdate decides what a lock run writes to path: next is what it
// learned from old (data its bytes, nil when the file did not exist)
// about images; runErr, when set, the failures of failed of them. The
// entries that resolved are kept even when others failed. Update.Err
// wraps runErr, saying what the file keeps and that running lock again
// resolves the rest.
func NewUpdate(path string, old, next *lock.Lock, data []byte, images []*plan.Image, runErr error, failed int) Update {
	u := Update{Changes: Diff(old, next, images), Data: next.Marshal()}
	learned := runErr == nil || data != nil || len(next.Entries) > 0
	u.Write = learned && !bytes.Equal(u.Data, data)
	switch {
	case runErr == nil:
	case len(next.Entries) == 0:
		u.Err = fmt.Errorf("%w\n%s not written: none of the %d images resolved; run `stowage lock` again once they do",
			runErr, path, len(images))
	case !u.Write:
		u.Err = fmt.Errorf("%w\n%s not changed: it keeps its %d entries; %d of %d images missing: run `stowage lock` again to resolve them",
			runErr, path, len(next.Entries), failed, len(images))
	default:
		u.Err = fmt.Errorf("%w\n%s keeps the %d entries it has; %d of %d images missing: run `stowage lock` again to resolve them",
			runErr, path, len(next.Entries), failed, len(images))
	}
	return u
}
