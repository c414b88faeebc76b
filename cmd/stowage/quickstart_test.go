package main

import (
	"github.com/stowage/stowage/internal/testing/testbin"

	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// quickstartBlock returns the first ```sh block after the README heading
// "## Quickstart for a GitOps repo".
func quickstartBlock(t *testing.T) string {
	t.Helper()
	readme := string(readFile(t, filepath.Join(repoRoot, "README.md")))
	_, rest, ok := strings.Cut(readme, "\n## Quickstart for a GitOps repo\n")
	if !ok {
		t.Fatal("README.md has no Quickstart heading")
	}
	_, rest, ok = strings.Cut(rest, "\n```sh\n")
	if !ok {
		t.Fatal("the Quickstart has no sh code block")
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the Quickstart's code block does not end")
	}
	return block + "\n"
}

// TestQuickstart runs the README's Quickstart code block as written, with
// bash -eu in an empty HOME (so ~/gitops is outside the clone), against
// Debian's docker-registry on 127.0.0.1. The registry holds the stand-ins
// of the two images the README says lock resolves, each under its source
// registry's name (docker.io/…, ghcr.io/…) as the README says; the block's
// own STOWAGE_* variables point stowage at it, and $REGISTRY (the block's
// documented variable) says where it listens. `stowage` on PATH is the
// binary built from this tree, nothing else. Every command must succeed;
// the lock must hold exactly those two images with their digests, and the
// output a DaemonSet pinning both.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	d := registrytest.Start(t, registrytest.Options{})
	h := d.Host
	images := []string{"apache/submarine:jupyter-notebook-0.7.0", "ghcr.io/stowage/stowage-helper:v0.1.0"}
	seedStandIns(t, h, images)

	bin := filepath.Dir(testbin.Stowage(t))

	home := t.TempDir()
	script := filepath.Join(t.TempDir(), "quickstart.sh")
	if err := os.WriteFile(script, []byte(quickstartBlock(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-eu", script)
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "REGISTRY=" + h,
		"DOCKER_CONFIG=" + filepath.Join(home, ".docker"),
		"GIT_AUTHOR_NAME=quickstart", "GIT_AUTHOR_EMAIL=quickstart@example.invalid",
		"GIT_COMMITTER_NAME=quickstart", "GIT_COMMITTER_EMAIL=quickstart@example.invalid",
		"GIT_CONFIG_NOSYSTEM=1",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Quickstart failed: %v\n%s\nscript:\n%s", err, out, quickstartBlock(t))
	}

	config := filepath.Join(home, "gitops", "platform", "prepull")
	lockPath := filepath.Join(config, lock.FileName)
	l, err := lock.Parse(readFile(t, lockPath), lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != len(images) {
		t.Errorf("the lock has %d entries, want the %d images the README names: %+v", len(l.Entries), len(images), l.Entries)
	}
	ds := string(readFile(t, filepath.Join(home, "gitops", "clusters", "prod", "prepull", "daemonset-submarine-images.yaml")))
	for _, s := range images {
		want, err := offlineimage.Entry(s)
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := l.Lookup(want.Name); !ok || e.Digest != want.Digest {
			t.Errorf("lock entry for %s = %+v, want digest %s", s, e, want.Digest)
		}
		if !strings.Contains(ds, s+"@"+want.Digest) {
			t.Errorf("the DaemonSet does not pin %s@%s:\n%s", s, want.Digest, ds)
		}
	}
	if log, err := exec.Command("git", "-C", filepath.Join(home, "gitops"), "log", "--oneline").Output(); err != nil || !strings.Contains(string(log), "pre-pull notebook images") {
		t.Errorf("the Quickstart's commit is missing: %v %s", err, log)
	}
}

// seedStandIns writes the stand-in of each image (internal/testing/offlineimage) to the
// registry at host under its source registry's name, as the README's
// local registry holds them: host/docker.io/apache/submarine:…,
// host/ghcr.io/stowage/stowage-helper:….
func seedStandIns(t *testing.T, host string, images []string) {
	t.Helper()
	r, err := registry.New(registry.WithInsecure(host))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range images {
		src, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		img, idx, err := offlineimage.For(src)
		if err != nil {
			t.Fatal(err)
		}
		reg := src.Context().RegistryStr()
		if reg == name.DefaultRegistry {
			reg = "docker.io"
		}
		dst, err := name.ParseReference(host + "/" + reg + "/" + src.Context().RepositoryStr() + ":" + src.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		if err := registrytest.Write(context.Background(), r, dst, nil, img, idx); err != nil {
			t.Fatal(err)
		}
	}
}

// localRegistryEnv is the README's two variables for the local registry at
// host.
func localRegistryEnv(host string) map[string]string {
	return map[string]string{
		"STOWAGE_INSECURE_REGISTRY": host,
		"STOWAGE_MIRROR":            "docker.io=" + host + "/docker.io,ghcr.io=" + host + "/ghcr.io",
	}
}
