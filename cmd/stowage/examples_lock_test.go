package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/schema"
)

// lockedExamples are the example directories whose locks `make
// lock-examples` writes (the Makefile lists the same): config directories,
// and the Argo CD kustomization, whose functionConfig is the config and
// whose Deployment has an image only the function pins.
var lockedExamples = []string{"openpai-offline", "submarine-notebooks", "gpu-platform", "gitops-flux/config", "gitops-argo/prepull"}

// TestExampleLocksFromRegistry produces each example's lock the way
// `make lock-examples` does: a real docker-registry is seeded with the
// deterministic stand-in of every image (internal/testing/offlineimage), each of the
// example's registries mirrored under its own path, and `stowage lock`
// resolves a copy of the example without its lock. The result must equal
// the committed lock byte for byte.
func TestExampleLocksFromRegistry(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	for _, ex := range lockedExamples {
		example := filepath.Join(repoRoot, "examples", filepath.FromSlash(ex))
		t.Run(ex, func(t *testing.T) {
			e, err := registrytest.LoadExample(example)
			if err != nil {
				t.Fatal(err)
			}
			lockPath := filepath.Join(example, e.Lock)
			work := t.TempDir()
			if err := e.Write(work); err != nil {
				t.Fatal(err)
			}
			plan, err := registrytest.SeedFor(e.Config, d.Host, e.Workloads...)
			if err != nil {
				t.Fatal(err)
			}
			push := mustResolver(t, append(plan.Options(), registry.WithInsecure(d.Host))...)
			if err := registrytest.SeedStandIns(context.Background(), push, nil, plan.Refs, 4); err != nil {
				t.Fatal(err)
			}
			cli := append([]string{"lock", work, "--insecure-registry", d.Host}, plan.Flags()...)
			// The Submarine example's password variable, named by the
			// operator (it is never read: no registry here asks for it).
			if _, stderr, code := runCLI(t, map[string]string{"STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}, cli...); code != 0 {
				t.Fatalf("lock exit %d:\n%s", code, stderr)
			}
			got := readFile(t, filepath.Join(work, e.Lock))
			want := readFile(t, lockPath)
			if !bytes.Equal(got, want) {
				t.Errorf("stowage lock against the seeded registry differs from %s (run make lock-examples):\n%s", lockPath, linediff.First(want, got))
			}
		})
	}
}

// copyConfig copies the config files of dir, not its lock, to a new
// directory, with the key and trusted-root files its verify policies name
// (registrytest.CopyTrustFiles).
func copyConfig(t *testing.T, dir string) string {
	t.Helper()
	files, err := schema.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(work, filepath.Base(f.Name)), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.CopyTrustFiles(cfg, dir, work); err != nil {
		t.Fatal(err)
	}
	return work
}
