// Package testbin finds the real tools the tests run beside stowage. It is
// imported by tests only.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Kustomize returns the path of the real kustomize binary (.ci/run
// installs v5.8.2 with go install): on PATH, else in $(go env GOPATH)/bin,
// the rule hack/parts.sh applies. Without it the test skips, unless
// STOWAGE_REQUIRE_KUSTOMIZE is set, as in CI, where it fails instead.
func Kustomize(tb testing.TB) string {
	tb.Helper()
	if p, err := exec.LookPath("kustomize"); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "kustomize")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("STOWAGE_REQUIRE_KUSTOMIZE") != "" {
		tb.Fatal("kustomize not found and STOWAGE_REQUIRE_KUSTOMIZE is set: go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2")
	}
	tb.Skip("kustomize not installed (go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2)")
	return ""
}
