//go:build !linux

package imageset

// childrenPeakRSS is not measured outside Linux.
func childrenPeakRSS() (int64, bool) { return 0, false }
