package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinEnv names the variable through which `make test` hands every test
// package one stowage binary it built once (bin/test/stowage, from
// cmd/stowage with the environment's build settings).
const BinEnv = "STOWAGE_BIN"

var built struct {
	once sync.Once
	dir  string // the temporary folder Main removes; "" when none was made
	path string
	err  error
}

// Stowage returns the absolute path of the stowage binary built from this
// module's cmd/stowage, for the tests that run it as a user does: the
// front (-tags stowagefront) with stowage-full beside it, as the release
// ships them. With STOWAGE_BIN set (make test) it is that file, which must
// be an absolute path to an executable regular file; otherwise the first
// call in a test process builds both in the main module (with its own
// go.mod, as a user builds it) into a temporary folder and later calls
// share them. The folder is removed by Main: a package calling
// Stowage without STOWAGE_BIN must run its tests through Main. A failed
// build fails tb with go build's output.
func Stowage(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		if p := os.Getenv(BinEnv); p != "" {
			built.path, built.err = checkBinary(p)
			return
		}
		built.path, built.err = build()
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.path
}

// Main runs the tests of m and then removes the binary Stowage built, if
// it built one, and exits with the tests' code. Call it from TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it runs the tests of m, removes the binary
// Stowage built, if it built one, and returns the tests' exit code, for a
// TestMain that has more to clean up.
func Run(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	return code
}

// checkBinary returns p if it is an absolute path to an executable regular
// file, else an error naming STOWAGE_BIN.
func checkBinary(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s=%q: want an absolute path", BinEnv, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", BinEnv, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s=%q: not an executable file", BinEnv, p)
	}
	return p, nil
}

// build builds cmd/stowage of the main module, stowage-full and the front,
// into a new temporary folder, found with `go list -m` from the current directory: the module
// itself, or the replaced main module of e2e/, fluxoci/ and node/.
func build() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/stowage/stowage").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m github.com/stowage/stowage: %v", err)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", fmt.Errorf("go list -m github.com/stowage/stowage: no directory")
	}
	dir, err := os.MkdirTemp("", "stowage-bin-")
	if err != nil {
		return "", err
	}
	built.dir = dir
	bin := filepath.Join(dir, "stowage")
	for _, args := range [][]string{
		{"build", "-o", filepath.Join(dir, FullName), "./cmd/stowage"},
		{"build", "-tags", "stowagefront", "-o", bin, "./cmd/stowage"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), root, err, out)
		}
	}
	return bin, nil
}

// FullName is the file name of stowage-full, which the front binary runs
// from its own folder (cmd/stowage/fullonly.go).
const FullName = "stowage-full"

// Full returns the stowage-full beside the front binary Stowage returns,
// failing tb when there is none (STOWAGE_BIN named a binary without it).
func Full(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(filepath.Dir(Stowage(tb)), FullName)
	if _, err := checkBinary(p); err != nil {
		tb.Fatalf("no %s beside the front binary (make test builds both into bin/test): %v", FullName, err)
	}
	return p
}
