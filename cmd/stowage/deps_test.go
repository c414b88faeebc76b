package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLeavesOutTestOracles checks that the stowage binary does not link
// the packages only tests may use, all of them under internal/testing/ (the
// Kubernetes validation oracle kubecheck would also cost start-up time on
// every render and function call).
func TestBinaryLeavesOutTestOracles(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/stowage/stowage/internal/render") {
		t.Fatalf("go list -deps printed no render; output:\n%s", out)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/stowage/stowage/internal/testing/") {
			t.Errorf("the stowage binary imports %s", p)
		}
	}
}

// TestTestSupportStaysOutOfProduction checks that no package of the module
// imports a package under internal/testing/ outside its tests, except the
// test support itself and the benchmark and generator programs under hack/:
// a library user's build (fn, render, schema) never links a test registry
// or a validation oracle either.
func TestTestSupportStaysOutOfProduction(t *testing.T) {
	t.Parallel()
	const module = "github.com/stowage/stowage/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 20 {
		t.Fatalf("go list named %d packages; output:\n%s", len(lines), out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if strings.HasPrefix(f[0], module+"internal/testing/") || strings.HasPrefix(f[0], module+"hack/") {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"internal/testing/") {
				t.Errorf("%s imports %s outside its tests", f[0], imp)
			}
		}
	}
}
