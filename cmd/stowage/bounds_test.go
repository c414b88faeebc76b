package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKustomizationDeadline: a kustomization of 4,000 small ConfigMaps
// in one file, whose build by kustomize's API takes tens of seconds on a
// busy machine (kustomize appends each resource after comparing it with
// every one before it), stops at --deadline for every command that reads
// a kustomization, exit 1 with the flag named, instead of running on. The
// real binary: the abandoned build must end with the process.
func TestKustomizationDeadline(t *testing.T) {
	// Not parallel: it asserts the wall time of each run (6 s for a 1 s
	// deadline), which other tests' load can stretch.
	bin := stowageBinary(t)
	dir := t.TempDir()
	var many strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&many, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\ndata: {k: v%d}\n", i, i)
	}
	writeTree(t, dir, map[string]string{
		"kustomization.yaml": "resources: [stowage.lock.yaml, many.yaml]\ntransformers: [s.yaml]\n",
		"many.yaml":          many.String(),
		"s.yaml":             "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: pins\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: stowage\n        args: [fn]\nspec: {}\n",
		"stowage.lock.yaml":  "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  images: []\n",
	})
	for _, args := range [][]string{{"vet", "--deadline", "1s"}, {"lock", "--deadline", "1s"}} {
		t.Run(args[0], func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, append(args, dir)...)
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("%v: err %v, want exit 1; stderr:\n%s", args, err, stderr.String())
			}
			want := "kustomization " + dir + ": kustomize's build did not end in time (it ran past --deadline 1s; raise it for a kustomization this large)"
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr:\n%s\nwant %q", stderr.String(), want)
			}
			// One second of deadline, the process start and the copy of
			// the tree; the build alone takes more than 10 s.
			if took > 6*time.Second {
				t.Errorf("took %v with --deadline 1s", took)
			}
		})
	}
}
