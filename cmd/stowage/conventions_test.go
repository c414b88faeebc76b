package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/initconfig"
	"github.com/stowage/stowage/internal/limitflags"
	"github.com/stowage/stowage/internal/registryflags"
)

// TestEveryCommandHasExamples: every visible command's help has an
// Examples section, and every example line that runs stowage names a
// command that exists.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	root := newRoot(func(string) (string, bool) { return "", false })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" && c.Parent() == root {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Examples section", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			fields := strings.Fields(line)
			i := slices.Index(fields, "stowage")
			if i < 0 || strings.HasPrefix(strings.TrimSpace(line), "#") || i+1 >= len(fields) {
				continue
			}
			if fields[i+1] == "help" {
				fields = fields[1:]
			}
			if found, _, err := root.Find(fields[i+1:]); err != nil || found == root {
				t.Errorf("%s: example %q names no command", c.CommandPath(), line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestLimitFlagsHidden: the limit flags are in no command's help but in
// `stowage help limits`, and still work.
func TestLimitFlagsHidden(t *testing.T) {
	t.Parallel()
	stdout, _, code := runCLI(t, nil, "render", "--help")
	if code != 0 || strings.Contains(string(stdout), "max-config-bytes") || !strings.Contains(string(stdout), "Examples:") {
		t.Errorf("render --help: exit %d, limits shown or no examples:\n%s", code, stdout)
	}
	// It lists every kind of object render writes, the admission
	// policies of profiles.NAME.policy included.
	for _, kind := range []string{"DaemonSets", "ClusterPolicy", "ImageValidatingPolicies", "ClusterImagePolicies", "TrustRoots", "CRI-O policy.json"} {
		if !strings.Contains(strings.Join(strings.Fields(string(stdout)), " "), kind) {
			t.Errorf("render --help does not name %s:\n%s", kind, stdout)
		}
	}
	stdout, _, code = runCLI(t, nil, "help", "limits")
	for _, f := range limitflags.Names {
		if code != 0 || !strings.Contains(string(stdout), "--"+f) {
			t.Errorf("help limits: exit %d, no --%s:\n%s", code, f, stdout)
		}
	}
	_, stderr, code := runCLI(t, nil, "vet", "--max-config-bytes", "10", cliValidDir(t))
	if code != 1 || !strings.Contains(stderr, "10") {
		t.Errorf("vet --max-config-bytes 10: exit %d, %s; want 1 naming the limit", code, stderr)
	}
}

// TestRegistryEnv: the registry settings come from their STOWAGE_*
// variables when the flag is not given, comma-separated for the
// repeatable ones; a flag replaces its variable; an empty item is a usage
// error naming the variable.
func TestRegistryEnv(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"STOWAGE_INSECURE_REGISTRY": "127.0.0.1:5000, localhost:5001",
		"STOWAGE_MIRROR":            "docker.io=127.0.0.1:5000/docker.io,ghcr.io=127.0.0.1:5000/ghcr.io",
		"STOWAGE_CA_FILE":           "/etc/site-ca.pem",
		"STOWAGE_TRUST_TOKEN_REALM": "auth.site:443",
	}
	getenv := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	parse := func(args ...string) registryOptions {
		t.Helper()
		var o registryOptions
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := registryflags.ApplyEnv(o.flags, o.values(), getenv); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := parse()
	if !slices.Equal(o.insecure, []string{"127.0.0.1:5000", "localhost:5001"}) ||
		!slices.Equal(o.mirrors, []string{"docker.io=127.0.0.1:5000/docker.io", "ghcr.io=127.0.0.1:5000/ghcr.io"}) ||
		o.caFile != "/etc/site-ca.pem" || !slices.Equal(o.trustedRealms, []string{"auth.site:443"}) {
		t.Errorf("from the environment: %+v", o)
	}
	o = parse("--insecure-registry", "other:5000", "--ca-file", "mine.pem")
	if !slices.Equal(o.insecure, []string{"other:5000"}) || o.caFile != "mine.pem" || len(o.mirrors) != 2 {
		t.Errorf("flags over the environment: %+v", o)
	}
	vars["STOWAGE_MIRROR"] = "docker.io=x,,ghcr.io=y"
	var bad registryOptions
	bad.addFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	if err := registryflags.ApplyEnv(bad.flags, bad.values(), getenv); err == nil || !strings.Contains(err.Error(), "$STOWAGE_MIRROR") {
		t.Errorf("an empty item: %v", err)
	}
}

// TestReportsAsJSON: version, push and init print their report as JSON
// with -o json, with the same facts as their text line: version's fields,
// the tag push wrote with the artifact's digest (through the in-process
// registry, its plain HTTP allowed by $STOWAGE_INSECURE_REGISTRY), the
// files init wrote.
func TestReportsAsJSON(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCLI(t, nil, "version", "-o", "json")
	var v v1alpha1.VersionReport
	if err := json.Unmarshal(stdout, &v); code != 0 || err != nil || v.Version == "" || v.Commit == "" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("version -o json: exit %d, %v, %+v: %s", code, err, v, stderr)
	}
	text, _, _ := runCLI(t, nil, "version")
	if want := "stowage " + v.Version + " (commit " + v.Commit + ", " + v.Go + ")\n"; string(text) != want {
		t.Errorf("version says %q, its JSON %q", text, want)
	}

	reg := startInProcess(t)
	env := map[string]string{"STOWAGE_INSECURE_REGISTRY": reg.Host}
	dir := cliValidDir(t)
	dest := "oci://" + reg.Host + "/platform/prepull:v1"
	stdout, stderr, code = runCLI(t, env, "push", dir, dest, "-o", "json")
	var p v1alpha1.PushReport
	if err := json.Unmarshal(stdout, &p); code != 0 || err != nil {
		t.Fatalf("push -o json: exit %d, %v: %s %s", code, err, stdout, stderr)
	}
	text, stderr, code = runCLI(t, env, "push", dir, dest)
	if code != 0 || p.Reference != reg.Host+"/platform/prepull:v1" || !strings.HasPrefix(p.Digest, "sha256:") || string(text) != p.Reference+"@"+p.Digest+"\n" {
		t.Errorf("push: exit %d, text %q, JSON %+v: %s", code, text, p, stderr)
	}

	out := filepath.Join(t.TempDir(), "cfg")
	stdout, stderr, code = runCLI(t, nil, "init", out, "-o", "json")
	var r v1alpha1.InitReport
	if err := json.Unmarshal(stdout, &r); code != 0 || err != nil || r.Dir != out || len(r.Files) != 2 || r.Files[0] != filepath.Join(out, initconfig.ConfigFile) {
		t.Errorf("init -o json: exit %d, %v, %+v: %s", code, err, r, stderr)
	}
}
