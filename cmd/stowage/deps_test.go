package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLeavesOutTestOracles checks that the stowage binary does not link
// the packages only tests may use: internal/kubecheck, the Kubernetes
// validation oracle, costs start-up time on every render and function call.
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
	for _, p := range []string{"github.com/stowage/stowage/internal/kubecheck"} {
		if slices.Contains(deps, p) {
			t.Errorf("the stowage binary imports %s", p)
		}
	}
}
