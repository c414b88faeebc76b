//go:build unix

package isolate

import "syscall"

// LimitAddressSpace sets this process's RLIMIT_AS to n bytes, so that an
// allocation past it fails (the Go runtime then exits with "out of
// memory") instead of exhausting the machine. A failure to set it is
// ignored: the heap watch and the parent's time limit still hold.
func LimitAddressSpace(n uint64) {
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: n, Max: n})
}
