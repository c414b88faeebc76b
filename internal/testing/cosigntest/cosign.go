// Package cosigntest runs the real cosign CLI in tests: signing images on a
// registry on 127.0.0.1 with a key pair, attesting, attaching an SBOM,
// verifying and listing what is attached, offline (no transparency log, no
// TUF, no Fulcio).
//
// cosign is looked up on PATH and in $(go env GOPATH)/bin; without it a
// test is skipped with one line naming the install command, or fails when
// RequireEnv is set (CI's .ci/run installs the pinned Version and sets it).
package cosigntest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Version is the cosign release the tests are written against, the one
// .ci/run installs: the newest that builds on Go 1.26.
const Version = "v3.1.3"

// Module is cosign's command package, for go install.
const Module = "github.com/sigstore/cosign/v3/cmd/cosign"

// RequireEnv turns a missing cosign from a skip into a failure.
const RequireEnv = "STOWAGE_REQUIRE_COSIGN"

// timeout bounds one cosign command.
const timeout = 2 * time.Minute

// Cosign is the cosign binary with a home of its own (keys, TUF cache),
// for one test.
type Cosign struct {
	// Bin is the binary's path; Dir the folder commands run in and the
	// key pair is kept in.
	Bin, Dir string
	tb       testing.TB
}

// Lookup finds cosign, or skips tb (fails it with RequireEnv set).
func Lookup(tb testing.TB) *Cosign {
	tb.Helper()
	bin, err := exec.LookPath("cosign")
	if err != nil {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
				gopath = strings.TrimSpace(string(out))
			}
		}
		if p := filepath.Join(gopath, "bin", "cosign"); gopath != "" && isExec(p) {
			bin, err = p, nil
		}
	}
	if err != nil {
		msg := "no cosign on PATH or in $(go env GOPATH)/bin: skipping the tests with real signatures; get it with: go install " + Module + "@" + Version
		if os.Getenv(RequireEnv) != "" {
			tb.Fatalf("%s is set, but %s", RequireEnv, msg)
		}
		tb.Skip(msg)
	}
	return &Cosign{Bin: bin, Dir: tb.TempDir(), tb: tb}
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// env is cosign's environment: a home and TUF root of the test's own, no
// password on the key, no experimental (keyless) mode, and no proxy.
func (c *Cosign) env() []string {
	home := filepath.Join(c.Dir, "home")
	os.MkdirAll(home, 0o700)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HOME", "TUF_ROOT", "COSIGN_PASSWORD", "COSIGN_EXPERIMENTAL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "DOCKER_CONFIG":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "COSIGN_PASSWORD=",
		"DOCKER_CONFIG="+filepath.Join(home, "docker"), "NO_PROXY=*")
}

// Run runs cosign with args in Dir and returns its stdout and stderr; err
// is the exit's (or the timeout's).
func (c *Cosign) Run(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir, cmd.Env = c.Dir, c.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// Must runs cosign and fails the test when it fails, with its output.
func (c *Cosign) Must(args ...string) string {
	c.tb.Helper()
	out, errOut, err := c.Run(args...)
	if err != nil {
		c.tb.Fatalf("cosign %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// KeyPair generates a key pair without a password: Dir/<prefix>.key and
// Dir/<prefix>.pub, returned as paths.
func (c *Cosign) KeyPair(prefix string) (key, pub string) {
	c.tb.Helper()
	c.Must("generate-key-pair", "--output-key-prefix", prefix)
	return filepath.Join(c.Dir, prefix+".key"), filepath.Join(c.Dir, prefix+".pub")
}
