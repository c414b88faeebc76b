package apitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/schema"
)

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

var bins struct {
	once             sync.Once
	dir              string
	stowageFn, stowa string
	err              error
}

// binaries returns cmd/stowage-fn (fn.Main, built from this module) and
// the stowage binary: $STOWAGE_BIN (make test's) or built from ../ with
// the main module's own go.mod. Both are built once per test process, the
// first alone in its folder (for PATH).
func binaries(t *testing.T) (stowageFn, stowage string) {
	t.Helper()
	bins.once.Do(func() {
		bins.dir, bins.err = os.MkdirTemp("", "stowage-apitest-")
		if bins.err != nil {
			return
		}
		fnDir := filepath.Join(bins.dir, "fn")
		if bins.err = os.Mkdir(fnDir, 0o755); bins.err != nil {
			return
		}
		bins.stowageFn = filepath.Join(fnDir, "stowage-fn")
		if out, err := exec.Command("go", "build", "-o", bins.stowageFn, "./cmd/stowage-fn").CombinedOutput(); err != nil {
			bins.err = errors.New("go build ./cmd/stowage-fn: " + err.Error() + "\n" + string(out))
			return
		}
		if p := os.Getenv("STOWAGE_BIN"); p != "" {
			bins.stowa = p
			return
		}
		root, err := filepath.Abs("..")
		if err != nil {
			bins.err = err
			return
		}
		bins.stowa = filepath.Join(bins.dir, "stowage")
		cmd := exec.Command("go", "build", "-o", bins.stowa, "./cmd/stowage")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = errors.New("go build ./cmd/stowage: " + err.Error() + "\n" + string(out))
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.stowageFn, bins.stowa
}

// runBin runs bin with args in dir, stdin in, and returns stdout, stderr
// and the exit code.
func runBin(t *testing.T, bin, dir string, in []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", bin, err)
	}
	return stdout.Bytes(), stderr.String(), cmd.ProcessState.ExitCode()
}

const argo = "../examples/gitops-argo/prepull"

// argoInput is the ResourceList kustomize hands the function for
// examples/gitops-argo/prepull: its lock and Deployment as items (with
// the path annotation kustomize adds), its stowage.yaml as the
// functionConfig.
func argoInput(t *testing.T) []byte {
	t.Helper()
	read := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join(argo, name))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	var items []any
	for i, name := range []string{"stowage.lock.yaml", "notebook-controller.yaml"} {
		obj := read(name)
		meta, _ := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann["config.kubernetes.io/path"] = name
		ann["config.kubernetes.io/index"] = strconv.Itoa(i)
		meta["annotations"] = ann
		items = append(items, obj)
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "functionConfig": read("stowage.yaml"), "items": items})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFnBinary: the function built in another module as
// `func main() { os.Exit(fn.Main()) }` runs as declared for stowage
// (args: [fn]) and without args, giving `stowage fn`'s output, stderr
// and exit code on the example's ResourceList; each failure that is not
// a result is one line on stderr naming the program, with exit 1, or 2
// for a usage mistake.
func TestFnBinary(t *testing.T) {
	stowageFn, stowage := binaries(t)
	in := argoInput(t)
	want, wantErr, wantCode := runBin(t, stowage, argo, in, "fn")
	if wantCode != 0 || !bytes.Contains(want, []byte("kind: DaemonSet")) {
		t.Fatalf("stowage fn: exit %d\n%s\n%s", wantCode, wantErr, want)
	}
	for _, args := range [][]string{{"fn"}, nil} {
		out, stderr, code := runBin(t, stowageFn, argo, in, args...)
		if code != wantCode || stderr != wantErr || !bytes.Equal(out, want) {
			t.Errorf("stowage-fn %v: exit %d, stderr %q, stdout:\n%s\nwant stowage fn's: exit %d, stderr %q, stdout:\n%s", args, code, stderr, out, wantCode, wantErr, want)
		}
	}

	cases := []struct {
		name   string
		args   []string
		in     []byte
		code   int
		stderr string // a prefix of stderr
	}{
		{"malformed YAML", []string{"fn"}, []byte("items: [\n"), 1, "stowage-fn: failed to read ResourceList input: MalformedYAMLError: yaml: "},
		{"unknown flag", []string{"fn", "--bogus"}, in, 2, "stowage-fn: unknown flag: --bogus\nRun 'stowage-fn --help' for usage.\n"},
		{"over --max-input-bytes", []string{"fn", "--max-input-bytes", "100"}, in, 1, "stowage-fn: failed to read ResourceList input: the ResourceList on stdin is larger than 100 bytes, the limit of stowage-fn; raise it with --max-input-bytes in the exec declaration's args\n"},
		{"another argument", []string{"fn", "render"}, in, 2, "stowage-fn: unexpected argument \"render\": "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runBin(t, stowageFn, argo, tc.in, tc.args...)
			if code != tc.code || !strings.HasPrefix(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr starting %q", code, stderr, tc.code, tc.stderr)
			}
			if len(out) != 0 {
				t.Errorf("stdout: %s", out)
			}
		})
	}

	help, _, code := runBin(t, stowageFn, argo, nil, "--help")
	if code != 0 || !bytes.Contains(help, []byte("path: stowage-fn ")) || bytes.Contains(help, []byte("args: [fn]")) {
		t.Errorf("--help: exit %d, want the declaration path: stowage-fn without args:\n%s", code, help)
	}
}

// kustomize returns the real kustomize (on PATH, else in $(go env
// GOPATH)/bin); without it the test skips, unless
// STOWAGE_REQUIRE_KUSTOMIZE is set (CI), where it fails.
func kustomize(t *testing.T) string {
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

// TestFnBinaryKustomize: the real `kustomize build --enable-alpha-plugins
// --enable-exec` of examples/gitops-argo/prepull with its declaration
// pointed at stowage-fn (path: stowage-fn, args: [fn] as written for
// stowage) gives the example's golden build.
func TestFnBinaryKustomize(t *testing.T) {
	k := kustomize(t)
	stowageFn, _ := binaries(t)
	dir := t.TempDir()
	for _, name := range []string{"kustomization.yaml", "notebook-controller.yaml", "stowage.lock.yaml", "stowage.yaml"} {
		data, err := os.ReadFile(filepath.Join(argo, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "stowage.yaml" {
			decl := "path: stowage\n        args: [fn]\n"
			if !bytes.Contains(data, []byte(decl)) {
				t.Fatalf("%s/stowage.yaml does not declare %q", argo, decl)
			}
			data = bytes.Replace(data, []byte("path: stowage\n"), []byte("path: stowage-fn\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(k, "build", "--enable-alpha-plugins", "--enable-exec", dir)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(stowageFn)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kustomize build: %v\n%s", err, stderr.String())
	}
	want, err := os.ReadFile("../golden/gitops-argo/build.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("kustomize build with stowage-fn differs from golden/gitops-argo/build.yaml:\n%s", stdout.String())
	}
}

// TestFnBinaryChild: stowage-fn is the child its configs are evaluated
// in (fn.Main dispatches schema.ServeChild): a CUE string doubled towards
// 4 GiB, evaluated in it, stops at the memory limit with the limit's
// error instead of exhausting memory.
func TestFnBinaryChild(t *testing.T) {
	stowageFn, _ := binaries(t)
	var b strings.Builder
	b.WriteString("package stowage\n_s0: \"x\"\n")
	for i := 1; i <= 32; i++ {
		b.WriteString("_s" + strconv.Itoa(i) + ": _s" + strconv.Itoa(i-1) + " + _s" + strconv.Itoa(i-1) + "\n")
	}
	b.WriteString("images: x: reference: \"busybox:\\(len(_s32))\"\n")
	start := time.Now()
	_, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/double.cue", Data: []byte(b.String())}},
		schema.WithChild(stowageFn), schema.WithLimits(schema.Limits{Memory: 256 << 20}))
	if want := "cfg/double.cue: evaluating the config took more than 268435456 bytes of memory, the limit of a config; raise it with --max-config-memory"; err == nil || err.Error() != want {
		t.Errorf("doubling in stowage-fn: %v\nwant %s", err, want)
	}
	t.Logf("doubling stopped after %v", time.Since(start))
}
