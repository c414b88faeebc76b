//go:build stowagefront && windows

package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
)

// execFull runs stowage-full as a child with the front's standard streams
// (Windows has no exec) and exits with its exit code. Ctrl-C reaches both
// processes from the console; the front leaves it to the child. It
// returns only if the child cannot be started.
func execFull(full string, args, env []string) error {
	cmd := exec.Command(full, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdin, os.Stdout, os.Stderr, env
	signal.Ignore(os.Interrupt)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		return err
	}
	os.Exit(exitOK)
	return nil
}
