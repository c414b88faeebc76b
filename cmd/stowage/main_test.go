package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// TestMain points $DOCKER_CONFIG at a Docker config of the test process's
// own (dockerLogin), runs the tests, and removes that config and the
// stowage binary the tests built and shared, if they built one
// (testbin.Stowage).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stowage-test-docker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dockerAuths.dir = dir
	os.Setenv("DOCKER_CONFIG", dir)
	code := testbin.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// run executes the command line args as main does, without a signal to
// cancel it, and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	return runContext(context.Background(), args, stdin, stdout, stderr, getenv)
}
