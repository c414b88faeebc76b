// Command stowage-helper is the small static binary that stowage's pre-pull
// DaemonSets run inside every pulled image, so that no image needs a shell
// or any program of its own (distroless and scratch images work).
//
//	stowage-helper install DEST   copy this binary to DEST (mode 0555)
//	stowage-helper pulled REF     print "pulled REF" and exit 0
//
// The first init container runs "install" from the helper image into a
// shared emptyDir; each further init container runs the copy with "pulled".
// Build it static: CGO_ENABLED=0 go build -trimpath ./cmd/stowage-helper.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one helper command; exit code 0 on success, 1 on failure,
// 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: stowage-helper install DEST | pulled REF")
		return 2
	}
	switch args[0] {
	case "install":
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "stowage-helper: %v\n", err)
			return 1
		}
		if err := install(self, args[1]); err != nil {
			fmt.Fprintf(stderr, "stowage-helper: %v\n", err)
			return 1
		}
		return 0
	case "pulled":
		fmt.Fprintf(stdout, "pulled %s\n", args[1])
		return 0
	default:
		fmt.Fprintf(stderr, "stowage-helper: unknown command %q\n", args[0])
		return 2
	}
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
