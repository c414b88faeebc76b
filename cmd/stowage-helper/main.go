// Command stowage-helper is the small static binary that stowage's pre-pull
// DaemonSets run inside every pulled image, so that no image needs a shell
// or any program of its own (distroless and scratch images work).
//
//	stowage-helper install DEST   copy this binary to DEST (mode 0555)
//	stowage-helper pulled REF     print "pulled REF" and exit 0
//	stowage-helper wait           block until SIGTERM or SIGINT, then exit 0
//	stowage-helper startup ...    open the node's startup gate, then wait
//
// The first init container runs "install" from the helper image into a
// shared emptyDir; each further init container runs the copy with "pulled";
// the main container runs "wait" from the helper image, so a DaemonSet
// needs no image besides the helper and the ones it pulls. A puller with a
// startup gate runs "startup" as its main container instead (startup.go):
// it lifts the startup taint from its own node, or sets its node condition,
// once every part of the puller on the node has pulled, then waits.
//
// "install" finds its own file from argv[0] (an absolute or relative path,
// or a name looked up in $PATH), never through /proc/self/exe: a container
// may run without /proc mounted. The image built by `make helper-image`
// (internal/helperimage) holds the binary at /stowage-helper and the
// DaemonSet runs it by that absolute path.
//
// Build it static: CGO_ENABLED=0 go build -trimpath ./cmd/stowage-helper.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
)

const usage = "usage: stowage-helper install DEST | pulled REF | wait | startup --self NAME --parts JSON (--taint KEY | --condition TYPE)"

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// run executes one helper command; argv is the whole command line, argv[0]
// included. It returns the exit code: 0 on success, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	if len(argv) < 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmd, args := argv[1], argv[2:]
	switch {
	case cmd == "install" && len(args) == 1:
		self, err := self(argv[0])
		if err == nil {
			err = install(self, args[0])
		}
		if err != nil {
			fmt.Fprintf(stderr, "stowage-helper: install: %v\n", err)
			return 1
		}
		return 0
	case cmd == "pulled" && len(args) == 1:
		fmt.Fprintf(stdout, "pulled %s\n", args[0])
		return 0
	case cmd == "wait" && len(args) == 0:
		wait(ctx)
		return 0
	case cmd == "startup":
		c, err := parseStartup(args, os.Getenv, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "stowage-helper: startup: %v\n", err)
			return 2
		}
		// The stop signal is caught from the start, not only once the
		// gate is open: a pod stopped while it waits, or right after it
		// opened the gate, exits 0 as "wait" does.
		sctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if err := c.run(sctx); err != nil {
			if sctx.Err() != nil && ctx.Err() == nil {
				return 0
			}
			fmt.Fprintf(stderr, "stowage-helper: startup: %v\n", err)
			return 1
		}
		<-sctx.Done()
		return 0
	case cmd == "install" || cmd == "pulled" || cmd == "wait":
		fmt.Fprintln(stderr, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "stowage-helper: unknown command %q\n%s\n", cmd, usage)
		return 2
	}
}

// wait blocks until the process receives SIGTERM or SIGINT (the kubelet's
// stop signal) or ctx ends.
func wait(ctx context.Context) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
}

// self returns the path of the running binary from argv0: a path with a
// slash is used as it is, a bare name is looked up in $PATH. It reads
// nothing under /proc.
func self(argv0 string) (string, error) {
	if argv0 == "" {
		return "", errors.New("argv[0] is empty: cannot find the binary to copy")
	}
	p, err := exec.LookPath(argv0)
	if err != nil {
		return "", fmt.Errorf("finding the binary to copy from argv[0] %q: %w", argv0, err)
	}
	return p, nil
}

// install copies src to dst through a temp file in dst's directory, so a
// half-written binary is never executed.
func install(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".stowage-helper-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
