package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/registry/registrytest"
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
// function itself may (STOWAGE_* or the exec declaration's --allow-env):
// with QA_PW not allowed, each refuses naming the variable and both ways
// to allow it, before any registry is contacted, and the canary value
// never shows; allowed through --allow-env or a STOWAGE_ name, lock logs
// in with it.
func TestKustomizationPasswordsUnderTheFunctionsRule(t *testing.T) {
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
	noCanary := func(t *testing.T, what string, out []byte, stderr string) {
		t.Helper()
		if strings.Contains(string(out)+stderr, canary) {
			t.Errorf("%s shows the password:\n%s%s", what, out, stderr)
		}
	}
	const refusal = "environment variable QA_PW may not be read by the KRM function (needed by " // …the image…
	const how = "name a variable starting with STOWAGE_, or add --allow-env QA_PW to the exec declaration's args"

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

	// Allowed by --allow-env: lock logs in and locks the three images.
	writeTree(t, dir, privatePuller(d.Host, o.Host, "QA_PW", "[fn, --allow-env, QA_PW]"))
	out, stderr, code = runCLI(t, env, "lock", dir, "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host)
	noCanary(t, "lock --allow-env", out, stderr)
	if code != 0 {
		t.Fatalf("lock with --allow-env QA_PW: exit %d\n%s", code, stderr)
	}
	if want := lockPath + ": 3 added, 0 removed, 0 changed (3 images)\n"; string(out) != want {
		t.Errorf("lock said %q, want %q", out, want)
	}
	for _, args := range [][]string{{"vet", dir}, {"vet", dir, "--remote", "--quiet", "--insecure-registry", d.Host, "--insecure-registry", o.Host}} {
		out, stderr, code := runCLI(t, env, args...)
		noCanary(t, args[0], out, stderr)
		if code != 0 {
			t.Errorf("%v with --allow-env QA_PW: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	locked, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}

	// The same lock, the declaration without --allow-env: every command
	// refuses, even with nothing to resolve, and the lock is unchanged.
	writeTree(t, dir, privatePuller(d.Host, o.Host, "QA_PW", "[fn]"))
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
