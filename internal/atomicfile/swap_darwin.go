package atomicfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// swapDirs exchanges a and b in one step: renamex_np(2) with RENAME_SWAP
// (macOS 10.12 and later, on APFS and HFS+).
func swapDirs(a, b string) error {
	return unix.RenamexNp(a, b, unix.RENAME_SWAP)
}

// noExchange reports whether err from swapDirs means the file system lacks
// RENAME_SWAP (ENOTSUP, ENOSYS; also EINVAL, as for an unknown flag), so
// the two-rename fallback is taken.
func noExchange(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, unix.EINVAL)
}
