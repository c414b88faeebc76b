package confined

import (
	"os"

	"golang.org/x/sys/unix"
)

// procSuperMagic is procfs's f_type (linux/magic.h PROC_SUPER_MAGIC).
const procSuperMagic = 0x9fa0

// onProcfs reports whether f lives on procfs, whose files claim to be
// regular files of size 0 and then produce any number of bytes.
func onProcfs(f *os.File) bool {
	var sfs unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &sfs) == nil && sfs.Type == procSuperMagic
}
