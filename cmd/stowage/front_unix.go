//go:build stowagefront && !windows

package main

import "syscall"

// execFull replaces the front's process with stowage-full (execve): the
// same process ID, standard streams and signals, and its exit code is the
// command's. It returns only if the exec fails.
func execFull(full string, args, env []string) error {
	return syscall.Exec(full, append([]string{full}, args...), env)
}
