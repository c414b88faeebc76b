//go:build !unix

package mirror

import "errors"

// mkfifo fails outside Unix, which has no FIFOs in the file system; the
// tests run on Linux (README "Platforms").
func mkfifo(string, uint32) error { return errors.ErrUnsupported }
