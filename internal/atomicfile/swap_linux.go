package atomicfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// swapDirs exchanges a and b in one step: renameat2(2) with
// RENAME_EXCHANGE (Linux 3.15 and later).
func swapDirs(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// noExchange reports whether err from swapDirs means the kernel or the
// file system lacks RENAME_EXCHANGE (EINVAL, ENOSYS, EOPNOTSUPP), so the
// two-rename fallback is taken.
func noExchange(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}
