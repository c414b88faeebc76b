//go:build linux

package isolate

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child receive SIGKILL when the thread that
// started it ends, so that a parent killed while the child evaluates
// leaves nothing running.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
