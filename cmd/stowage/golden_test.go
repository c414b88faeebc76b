package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stowage/stowage/internal/testing/kubecheck"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under golden/ from the current output")

// parallelUnlessUpdate runs t in parallel with the other tests, except
// with -update: t then rewrites committed files (golden/, docs/) that other
// tests read, so it runs in the serial phase, before any parallel test
// starts.
func parallelUnlessUpdate(t *testing.T) {
	t.Helper()
	if !*update {
		t.Parallel()
	}
}

// repoRoot is the module root, two levels above this package.
var repoRoot = filepath.Join("..", "..")

// exampleEnv is the environment the examples render with: the Submarine
// example reads its Harbor robot password from a variable.
var exampleEnv = map[string]string{"SUBMARINE_HARBOR_PASSWORD": "example-harbor-robot-password", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}

func envFrom(m map[string]string) env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestGoldenExamples renders every profile of every example and compares
// the stream with golden/<example>/<profile>.yaml byte for byte; -update
// rewrites them. Each object must also pass the Kubernetes checks, and -o
// must write the same objects, one file each, listed by kustomization.yaml.
func TestGoldenExamples(t *testing.T) {
	parallelUnlessUpdate(t)
	dirs, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*", schema.LockFile))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example with a lock: %v", err)
	}
	for _, lockPath := range dirs {
		dir := filepath.Dir(lockPath)
		cfg, err := schema.Load(dir, schema.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, profile := range cfg.ProfileNames() {
			name := filepath.Base(dir) + "/" + profile
			t.Run(name, func(t *testing.T) {
				stdout, stderr, code := runCLI(t, exampleEnv, "render", dir, "--profile", profile)
				if code != 0 {
					t.Fatalf("render exit %d: %s", code, stderr)
				}
				if err := kubecheck.CheckAll(stdout); err != nil {
					t.Fatalf("rendered output fails the Kubernetes checks: %v", err)
				}
				golden := filepath.Join(repoRoot, "golden", filepath.Base(dir), profile+".yaml")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, stdout, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd/stowage -update to create it)", err)
				}
				if !bytes.Equal(stdout, want) {
					t.Errorf("render of %s differs from %s; first difference:\n%s", name, golden, linediff.First(want, stdout))
				}

				out := filepath.Join(t.TempDir(), "out")
				if _, stderr, code := runCLI(t, exampleEnv, "render", dir, "--profile", profile, "--output-dir", out); code != 0 {
					t.Fatalf("render -o exit %d: %s", code, stderr)
				}
				if got := concatKustomization(t, out); !bytes.Equal(got, stdout) {
					t.Errorf("the files of -o, in kustomization order, differ from the stream:\n%s", linediff.First(stdout, got))
				}
			})
		}
	}
}

// concatKustomization joins the files a rendered kustomization.yaml lists,
// in its order, as one stream.
func concatKustomization(t *testing.T, dir string) []byte {
	t.Helper()
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n := 0
	for _, line := range strings.Split(string(k), "\n") {
		f, ok := strings.CutPrefix(line, "- ")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
		n++
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != n+1 {
		t.Errorf("%s holds %d files, want the %d listed plus kustomization.yaml", dir, len(ents), n)
	}
	return out.Bytes()
}

// statusRuns lets one in-process run of stowage status at a time: status
// points klog's logger, a process-wide one, at its own stderr
// (cluster.RouteKlog), which klog allows only while no other goroutine
// logs; two status runs at once in one process race. A test that runs
// status many times or for long runs the binary instead (runBinary).
var statusRuns sync.Mutex

// runCLI runs the stowage command line in-process with env as the
// environment and returns stdout, stderr and the exit code. A status
// command line waits for its turn (statusRuns).
func runCLI(t testing.TB, environ map[string]string, args ...string) ([]byte, string, int) {
	t.Helper()
	if slices.Contains(args, "status") {
		statusRuns.Lock()
		defer statusRuns.Unlock()
	}
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr, envFrom(environ))
	return stdout.Bytes(), stderr.String(), code
}

// TestFluxOutputIsFresh is the CI guard of the Flux example: the committed
// render output must be exactly what the config and lock render to.
func TestFluxOutputIsFresh(t *testing.T) {
	t.Parallel()
	config := filepath.Join(repoRoot, "examples", "gitops-flux", "config")
	out := filepath.Join(repoRoot, "examples", "gitops-flux", "clusters", "prod", "prepull")
	if _, stderr, code := runCLI(t, nil, "render", config, "--output-dir", out, "--check"); code != 0 {
		t.Fatalf("render --check exit %d (re-render examples/gitops-flux):\n%s", code, stderr)
	}
}
