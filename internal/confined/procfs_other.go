//go:build !linux

package confined

import "os"

// onProcfs is false outside Linux: no other platform stowage builds for
// mounts a procfs (macOS has none; Windows has none).
func onProcfs(*os.File) bool { return false }
