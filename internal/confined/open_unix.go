//go:build unix

package confined

import "syscall"

// openFlags are added to every open: O_NONBLOCK so that opening a FIFO
// returns at once (fstat then refuses it), O_NOCTTY so that a terminal
// never becomes the controlling one.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
