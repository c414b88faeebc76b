//go:build linux

package imageset

import "syscall"

// childrenPeakRSS is the peak resident set of the largest child this
// process waited for, in bytes (Linux reports ru_maxrss in KiB).
func childrenPeakRSS() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, false
	}
	return ru.Maxrss << 10, true
}
