//go:build unix

package mirror

import "syscall"

// mkfifo makes a FIFO at path, for the tests that a FIFO is refused
// without blocking.
func mkfifo(path string, mode uint32) error { return syscall.Mkfifo(path, mode) }
