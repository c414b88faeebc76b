package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSwapDirsLinux: renameat2 exchanges two real directories here, and
// exactly the errnos of a kernel or file system without RENAME_EXCHANGE
// take the fallback (an I/O error does not).
func TestSwapDirsLinux(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "name"), []byte(filepath.Base(d)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := swapDirs(a, b); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, a)["name"]; got != "b" {
		t.Errorf("a/name after the swap = %q, want b", got)
	}
	for err, want := range map[error]bool{
		unix.EINVAL:                      true,
		unix.ENOSYS:                      true,
		unix.EOPNOTSUPP:                  true,
		fmt.Errorf("x: %w", unix.EINVAL): true,
		unix.EIO:                         false,
		unix.EXDEV:                       false,
		unix.ENOENT:                      false,
	} {
		if got := noExchange(err); got != want {
			t.Errorf("noExchange(%v) = %v, want %v", err, got, want)
		}
	}
}
