package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/internal/testing/testbin"
)

// writeTree writes files (slash paths relative to root) beneath root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// privatePuller is a JupyterImagePuller kustomization whose one image sits
// at host behind basic auth, its password in env:VAR; the helper and pause
// images at open. args are the exec declaration's args.
func privatePuller(host, open, variable, args string) map[string]string {
	return map[string]string{
		"kustomization.yaml": "resources: [stowage.lock.yaml]\ntransformers: [puller.yaml]\n",
		"puller.yaml": `apiVersion: org.apache.submarine/v1
kind: JupyterImagePuller
metadata:
  name: private
  namespace: submarine
  annotations:
    stowage.dev/helper-image: ` + open + `/helper:1
    stowage.dev/helper-pause: ` + open + `/pause:1
    config.kubernetes.io/function: |
      exec:
        path: stowage
        args: ` + args + `
spec:
  images:
  - name: private
    image: ` + host + `/team/private:1
    auth: {username: qa, password: "env:` + variable + `"}
`,
	}
}

// TestKustomizationPasswordsUnderTheFunctionsRule: on a kustomization,
// lock, bump, vet, vet --remote and mirror read a password only where the
// function itself may (STOWAGE_* or the operator's STOWAGE_ALLOW_ENV, which
// the exec declaration's --allow-env may narrow but not widen): with QA_PW
// not named by the operator, each refuses naming the variable and
// STOWAGE_ALLOW_ENV, even when the declaration lists it, and the canary
// value never shows; allowed by the operator or a STOWAGE_ name, lock logs
// in with it.
func TestKustomizationPasswordsUnderTheFunctionsRule(t *testing.T) {
	t.Parallel()
	const canary = "canary-pw-7f3a91"
	d := registrytest.Start(t, registrytest.Options{Users: map[string]string{"qa": canary}})
	o := registrytest.Start(t, registrytest.Options{})
	push := mustResolver(t, registry.WithInsecure(d.Host, o.Host))
	if err := registrytest.SeedStandIns(context.Background(), push, &authn.AuthConfig{Username: "qa", Password: canary}, []string{d.Host + "/team/private:1"}, 1); err != nil {
		t.Fatal(err)
	}
	if err := registrytest.SeedStandIns(context.Background(), push, nil, []string{o.Host + "/helper:1", o.Host + "/pause:1"}, 2); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"QA_PW": canary, "STOWAGE_QA_PW": canary}
	operator := map[string]string{"QA_PW": canary, "STOWAGE_ALLOW_ENV": "QA_PW"}
	noCanary := func(t *testing.T, what string, out []byte, stderr string) {
		t.Helper()
		if strings.Contains(string(out)+stderr, canary) {
			t.Errorf("%s shows the password:\n%s%s", what, out, stderr)
		}
	}
	const refusal = "environment variable QA_PW may not be read (needed by " // …the image…
	const how = "stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV (set in the CI job's or the repository server's environment, never by the repository)"

	// Not allowed: lock refuses and writes nothing.
	dir := t.TempDir()
	writeTree(t, dir, privatePuller(d.Host, o.Host, "QA_PW", "[fn]"))
	lockPath := filepath.Join(dir, lock.FileName)
	out, stderr, code := runCLI(t, env, "lock", dir, "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host)
	noCanary(t, "lock", out, stderr)
	if code != 1 || !strings.Contains(stderr, refusal+d.Host+"/team/private:1): "+how) {
		t.Fatalf("lock with QA_PW not allowed: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(lockPath); !os.IsNotExist(err) {
		t.Fatalf("lock wrote %s: %v", lockPath, err)
	}

	// Allowed by the operator, kept by --allow-env: lock logs in and locks
	// the three images.
	writeTree(t, dir, privatePuller(d.Host, o.Host, "QA_PW", "[fn, --allow-env, QA_PW]"))
	out, stderr, code = runCLI(t, operator, "lock", dir, "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host)
	noCanary(t, "lock --allow-env", out, stderr)
	if code != 0 {
		t.Fatalf("lock with --allow-env QA_PW: exit %d\n%s", code, stderr)
	}
	if want := lockPath + ": 3 added, 0 removed, 0 changed (3 images)\n"; string(out) != want {
		t.Errorf("lock said %q, want %q", out, want)
	}
	for _, args := range [][]string{{"vet", dir}, {"vet", dir, "--remote", "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host}} {
		out, stderr, code := runCLI(t, operator, args...)
		noCanary(t, args[0], out, stderr)
		if code != 0 {
			t.Errorf("%v with --allow-env QA_PW: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	locked, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}

	// The same lock and declaration, the operator naming nothing: every
	// command refuses, even with nothing to resolve, and the lock is
	// unchanged; the declaration's --allow-env QA_PW cannot widen the rule.
	writeTree(t, dir, privatePuller(d.Host, o.Host, "QA_PW", "[fn, --allow-env, QA_PW]"))
	for _, args := range [][]string{
		{"lock", dir, "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host},
		{"bump", dir, "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host},
		{"vet", dir},
		{"vet", dir, "--remote", "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host},
		{"mirror", dir, "--quiet", "--dry-run", "--to", d.Host + "/site", "--insecure-registry", d.Host, "--insecure-registry", o.Host},
	} {
		out, stderr, code := runCLI(t, env, args...)
		noCanary(t, strings.Join(args[:1], " "), out, stderr)
		if code != 1 || !strings.Contains(stderr, refusal) || !strings.Contains(stderr, how) {
			t.Errorf("%v with QA_PW not allowed: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	if now, err := os.ReadFile(lockPath); err != nil || string(now) != string(locked) {
		t.Errorf("the lock changed: %v\n%s", err, now)
	}

	// A STOWAGE_ name needs no --allow-env.
	writeTree(t, dir, privatePuller(d.Host, o.Host, "STOWAGE_QA_PW", "[fn]"))
	for _, args := range [][]string{
		{"bump", dir, "--quiet", "--exit-code", "--insecure-registry", d.Host, "--insecure-registry", o.Host},
		{"vet", dir, "--remote", "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host},
	} {
		out, stderr, code := runCLI(t, env, args...)
		noCanary(t, args[0], out, stderr)
		if code != 0 {
			t.Errorf("%v with STOWAGE_QA_PW: exit %d\n%s%s", args, code, out, stderr)
		}
	}
}

// TestLockKustomizationRenderedProfileOnly: a Stowage functionConfig with
// spec.profile: notebooks and a second profile (its own environment and
// helper.pause): lock, against docker-registry holding every image of both,
// locks only what the function uses, the rendered profile's images, the
// helper and the workload's image; mirror plans the same.
func TestLockKustomizationRenderedProfileOnly(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\ntransformers: [stowage.yaml]\n",
		"web.yaml": `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: web, image: "ghcr.io/example-org/web:1"}]
`,
		"stowage.yaml": `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: notebooks
  annotations:
    config.kubernetes.io/function: |
      exec: {path: stowage, args: [fn]}
spec:
  profile: notebooks
  environments:
    jupyter: {image: "apache/submarine:jupyter-notebook-0.7.0"}
    spare: {image: "quay.io/example-org/spare:2"}
  profiles:
    notebooks:
      pullers: [{name: notebook-images, namespace: submarine, environments: [jupyter]}]
    batch:
      helper: {pause: "registry.k8s.io/pause:3.10"}
      pullers: [{name: batch-images, namespace: batch, environments: [spare]}]
`,
	})
	ex, err := registrytest.LoadExample(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := registrytest.SeedFor(ex.Config, d.Host, ex.Workloads...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Refs, " "); !strings.Contains(got, "quay.io/example-org/spare:2") || !strings.Contains(got, "registry.k8s.io/pause:3.10") {
		t.Fatalf("the registry is to hold both profiles' images; seeding %s", got)
	}
	push := mustResolver(t, append(p.Options(), registry.WithInsecure(d.Host))...)
	if err := registrytest.SeedStandIns(context.Background(), push, nil, p.Refs, 4); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"lock", dir, "--quiet", "--insecure-registry", d.Host}, p.Flags()...)
	if _, stderr, code := runCLI(t, nil, args...); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	_, names := lockEntryNames(t, filepath.Join(dir, lock.FileName))
	want := "docker.io/apache/submarine:jupyter-notebook-0.7.0 ghcr.io/example-org/web:1 ghcr.io/stowage/stowage-helper:v0.1.0"
	if got := names; got != want {
		t.Errorf("lock entries:\n%s\nwant:\n%s", got, want)
	}
	mirrorArgs := append([]string{"mirror", dir, "--quiet", "--dry-run", "-o", "json", "--to", d.Host + "/site", "--insecure-registry", d.Host}, p.Flags()...)
	out, stderr, code := runCLI(t, nil, mirrorArgs...)
	if code != 0 {
		t.Fatalf("mirror --dry-run: exit %d\n%s", code, stderr)
	}
	for _, key := range []string{"quay.io/example-org/spare:2", "registry.k8s.io/pause:3.10"} {
		if strings.Contains(string(out), key) {
			t.Errorf("mirror plans %s, an image of a profile the function does not render:\n%s", key, out)
		}
	}
	if out, stderr, code := runCLI(t, nil, "vet", dir); code != 0 || string(out) != "ok: profile notebooks: 2 images pre-pulled\nok: 1 workload image pinned\n" {
		t.Errorf("vet: exit %d\n%s%s", code, out, stderr)
	}
}

// TestLockKustomizationSharedBaseLock: a lock listed in a base that two
// overlays build on is not written by lock or bump of either overlay (each
// would prune the other's entries): both refuse naming the file and saying
// where to list a lock, and write nothing; vet and mirror still read it.
func TestLockKustomizationSharedBaseLock(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	root := t.TempDir()
	web := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: web, image: \"ghcr.io/example-org/web:1\"}]\n"
	fnConfig := `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: pin
  annotations:
    config.kubernetes.io/function: |
      exec: {path: stowage, args: [fn]}
spec: {}
`
	writeTree(t, root, map[string]string{
		"base/kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\n",
		"base/web.yaml":           web,
		"a/kustomization.yaml":    "resources: [../base]\ntransformers: [stowage.yaml]\nnamePrefix: a-\n",
		"a/stowage.yaml":          fnConfig,
		"b/kustomization.yaml":    "resources: [../base]\ntransformers: [stowage.yaml]\nimages: [{name: ghcr.io/example-org/web, newTag: \"2\"}]\n",
		"b/stowage.yaml":          fnConfig,
		// A kustomization with its own lock, to write one for the base.
		"own/kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\ntransformers: [stowage.yaml]\n",
		"own/web.yaml":           web,
		"own/stowage.yaml":       fnConfig,
	})
	baseLock := filepath.Join(root, "base", lock.FileName)
	flags := []string{"--quiet", "--insecure-registry", d.Host, "--mirror", "ghcr.io=" + d.Host + "/ghcr"}

	// The base's lock: written where a lock belongs, then copied there.
	push := mustResolver(t, registry.WithInsecure(d.Host), registry.WithMirror("ghcr.io", d.Host+"/ghcr"))
	if err := registrytest.SeedStandIns(context.Background(), push, nil, []string{"ghcr.io/example-org/web:1"}, 1); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(root, "own")
	if _, stderr, code := runCLI(t, nil, append([]string{"lock", own}, flags...)...); code != 0 {
		t.Fatalf("lock own: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(own, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(baseLock, data, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, overlay := range []string{"a", "b"} {
		dir := filepath.Join(root, overlay)
		for _, cmd := range []string{"lock", "bump"} {
			out, stderr, code := runCLI(t, nil, append([]string{cmd, dir, "--root", root}, flags...)...)
			want := baseLock + " is not inside the kustomization's directory " + dir + " (it comes from a base), so stowage does not write it: every overlay locking a shared lock prunes the others' entries. List a lock in each overlay's own resources (`- stowage.lock.yaml` in " + filepath.Join(dir, "kustomization.yaml") + ") and remove it from the base's\n"
			if code != 1 || stderr != "stowage: "+want {
				t.Errorf("%s %s: exit %d\n%s%s\nwant stderr:\nstowage: %s", cmd, overlay, code, out, stderr, want)
			}
			if now, err := os.ReadFile(baseLock); err != nil || string(now) != string(data) {
				t.Fatalf("%s %s changed %s: %v\n%s", cmd, overlay, baseLock, err, now)
			}
		}
	}

	// vet and mirror of an overlay read it.
	a := filepath.Join(root, "a")
	if out, stderr, code := runCLI(t, nil, "vet", a, "--root", root); code != 0 || string(out) != "ok: 1 workload image pinned\n" {
		t.Errorf("vet a: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code := runCLI(t, nil, append([]string{"mirror", a, "--root", root, "--dry-run", "-o", "json", "--to", d.Host + "/site"}, flags...)...)
	if code != 0 || !strings.Contains(string(out), `"ghcr.io/example-org/web:1"`) {
		t.Errorf("mirror a: exit %d\n%s%s", code, out, stderr)
	}
}

// sizedKustomization is a pin-only kustomization with a lock pinning its
// one workload image, and a ConfigMap of pad bytes; args are the exec
// declaration's args.
func sizedKustomization(args string, pad int) map[string]string {
	return map[string]string{
		"kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\ntransformers: [stowage.yaml]\n",
		"web.yaml": `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: web, image: "ghcr.io/example-org/web:1"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: pad}
data: {pad: "` + strings.Repeat("x", pad) + `"}
`,
		"stowage.lock.yaml": `apiVersion: stowage.dev/v1alpha1
kind: ImageLock
metadata:
  name: stowage-lock
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  images:
  - name: ghcr.io/example-org/web:1
    reference: ghcr.io/example-org/web:1
    digest: sha256:d35c3aac9ab2a974fd37636040d8fdb098790f3ddcc0100dbaa8814eee19eb45
    kind: manifest
    size: 2407
`,
		"stowage.yaml": `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: pin
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: stowage
        args: ` + args + `
spec: {}
`,
	}
}

// TestVetKustomizationInputBound: vet computes the size of the ResourceList
// kustomize would pass the function and fails, naming the size, the
// limit and the flag, when it is over the function's bound: the default
// 4 MiB, or --max-input-bytes of the exec declaration. The size is exact:
// with the bound at it the real kustomize builds, one byte below it fails.
func TestVetKustomizationInputBound(t *testing.T) {
	t.Parallel()
	// The bound is written in the functionConfig, so it counts: measured
	// with a 5-digit placeholder, then set to 5-digit values.
	const pad = 10000
	args := func(limit int64) string { return fmt.Sprintf("[fn, --max-input-bytes, %q]", fmt.Sprint(limit)) }
	dir := t.TempDir()
	writeTree(t, dir, sizedKustomization(args(99999), pad))
	b, err := kustomization.Load(dir, "", fn.IsFunctionConfig)
	if err != nil {
		t.Fatal(err)
	}
	size, err := source.FunctionInputSize(b)
	if err != nil {
		t.Fatal(err)
	}
	if size < 11000 || size > 13000 {
		t.Fatalf("FunctionInputSize = %d, want about 12 KB", size)
	}
	over := func(size, limit int64) string {
		return fmt.Sprintf("the ResourceList kustomize would pass to the function holds %d bytes, more than the %d the function reads, so kustomize build would fail: raise --max-input-bytes in the exec declaration's args in %s", size, limit, filepath.Join(dir, "stowage.yaml"))
	}
	for _, limit := range []int64{size, size - 1} {
		writeTree(t, dir, sizedKustomization(args(limit), pad))
		out, stderr, code := runCLI(t, nil, "vet", dir)
		switch {
		case limit >= size && (code != 0 || string(out) != "ok: 1 workload image pinned\n"):
			t.Errorf("vet with the bound at %d, the size: exit %d\n%s%s", limit, code, out, stderr)
		case limit < size && (code != 1 || !strings.Contains(stderr, over(size, limit))):
			t.Errorf("vet with the bound at %d, one below the size: exit %d\n%s%s", limit, code, out, stderr)
		}
	}
	t.Run("kustomize", func(t *testing.T) {
		kustomize := testbin.Kustomize(t)
		bin := stowageBinary(t)
		for _, limit := range []int64{size, size - 1} {
			writeTree(t, dir, sizedKustomization(args(limit), pad))
			cmd := exec.Command(kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dir)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if limit >= size && err != nil || limit < size && (err == nil || !strings.Contains(string(out), fmt.Sprintf("larger than %d bytes", limit))) {
				t.Errorf("kustomize build with the bound at %d (size %d): %v\n%s", limit, size, err, out)
			}
		}
	})

	// The default bound, 4 MiB.
	big := t.TempDir()
	writeTree(t, big, sizedKustomization("[fn]", DefaultMaxFnInput))
	out, stderr, code := runCLI(t, nil, "vet", big)
	if code != 1 || !strings.Contains(stderr, "more than the 4194304 the function reads, so kustomize build would fail: the operator raises STOWAGE_MAX_INPUT_BYTES") {
		t.Errorf("vet over 4 MiB: exit %d\n%s%s", code, out, stderr)
	}
}

// TestKustomizationBadExecDeclaration: a functionConfig kustomize would
// fail on is refused by every command that takes the kustomization, naming
// the file (and the line where known): an annotation that does not parse,
// list-form metadata.annotations (kustomize panics on it), exec args the
// fn command refuses, no function annotation at all.
func TestKustomizationBadExecDeclaration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, meta, want string
	}{
		{"annotation does not parse", "  annotations:\n    config.kubernetes.io/function: \"{{{\"\n",
			"stowage.yaml: metadata.annotations.config.kubernetes.io/function: config.kubernetes.io/function unmarshal error: "},
		{"annotations as a list", "  annotations:\n  - config.kubernetes.io/function: |\n      exec: {path: stowage, args: [fn]}\n",
			"stowage.yaml:6: metadata.annotations: want a map of strings, got a sequence (kustomize cannot read the functionConfig's annotations)"},
		{"unknown flag", "  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: stowage, args: [fn, --allow-envs, X]}\n",
			`stowage.yaml: the exec declaration's args ["fn" "--allow-envs" "X"]: unknown flag: --allow-envs`},
		{"no function annotation", "",
			"stowage.yaml: no config.kubernetes.io/function annotation: kustomize would not run stowage as a KRM function"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := sizedKustomization("[fn]", 10)
			files["stowage.yaml"] = "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: pin\n" + tc.meta + "spec: {}\n"
			writeTree(t, dir, files)
			for _, cmd := range []string{"vet", "lock", "status"} {
				out, stderr, code := runCLI(t, nil, cmd, dir)
				if code != 1 || !strings.Contains(stderr, filepath.Join(dir, tc.want)) {
					t.Errorf("%s: exit %d\n%s%s\nwant %s", cmd, code, out, stderr, tc.want)
				}
			}
		})
	}
}

// TestKustomizationCommandsHelp: each command that takes a kustomization
// says so in its --help, with --root.
func TestKustomizationCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"lock", "bump", "vet", "mirror", "status"} {
		out, stderr, code := runCLI(t, nil, cmd, "--help")
		help := string(out)
		if code != 0 || !strings.Contains(help, "DIR may also be a kustomization whose transformers: hold the stowage\nfunctionConfig") ||
			!strings.Contains(help, "from files beneath --root only (default DIR; --root .\nlets an overlay reach ../base)") {
			t.Errorf("%s --help: exit %d\n%s%s", cmd, code, help, stderr)
		}
	}
}

// TestLockKustomizationLockDirMissing: a lock listed in a directory that
// does not exist yet is refused by name before any registry is contacted,
// saying to create the directory; nothing is written.
func TestLockKustomizationLockDirMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := sizedKustomization("[fn]", 10)
	delete(files, "stowage.lock.yaml")
	files["kustomization.yaml"] = "resources: [web.yaml, locks/stowage.lock.yaml]\ntransformers: [stowage.yaml]\n"
	writeTree(t, dir, files)
	locks := filepath.Join(dir, "locks")
	out, stderr, code := runCLI(t, nil, "lock", dir, "--quiet")
	want := "stowage: " + filepath.Join(dir, "kustomization.yaml") + " lists the lock " + filepath.Join(locks, lock.FileName) + ", whose directory " + locks + " does not exist: create it (mkdir -p " + locks + ") and run the command again\n"
	if code != 1 || stderr != want {
		t.Errorf("lock: exit %d\n%s%s\nwant:\n%s", code, out, stderr, want)
	}
	if _, err := os.Stat(locks); !os.IsNotExist(err) {
		t.Errorf("lock made %s: %v", locks, err)
	}
}

// TestLockKustomizationWorkloadFile: lock's errors about a workload's
// image name the file the workload comes from: a reference that does not
// parse, and one the registry does not have.
func TestLockKustomizationWorkloadFile(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	root := t.TempDir()
	files := map[string]string{}
	for p, c := range sizedKustomization("[fn]", 10) {
		files["app/"+p] = c
	}
	files["app/kustomization.yaml"] = "resources: [../base, stowage.lock.yaml]\ntransformers: [stowage.yaml]\n"
	files["base/kustomization.yaml"] = "resources: [web.yaml]\n"
	files["base/web.yaml"] = files["app/web.yaml"]
	delete(files, "app/web.yaml")
	delete(files, "app/stowage.lock.yaml")
	writeTree(t, root, files)
	app := filepath.Join(root, "app")
	flags := []string{"--root", root, "--quiet", "--insecure-registry", d.Host, "--mirror", "ghcr.io=" + d.Host + "/ghcr"}

	out, stderr, code := runCLI(t, nil, append([]string{"lock", app}, flags...)...)
	want := `image "ghcr.io/example-org/web:1" (used by Pod web spec.containers[0].image in ../base/web.yaml): registry ` + d.Host + `: `
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("lock, image missing: exit %d\n%s%s\nwant %s", code, out, stderr, want)
	}

	writeTree(t, root, map[string]string{"base/web.yaml": strings.Replace(files["base/web.yaml"], "ghcr.io/example-org/web:1", "ghcr.io/Example/web:1", 1)})
	out, stderr, code = runCLI(t, nil, append([]string{"lock", app}, flags...)...)
	want = "stowage: ../base/web.yaml: Pod web spec.containers[0].image: "
	if code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("lock, image does not parse: exit %d\n%s%s\nwant %s", code, out, stderr, want)
	}
}

// TestVetJupyterImagePullerPasswordField: an env: password a
// JupyterImagePuller names but the environment lacks is reported at the
// JupyterImagePuller's own field and line (spec.images[1].auth.password,
// line 15 of puller.yaml), not at the config it is converted to.
func TestVetJupyterImagePullerPasswordField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"kustomization.yaml": "resources: [stowage.lock.yaml]\ntransformers: [puller.yaml]\n",
		"puller.yaml": `apiVersion: org.apache.submarine/v1
kind: JupyterImagePuller
metadata:
  name: private
  namespace: submarine
  annotations:
    config.kubernetes.io/function: |
      exec: {path: stowage, args: [fn, --allow-env, QA_PW]}
spec:
  images:
  - name: jupyter
    image: apache/submarine:jupyter-notebook-0.7.0
  - name: private
    image: harbor.example/team/private:1
    auth: {username: qa, password: "env:STOWAGE_QA_PW"}
  - name: other
    image: harbor.example/team/other:1
    auth: {username: qa, password: "env:QA_PW"}
`,
	})
	out, stderr, code := runCLI(t, map[string]string{"QA_PW": "", "STOWAGE_ALLOW_ENV": "QA_PW"}, "vet", dir)
	want := "stowage: kustomization " + dir + ": the stowage function would fail with 2 errors:\n" +
		"  puller.yaml:15: spec.images[1].auth.password: environment variable STOWAGE_QA_PW is not set (needed by environment \"private\")\n" +
		"  puller.yaml:18: spec.images[2].auth.password: environment variable QA_PW is empty (needed by environment \"other\")\n"
	if code != 1 || stderr != want {
		t.Errorf("vet: exit %d\n%s%s\nwant:\n%s", code, out, stderr, want)
	}
}

// TestVetStowagePasswordField: in a Stowage functionConfig, an env:
// password the function may not read, and one unset, are each reported at
// their field and line in the file (a comment above the object shifts
// nothing), not at the functionConfig's first line with a second place.
func TestVetStowagePasswordField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"kustomization.yaml": "resources: [stowage.lock.yaml]\ntransformers: [stowage.yaml]\n",
		"stowage.yaml": `# notebooks
apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: notebooks
  annotations:
    config.kubernetes.io/function: |
      exec: {path: stowage, args: [fn]}
spec:
  environments:
    gpu:
      image: harbor.example/a:1
      auth: {username: u, password: "env:QA_PW"}
    gpu2:
      image: harbor.example/b:1
      auth: {username: u, password: "env:STOWAGE_X"}
  profiles: {notebooks: {pullers: [{name: p, namespace: s, environments: [gpu, gpu2]}]}}
`,
	})
	out, stderr, code := runCLI(t, map[string]string{"QA_PW": "canary-pw-7f3a91"}, "vet", dir)
	want := "stowage: kustomization " + dir + ": the stowage function would fail with 1 error:\n" +
		"  stowage.yaml:13: spec.environments.gpu.auth.password: environment variable QA_PW may not be read (needed by environment \"gpu\"): stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV (set in the CI job's or the repository server's environment, never by the repository)\n"
	if code != 1 || stderr != want {
		t.Errorf("vet: exit %d\n%s%s\nwant:\n%s", code, out, stderr, want)
	}
	writeTree(t, dir, map[string]string{"stowage.yaml": `# notebooks
apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: notebooks
  annotations:
    config.kubernetes.io/function: |
      exec: {path: stowage, args: [fn, --allow-env, QA_PW]}
spec:
  environments:
    gpu:
      image: harbor.example/a:1
      auth: {username: u, password: "env:QA_PW"}
    gpu2:
      image: harbor.example/b:1
      auth: {username: u, password: "env:STOWAGE_X"}
  profiles: {notebooks: {pullers: [{name: p, namespace: s, environments: [gpu, gpu2]}]}}
`})
	out, stderr, code = runCLI(t, map[string]string{"QA_PW": "canary-pw-7f3a91", "STOWAGE_ALLOW_ENV": "QA_PW"}, "vet", dir)
	want = "stowage: kustomization " + dir + ": the stowage function would fail with 1 error:\n" +
		"  stowage.yaml:16: spec.environments.gpu2.auth.password: environment variable STOWAGE_X is not set (needed by environment \"gpu2\")\n"
	if code != 1 || stderr != want {
		t.Errorf("vet with STOWAGE_ALLOW_ENV and --allow-env QA_PW: exit %d\n%s%s\nwant:\n%s", code, out, stderr, want)
	}
}

// TestVetKustomizationOfflineUse: vet reads who may use each image
// offline from the DaemonSets the function rendered; for a kustomization
// it is what vet says of the same config as a config directory: the
// public image open to any pod, the one behind a pull Secret only with it.
func TestVetKustomizationOfflineUse(t *testing.T) {
	t.Parallel()
	const config = `  environments:
    jupyter: {image: "apache/submarine:jupyter-notebook-0.7.0"}
    private: {image: "registry.lab.internal/team/private:1", auth: {secret: team-pull}}
  profiles:
    notebooks:
      pullers: [{name: notebook-images, namespace: submarine, environments: [jupyter, private]}]
`
	refs := append([]string{"apache/submarine:jupyter-notebook-0.7.0", "registry.lab.internal/team/private:1"}, cliDefaultImages...)
	plain := cliConfigDir(t, refs, "config.yaml", strings.ReplaceAll(config, "\n  ", "\n")[2:])
	kdir := cliConfigDir(t, refs,
		"kustomization.yaml", "resources: [stowage.lock.yaml]\ntransformers: [stowage.yaml]\n",
		"stowage.yaml", `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: notebooks
  annotations:
    config.kubernetes.io/function: |
      exec: {path: stowage, args: [fn]}
spec:
  profile: notebooks
`+config)
	images := func(dir string) string {
		t.Helper()
		out, stderr, code := runCLI(t, nil, "vet", dir, "-o", "json")
		var rep struct{ Images json.RawMessage }
		if err := json.Unmarshal(out, &rep); code != 0 || err != nil {
			t.Fatalf("vet %s: exit %d, %v\n%s%s", dir, code, err, out, stderr)
		}
		return string(rep.Images)
	}
	want, got := images(plain), images(kdir)
	if got != want {
		t.Errorf("kustomization's images:\n%s\nthe config directory's:\n%s", got, want)
	}
	var ims []v1alpha1.VetImage
	if err := json.Unmarshal([]byte(got), &ims); err != nil {
		t.Fatal(err)
	}
	byRef := map[string]plan.ImageAccess{}
	for _, im := range ims {
		byRef[strings.SplitN(im.Reference, "@", 2)[0]] = im.OfflineUse
	}
	if a := byRef["apache/submarine:jupyter-notebook-0.7.0"]; !a.AnyPod {
		t.Errorf("the public image: %+v, want any pod", a)
	}
	if a := byRef["registry.lab.internal/team/private:1"]; a.AnyPod || len(a.Secrets) != 1 || a.Secrets[0].Secret != "team-pull" {
		t.Errorf("the private image: %+v, want team-pull only", a)
	}
}

// TestVetJSONKustomizationFiles: vet -o json on a kustomization whose
// functionConfig the function refuses names the functionConfig's file as
// the config's errors are named, from where stowage runs (the
// kustomization's directory joined), with the line of the field.
func TestVetJSONKustomizationFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := maps.Clone(pinOnlyKustomization)
	files["prod/stowage.yaml"] = strings.Replace(files["prod/stowage.yaml"], "namespace: shop, environments", "namespace: Shop_NS, environments", 1)
	writeTree(t, root, files)
	prod := filepath.Join(root, "prod")
	stdout, stderr, code := runCLI(t, nil, "vet", prod, "--root", root, "-o", "json")
	var r v1alpha1.VetReport
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("stdout is not vet's report: %v\n%s", err, stdout)
	}
	i := slices.IndexFunc(r.Errors, func(e v1alpha1.ReportError) bool { return strings.Contains(e.Message, "Shop_NS") })
	if code != 1 || i < 0 {
		t.Fatalf("exit %d, errors %+v; stderr:\n%s", code, r.Errors, stderr)
	}
	if e := r.Errors[i]; e.File != filepath.Join(prod, "stowage.yaml") || e.Line != 16 {
		t.Errorf("error %+v, want it at %s:16", e, filepath.Join(prod, "stowage.yaml"))
	}
}
