package fn_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateKustomize = flag.Bool("update-kustomize", false, "rewrite the expected kustomize build outputs")

// kustomizeBin finds the real kustomize binary (.ci/run installs v5.8.2 with
// go install). Without it the tests skip, unless STOWAGE_REQUIRE_KUSTOMIZE
// is set, as in CI, where they fail instead.
func kustomizeBin(t *testing.T) string {
	t.Helper()
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
		t.Fatal("kustomize not found and STOWAGE_REQUIRE_KUSTOMIZE is set: go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2")
	}
	t.Skip("kustomize not installed (go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2)")
	return ""
}

// stowagePath builds the stowage binary into a fresh directory and returns
// a PATH with it first, as an Argo CD repo server with stowage installed
// has it.
func stowagePath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "stowage"), "../../cmd/stowage").CombinedOutput()
	if err != nil {
		t.Fatalf("go build stowage: %v\n%s", err, out)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// build runs kustomize build in dir with PATH and extra flags, returning
// stdout, stderr and the error.
func build(t *testing.T, kustomize, path, dir string, flags ...string) ([]byte, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kustomize, append(append([]string{"build"}, flags...), dir)...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

var execFlags = []string{"--enable-alpha-plugins", "--enable-exec"}

// TestKustomizeBuild runs the real kustomize with stowage as an exec KRM
// function on the GitOps examples and on a pin-only kustomization, and
// compares each build with its expected output byte for byte.
func TestKustomizeBuild(t *testing.T) {
	kustomize := kustomizeBin(t)
	path := stowagePath(t)
	cases := []struct{ name, dir, golden string }{
		{"gitops-argo", "../../examples/gitops-argo/prepull", "../../golden/gitops-argo/build.yaml"},
		{"gitops-flux", "../../examples/gitops-flux/clusters/prod/prepull", "../../golden/gitops-flux/build.yaml"},
		{"pin-only", "testdata/kustomize/pin-only", "testdata/kustomize/pin-only/expected.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := build(t, kustomize, path, tc.dir, execFlags...)
			if err != nil {
				t.Fatalf("kustomize build: %v\n%s", err, stderr)
			}
			if *updateKustomize {
				if err := os.MkdirAll(filepath.Dir(tc.golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tc.golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatalf("%v (run go test ./fn -run TestKustomizeBuild -update-kustomize)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("kustomize build of %s differs from %s:\n%s", tc.dir, tc.golden, out)
			}
			// Nothing of the function's bookkeeping reaches what Argo CD or
			// Flux apply: no ImageLock, no functionConfig, no internal or
			// local-config annotations.
			for _, leak := range []string{"kind: ImageLock", "kind: Stowage", "config.kubernetes.io/", "internal.config"} {
				if bytes.Contains(out, []byte(leak)) {
					t.Errorf("build output contains %q", leak)
				}
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "image: ") && !strings.Contains(line, "@sha256:") {
					t.Errorf("unpinned image in build output: %s", strings.TrimSpace(line))
				}
			}
		})
	}
}

// TestKustomizeSkipsWithoutExec documents the kustomize v5.8.2 behaviour the
// GitOps docs warn about: with --enable-alpha-plugins but without
// --enable-exec the function is skipped silently — exit 0, no DaemonSet,
// images left unpinned. (Without either flag the build fails outright.)
func TestKustomizeSkipsWithoutExec(t *testing.T) {
	kustomize := kustomizeBin(t)
	out, stderr, err := build(t, kustomize, stowagePath(t), "../../examples/gitops-argo/prepull", "--enable-alpha-plugins")
	if err != nil {
		t.Fatalf("kustomize build without --enable-exec failed (it used to skip silently): %v\n%s", err, stderr)
	}
	if bytes.Contains(out, []byte("kind: DaemonSet")) || bytes.Contains(out, []byte("@sha256:")) {
		t.Errorf("the function ran without --enable-exec; the docs and check.sh say it is skipped:\n%s", out)
	}
}

// TestKustomizeFunctionError: a bad functionConfig makes kustomize build
// fail, and the function's message, with the field path, reaches the user.
func TestKustomizeFunctionError(t *testing.T) {
	kustomize := kustomizeBin(t)
	dir := t.TempDir()
	src := "../../examples/gitops-argo/prepull"
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "stowage.yaml" {
			b = bytes.Replace(b, []byte("namespace: submarine"), []byte("namespace: Tenant_A"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := build(t, kustomize, stowagePath(t), dir, execFlags...)
	if err == nil {
		t.Fatalf("kustomize build succeeded on a bad functionConfig:\n%s", out)
	}
	for _, want := range []string{"spec.profiles.notebooks.pullers[0].namespace", `"Tenant_A"`, "lowercase RFC 1123 label"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kustomize's stderr does not show %q:\n%s", want, stderr)
		}
	}
}
