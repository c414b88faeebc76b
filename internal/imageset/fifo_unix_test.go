//go:build unix

package imageset

import (
	"path/filepath"
	"syscall"
)

// mkfifo makes dir/templates/pipe.yaml a FIFO.
func mkfifo(dir string) error {
	return syscall.Mkfifo(filepath.Join(dir, "templates", "pipe.yaml"), 0o644)
}
