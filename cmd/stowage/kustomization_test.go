package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/internal/testing/testbin"
)

// A kustomization as a platform team writes it: a base Deployment with an
// image no puller pre-pulls, an overlay that changes its tag with images:
// and runs stowage as a transformer, and a lock listed but not written.
var pinOnlyKustomization = map[string]string{
	"base/kustomization.yaml": "resources: [web.yaml]\n",
	"base/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - name: migrate
        image: ghcr.io/example-org/migrate:1
      containers:
      - name: web
        image: ghcr.io/example-org/web:1
`,
	"prod/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
- ../base
- stowage.lock.yaml
images:
- name: ghcr.io/example-org/web
  newTag: "2"
transformers:
- stowage.yaml
`,
	"prod/stowage.yaml": `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: shop
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: stowage
        args: [fn]
spec:
  profile: shop
  environments:
    jupyter: {image: "apache/submarine:jupyter-notebook-0.7.0"}
  profiles:
    shop:
      pullers: [{name: notebook-images, namespace: shop, environments: [jupyter]}]
`,
}

// TestLockKustomizationThenBuild is the GitOps path end to end: `stowage
// lock` on the kustomization resolves, against docker-registry, the
// pre-pulled image, the helper and both pin-only workload images (the one
// images: retags at its new tag), writes the lock where the kustomization
// lists it; vet and lock --check then agree; and the real kustomize, running
// stowage as its exec function, builds it with every image pinned to the
// lock's digests.
func TestLockKustomizationThenBuild(t *testing.T) {
	t.Parallel()
	kustomize := testbin.Kustomize(t)
	d := registrytest.Start(t, registrytest.Options{})
	root := t.TempDir()
	for p, c := range pinOnlyKustomization {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prod := filepath.Join(root, "prod")

	// Without --root the base is outside what lock may read.
	_, stderr, code := runCLI(t, nil, "lock", prod, "--insecure-registry", d.Host)
	if code != 1 || !strings.Contains(stderr, `resources[0] "../base" is outside the root`) {
		t.Fatalf("lock without --root: exit %d\n%s", code, stderr)
	}

	ex, err := registrytest.LoadExampleRoot(prod, root)
	if err != nil {
		t.Fatal(err)
	}
	var workloads []string
	for _, w := range ex.Workloads {
		workloads = append(workloads, w.Object+" "+w.Field+" "+w.Image)
	}
	wantWorkloads := "Deployment shop/web spec.template.spec.initContainers[0].image ghcr.io/example-org/migrate:1\n" +
		"Deployment shop/web spec.template.spec.containers[0].image ghcr.io/example-org/web:2"
	if got := strings.Join(workloads, "\n"); got != wantWorkloads {
		t.Fatalf("workloads:\n%s\nwant:\n%s", got, wantWorkloads)
	}
	p, err := registrytest.SeedFor(ex.Config, d.Host, ex.Workloads...)
	if err != nil {
		t.Fatal(err)
	}
	push := mustResolver(t, append(p.Options(), registry.WithInsecure(d.Host))...)
	if err := registrytest.SeedStandIns(context.Background(), push, nil, p.Refs, 4); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"lock", prod, "--root", root, "--quiet", "--insecure-registry", d.Host}, p.Flags()...)
	stdout, stderr, code := runCLI(t, nil, args...)
	if code != 0 {
		t.Fatalf("lock exit %d:\n%s", code, stderr)
	}
	lockPath := filepath.Join(prod, lock.FileName)
	if want := lockPath + ": 4 added, 0 removed, 0 changed (4 images)\n"; string(stdout) != want {
		t.Errorf("lock said %q, want %q", stdout, want)
	}
	l, names := lockEntryNames(t, lockPath)
	wantKeys := "docker.io/apache/submarine:jupyter-notebook-0.7.0 ghcr.io/example-org/migrate:1 ghcr.io/example-org/web:2 ghcr.io/stowage/stowage-helper:v0.1.0"
	if got := names; got != wantKeys {
		t.Fatalf("lock entries %s, want %s", got, wantKeys)
	}

	for _, cli := range [][]string{{"lock", prod, "--root", root, "--check"}, {"vet", prod, "--root", root}} {
		if out, stderr, code := runCLI(t, nil, cli...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", cli, code, out, stderr)
		}
	}

	// bump re-resolves the same four (nothing moved), mirror plans all four
	// for a site, the Deployment's images included.
	bumpArgs := append([]string{"bump", prod, "--root", root, "--quiet", "--exit-code", "--insecure-registry", d.Host}, p.Flags()...)
	if _, stderr, code := runCLI(t, nil, bumpArgs...); code != 0 || !strings.Contains(stderr, "every digest in "+lockPath+" is current (4 images)") {
		t.Errorf("bump: exit %d\n%s", code, stderr)
	}
	mirrorArgs := append([]string{"mirror", prod, "--root", root, "--quiet", "--dry-run", "-o", "json", "--to", d.Host + "/site", "--insecure-registry", d.Host}, p.Flags()...)
	out, stderr, code := runCLI(t, nil, mirrorArgs...)
	if code != 0 {
		t.Fatalf("mirror --dry-run: exit %d\n%s", code, stderr)
	}
	for _, key := range []string{"ghcr.io/example-org/migrate:1", "ghcr.io/example-org/web:2", "docker.io/apache/submarine:jupyter-notebook-0.7.0", "ghcr.io/stowage/stowage-helper:v0.1.0"} {
		if !strings.Contains(string(out), `"`+key+`"`) {
			t.Errorf("mirror plan lacks %s:\n%s", key, out)
		}
	}

	// The real kustomize, with stowage on PATH as on a repo server.
	bin := stowageBinary(t)
	cmd := exec.Command(kustomize, "build", "--enable-alpha-plugins", "--enable-exec", prod)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var outb, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &outb, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kustomize build: %v\n%s", err, errb.String())
	}
	built := outb.String()
	for _, key := range []string{"ghcr.io/example-org/migrate:1", "ghcr.io/example-org/web:2"} {
		e, ok := l.Lookup(key)
		if !ok {
			t.Fatalf("no entry %s", key)
		}
		if want := "image: " + key + "@" + e.Digest + "\n"; !strings.Contains(built, want) {
			t.Errorf("kustomize build lacks %q:\n%s", want, built)
		}
	}
	if strings.Contains(built, "kind: ImageLock") || !strings.Contains(built, "kind: DaemonSet") {
		t.Errorf("kustomize build output: want the DaemonSet and no ImageLock:\n%s", built)
	}
}

// TestKustomizationFetchesNothing: a builtin transformer listed before
// stowage's whose config names an http URL (kustomize's loader would GET
// it) is refused before the build, naming the file, the field and the URL,
// and the server sees no request.
func TestKustomizationFetchesNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "[]")
	}))
	defer srv.Close()
	dir := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": "resources: [stowage.lock.yaml]\ntransformers: [patch.yaml, stowage.yaml]\n",
		"patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + srv.URL + "/p.yaml\n",
		"stowage.yaml":       "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: s\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: stowage, args: [fn]}\nspec: {}\n",
	}
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(stowageBinary(t), "vet", dir)
	out, err := cmd.CombinedOutput()
	host := strings.TrimPrefix(srv.URL, "http://")
	if err == nil || !strings.Contains(string(out), `patch.yaml:1): PatchTransformer p: path: "http://`+host+`/p.yaml" is a URL: stowage reads no remote file`) {
		t.Errorf("vet: %v\n%s", err, out)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server saw %d request(s)", n)
	}
}

// lockEntryNames reads the lock at path and returns it with its entries'
// names, in file order, joined by spaces.
func lockEntryNames(t *testing.T, path string) (*lock.Lock, string) {
	t.Helper()
	l, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range l.Entries {
		names = append(names, e.Name)
	}
	return l, strings.Join(names, " ")
}

// TestVetListsUnpinnedStrings: vet on a kustomization whose items name an
// image no pod template and no image place holds passes, prints the
// function's warning for it, counts it in the verdict and lists it in
// -o json's unpinned; the images of the declared places are counted as
// pinned.
func TestVetListsUnpinnedStrings(t *testing.T) {
	const dir = "../../fn/testdata/kustomize/pin-places"
	out, stderr, code := runCLI(t, nil, "vet", dir)
	if code != 0 {
		t.Fatalf("vet: exit %d\n%s%s", code, out, stderr)
	}
	if want := "ok: 9 workload images pinned, 1 string read as an image reference left unpinned (warnings above)\n"; string(out) != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if !strings.Contains(stderr, `warning: data.extra-image: "quay.io/example-org/undeclared:v9" reads as an image reference and is not pinned`) || strings.Count(stderr, "warning:") != 1 {
		t.Errorf("stderr does not hold exactly the one warning:\n%s", stderr)
	}
	out, _, code = runCLI(t, nil, "vet", "-o", "json", dir)
	var rep struct {
		Unpinned []struct{ Object, Field, Reference string }
	}
	if err := json.Unmarshal(out, &rep); err != nil || code != 0 {
		t.Fatalf("vet -o json: exit %d, %v\n%s", code, err, out)
	}
	if len(rep.Unpinned) != 1 || rep.Unpinned[0].Object != "ConfigMap leftover" || rep.Unpinned[0].Field != "data.extra-image" || rep.Unpinned[0].Reference != "quay.io/example-org/undeclared:v9" {
		t.Errorf("unpinned = %+v", rep.Unpinned)
	}
}

// TestLockFindsNestedPodTemplatesAndPlaces: `stowage lock`, against
// docker-registry, on the function's fixtures of custom resources with pod
// templates outside the conventional paths and of declared image places
// (their committed locks left out), resolves every image the function pins
// there, and lock --check and vet then agree.
func TestLockFindsNestedPodTemplatesAndPlaces(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	for _, tc := range []struct {
		fixture string
		want    int
	}{
		{"pin-custom-resources", 10},
		{"pin-places", 8},
	} {
		dir := t.TempDir()
		src := filepath.Join(repoRoot, "fn", "testdata", "kustomize", tc.fixture)
		for _, f := range []string{"kustomization.yaml", "pin.yaml", "resources.yaml"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ex, err := registrytest.LoadExample(dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := registrytest.SeedFor(ex.Config, d.Host, ex.Workloads...)
		if err != nil {
			t.Fatal(err)
		}
		push := mustResolver(t, append(p.Options(), registry.WithInsecure(d.Host))...)
		if err := registrytest.SeedStandIns(context.Background(), push, nil, p.Refs, 4); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"lock", dir, "--quiet", "--insecure-registry", d.Host}, p.Flags()...)
		stdout, stderr, code := runCLI(t, nil, args...)
		if code != 0 {
			t.Fatalf("%s: lock exit %d:\n%s", tc.fixture, code, stderr)
		}
		lockPath := filepath.Join(dir, lock.FileName)
		if want := fmt.Sprintf("%s: %d added, 0 removed, 0 changed (%d images)\n", lockPath, tc.want, tc.want); string(stdout) != want {
			t.Errorf("%s: lock said %q, want %q", tc.fixture, stdout, want)
		}
		_, want := lockEntryNames(t, filepath.Join(src, lock.FileName))
		if _, names := lockEntryNames(t, lockPath); names != want {
			t.Errorf("%s: lock entries %s, want the fixture's %s", tc.fixture, names, want)
		}
		for _, cli := range [][]string{{"lock", dir, "--check"}, {"vet", dir}} {
			if out, stderr, code := runCLI(t, nil, cli...); code != 0 {
				t.Errorf("%s %v: exit %d\n%s%s", tc.fixture, cli, code, out, stderr)
			}
		}
	}
}

// TestKustomizeLogLabelled: kustomize's API warns through the standard log
// package (here about a var the kustomization defines and never uses); the
// real binary labels that line as kustomize's, not Helm's.
func TestKustomizeLogLabelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(repoRoot, "fn", "testdata", "kustomize", "pin-only")
	for _, f := range []string{"kustomization.yaml", "pin.yaml", "app.yaml", "stowage.lock.yaml"} {
		b := readFile(t, filepath.Join(src, f))
		if f == "kustomization.yaml" {
			b = append(b, "vars:\n- name: WEB\n  objref: {kind: Deployment, name: web, apiVersion: apps/v1}\n"...)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(stowageBinary(t), "vet", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vet: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stowage: kustomize: well-defined vars that were never replaced: WEB\n") || strings.Contains(stderr.String(), "helm") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// TestLockLargeResourceFile: a kustomization with a single resource file
// of 8.6 MB (a ConfigMap holding a large value beside a Deployment) is
// locked against docker-registry, as the function with a raised
// --max-input-bytes builds it; without the raise, lock warns that
// kustomize build would fail on the function's default bound and vet
// refuses it, and with the raise in the exec declaration neither does.
func TestLockLargeResourceFile(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	dir := t.TempDir()
	big := strings.Repeat("a line of a large value\n", 8_600_000/24)
	res := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  big: |\n" +
		indent(big) +
		"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: web, image: ghcr.io/example-org/web:1}\n"
	if len(res) < 8_600_000 {
		t.Fatalf("the resource file holds %d bytes", len(res))
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.yaml", res)
	write("kustomization.yaml", "resources: [stowage.lock.yaml, big.yaml]\ntransformers: [pin.yaml]\n")
	pin := func(args string) string {
		return "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: pin\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: stowage\n        args: " + args + "\nspec: {}\n"
	}
	write("pin.yaml", pin("[fn]"))
	ex, err := registrytest.LoadExample(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := registrytest.SeedFor(ex.Config, d.Host, ex.Workloads...)
	if err != nil {
		t.Fatal(err)
	}
	push := mustResolver(t, append(p.Options(), registry.WithInsecure(d.Host))...)
	if err := registrytest.SeedStandIns(context.Background(), push, nil, p.Refs, 4); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"lock", dir, "--quiet", "--insecure-registry", d.Host}, p.Flags()...)
	stdout, stderr, code := runCLI(t, nil, args...)
	if code != 0 || !strings.Contains(string(stdout), "1 added") {
		t.Fatalf("lock: exit %d\n%s%s", code, stdout, stderr)
	}
	const over = "more than the 4194304 the function reads, so kustomize build would fail: the operator raises STOWAGE_MAX_INPUT_BYTES"
	if !strings.Contains(stderr, "stowage: warning: kustomization "+dir+": the ResourceList kustomize would pass to the function holds ") || !strings.Contains(stderr, over) {
		t.Errorf("lock does not warn of the function's bound:\n%s", stderr)
	}
	if _, stderr, code := runCLI(t, nil, "vet", dir); code == 0 || !strings.Contains(stderr, over) {
		t.Errorf("vet: exit %d\n%s", code, stderr)
	}

	// The declaration raising its own bound is not enough: the operator's
	// cap binds.
	write("pin.yaml", pin("[fn, --max-input-bytes, \"20000000\"]"))
	if _, stderr, code := runCLI(t, nil, args...); code != 0 || !strings.Contains(stderr, over) {
		t.Errorf("lock with the declaration raised, the operator's cap not: exit %d\n%s", code, stderr)
	}
	// The operator raises the cap and the declaration its bound: no warning.
	operator := map[string]string{"STOWAGE_MAX_INPUT_BYTES": "20000000"}
	stdout, stderr, code = runCLI(t, operator, args...)
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Fatalf("lock with the bound raised: exit %d\n%s%s", code, stdout, stderr)
	}
	if out, stderr, code := runCLI(t, operator, "vet", dir); code != 0 {
		t.Errorf("vet with the bound raised: exit %d\n%s%s", code, out, stderr)
	}
}

// indent indents every line of s by four spaces, for a block scalar.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}
