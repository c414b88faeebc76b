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
