package main

import (
	"os"
	"syscall"
)

// peakRSS is the finished process's peak resident set in bytes (getrusage's
// ru_maxrss, which Linux reports in KiB).
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}
