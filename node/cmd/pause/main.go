// Command pause is the long-running program of the real-node suite's test
// images: the pod sandbox (containerd's sandbox_image), the rendered
// DaemonSets' main container and the workloads' containers. It waits for
// SIGTERM or SIGINT and exits 0, reaping children meanwhile as a sandbox's
// first process must. Built static (CGO_ENABLED=0) by the suite and copied
// into images that hold nothing else: no shell, no libc.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
