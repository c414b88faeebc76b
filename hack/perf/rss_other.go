//go:build !linux

package main

import "os"

// peakRSS is 0 outside Linux: the benchmarks are measured on Linux, and
// other platforms report ru_maxrss in other units or not at all.
func peakRSS(*os.ProcessState) int64 { return 0 }
