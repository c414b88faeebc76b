package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
)

// TestOperatorEnvRuleCIJobToken is the CI_JOB_TOKEN attack on the CLI: a
// merge request names env:CI_JOB_TOKEN as a registry password, in a
// kustomization whose exec declaration adds --allow-env CI_JOB_TOKEN (or
// sets STOWAGE_ALLOW_ENV in its envs), or in a config directory. lock,
// bump, vet, vet --remote and mirror each refuse it, naming the variable
// and the operator's STOWAGE_ALLOW_ENV, before any registry is contacted
// (the registry sees no request) and without showing the token or telling
// the repository how to widen the rule; the lock is unchanged. Once the
// operator names the variable, lock reads it.
func TestOperatorEnvRuleCIJobToken(t *testing.T) {
	t.Parallel()
	const token = "ci-job-token-canary-81c2"
	reg := startInProcess(t)
	h := reg.Host
	seed(t, nil, []string{h + "/team/private:1", h + "/helper:1", h + "/pause:1"}, registry.WithInsecure(h))
	env := map[string]string{"CI_JOB_TOKEN": token}
	operator := map[string]string{"CI_JOB_TOKEN": token, "STOWAGE_ALLOW_ENV": "CI_JOB_TOKEN"}

	kust := t.TempDir()
	cfgDir := writeConfig(t, map[string]configImage{"private": {Ref: h + "/team/private:1", User: "ci", Password: "env:CI_JOB_TOKEN"}}, h+"/helper:1", h+"/pause:1")
	// The operator allows the variable: each lock logs in and writes.
	for _, dir := range []string{kust, cfgDir} {
		if dir == kust {
			writeTree(t, kust, privatePuller(h, h, "CI_JOB_TOKEN", "[fn]"))
		}
		if _, stderr, code := runCLI(t, operator, "lock", dir, "--quiet", "--insecure-registry", h); code != 0 {
			t.Fatalf("lock %s with STOWAGE_ALLOW_ENV=CI_JOB_TOKEN: exit %d\n%s", dir, code, stderr)
		}
	}
	locks := map[string][]byte{kust: readFile(t, filepath.Join(kust, lock.FileName)), cfgDir: readFile(t, filepath.Join(cfgDir, lock.FileName))}

	// The refusal, around what needs the variable (the image, or the
	// function's environment).
	const refusal = "environment variable CI_JOB_TOKEN may not be read (needed by |): stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV"
	const envsRefusal = "metadata.annotations.config.kubernetes.io/function: the function declaration sets STOWAGE_ALLOW_ENV in its envs"
	attacks := []struct {
		name, dir, args string
		want            string
	}{
		{"exec declaration adds --allow-env", kust, "[fn, --allow-env, CI_JOB_TOKEN]", refusal},
		{"exec declaration sets STOWAGE_ALLOW_ENV", kust, "[fn]\n        envs: [STOWAGE_ALLOW_ENV=CI_JOB_TOKEN]", envsRefusal},
		{"config directory", cfgDir, "", refusal},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if a.dir == kust {
				writeTree(t, kust, privatePuller(h, h, "CI_JOB_TOKEN", a.args))
			}
			want := strings.Split(a.want, "|")
			for _, args := range [][]string{
				{"lock", a.dir, "--quiet", "--insecure-registry", h},
				{"bump", a.dir, "--quiet", "--insecure-registry", h},
				{"vet", a.dir},
				{"vet", a.dir, "--remote", "--quiet", "--insecure-registry", h},
				{"mirror", a.dir, "--quiet", "--dry-run", "--to", h + "/site", "--insecure-registry", h},
			} {
				reg.Faults.Reset()
				out, stderr, code := runCLI(t, env, args...)
				if code != 1 || !containsAll(stderr, want) {
					t.Errorf("%v: exit %d, want 1 saying %q:\n%s%s", args, code, want, out, stderr)
				}
				if strings.Contains(string(out)+stderr, token) || strings.Contains(stderr, "add --allow-env") {
					t.Errorf("%v shows the token or tells the repository how to widen the rule:\n%s%s", args, out, stderr)
				}
				if n := len(reg.Faults.Requests()); n != 0 {
					t.Errorf("%v: the registry saw %d request(s) before the refusal", args, n)
				}
			}
			if now := readFile(t, filepath.Join(a.dir, lock.FileName)); string(now) != string(locks[a.dir]) {
				t.Errorf("the lock changed:\n%s", now)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(kust, lock.FileName)); err != nil {
		t.Fatal(err)
	}
}

// containsAll reports whether s holds each of subs.
func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
