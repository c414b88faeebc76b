//go:build !linux && !darwin

package atomicfile

import (
	"errors"
	"fmt"
	"runtime"
)

// swapDirs has no one-step exchange of two directories on this platform
// (Windows, the BSDs): it always fails with an error wrapping
// errors.ErrUnsupported, and ReplaceDir takes the two-rename fallback.
func swapDirs(a, b string) error {
	return fmt.Errorf("exchange %s and %s on %s: %w", a, b, runtime.GOOS, errors.ErrUnsupported)
}

// noExchange reports whether err from swapDirs means there is no exchange.
func noExchange(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
