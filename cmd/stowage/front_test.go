package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// TestFrontLinksNoHeavyPackages holds the front binary (-tags
// stowagefront) to its purpose: none of the libraries whose package
// initialisers made every start-up of render, fn and version pay for
// commands they do not run (docs/benchmarks.md).
func TestFrontLinksNoHeavyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "stowagefront", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps -tags stowagefront: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "cuelang.org/go/cue") || !slices.Contains(deps, "github.com/stowage/stowage/render") {
		t.Fatalf("go list -deps -tags stowagefront lacks CUE or the render package: %d packages", len(deps))
	}
	for _, d := range deps {
		for _, heavy := range []string{"helm.sh/", "github.com/sigstore/sigstore-go/", "github.com/sigstore/rekor/", "k8s.io/client-go/kubernetes", "github.com/spf13/cobra/doc"} {
			if strings.HasPrefix(d, heavy) {
				t.Errorf("the front links %s", d)
			}
		}
	}
}

// TestFullOnlyCommands: the front's list of stowage-full's commands names
// each with the summary and visibility stowage-full gives it.
func TestFullOnlyCommands(t *testing.T) {
	root := newRoot(os.LookupEnv)
	for _, f := range fullOnly {
		c, _, err := root.Find([]string{f.name})
		if err != nil || c == root {
			t.Errorf("fullOnly names %q, which is no command", f.name)
			continue
		}
		if c.Short != f.short || c.Hidden != f.hidden {
			t.Errorf("fullOnly %q: short %q hidden %v, the command has %q, %v", f.name, f.short, f.hidden, c.Short, c.Hidden)
		}
	}
}

// runBin runs bin with args and env added and returns stdout, stderr and
// the exit code.
func runBin(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestFrontRunsFull: the front, as the release ships it beside
// stowage-full, answers every command line of stowage-full's commands
// exactly as stowage-full does (help, usage errors, completion), finds it
// through a symlink, says what is missing without it, and stowage-full
// refuses a front of another build.
func TestFrontRunsFull(t *testing.T) {
	front, full := testbin.Stowage(t), testbin.Full(t)
	same := func(env []string, args ...string) {
		t.Helper()
		fo, fe, fc := runBin(t, front, env, args...)
		o, e, c := runBin(t, full, env, args...)
		if fo != o || fe != e || fc != c {
			t.Errorf("stowage %q: the front gives exit %d, stdout %q, stderr %q; stowage-full exit %d, stdout %q, stderr %q", args, fc, fo, fe, c, o, e)
		}
		if fo == "" && fe == "" {
			t.Errorf("stowage %q printed nothing", args)
		}
	}
	same(nil, "--help")
	same(nil, "help")
	for _, f := range fullOnly {
		same(nil, f.name, "--help")
		same(nil, "help", f.name)
	}
	same(nil, "help", "images", "from-chart")
	same(nil, "-v", "images", "from-list", "--help")
	same(nil, "lock", "--no-such-flag")
	same(nil, "vet", "a", "b", "c")
	same(nil, "__complete", "vet", "--pro")
	same(nil, "__complete", "")
	same(nil, "status", "--help", "--kubeconfig", "x")

	// The front's own commands never start stowage-full: they run with it
	// absent. Its commands then fail, naming what is missing.
	alone := filepath.Join(t.TempDir(), "stowage")
	data, err := os.ReadFile(front)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runBin(t, alone, nil, "render", "../../examples/openpai-offline"); code != 0 || !strings.Contains(out, "kind: DaemonSet") {
		t.Errorf("render without stowage-full: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := runBin(t, alone, nil, "version"); code != 0 {
		t.Errorf("version without stowage-full: exit %d, stderr %q", code, errOut)
	}
	// A stowage-full on $PATH is never the one run: only the front's own
	// folder counts.
	onPath := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(onPath, "stowage-full"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runBin(t, alone, []string{"PATH=" + onPath + string(os.PathListSeparator) + os.Getenv("PATH")}, "vet", "../../examples/openpai-offline")
	want := "stowage: vet runs in stowage-full, which is not beside this stowage (" + filepath.Join(filepath.Dir(alone), "stowage-full") + ")"
	if code != 1 || !strings.HasPrefix(errOut, want) {
		t.Errorf("vet without stowage-full: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the front ran the stowage-full it found on $PATH")
	}

	// Through a symlink in another folder (/usr/local/bin/stowage ->
	// /opt/stowage/stowage), stowage-full is the one beside the target.
	link := filepath.Join(t.TempDir(), "stowage")
	if err := os.Symlink(front, link); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runBin(t, link, nil, "vet", "../../examples/openpai-offline"); code != 0 || !strings.Contains(out, "profile offline") {
		t.Errorf("vet through a symlink to the front: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A value of the variable the environment already holds never
	// reaches stowage-full: the front's own replaces it.
	if out, errOut, code := runBin(t, front, []string{frontVersionEnv + "=stale"}, "vet", "../../examples/openpai-offline"); code != 0 || !strings.Contains(out, "profile offline") {
		t.Errorf("vet through the front with a stale %s: exit %d, stdout %q, stderr %q", frontVersionEnv, code, out, errOut)
	}

	// A front under the name stowage-full (a copy of it) is refused, not
	// run again and again.
	loop := t.TempDir()
	for _, n := range []string{"stowage", "stowage-full"} {
		if err := os.WriteFile(filepath.Join(loop, n), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code = runBin(t, filepath.Join(loop, "stowage"), nil, "vet", "../../examples/openpai-offline")
	if want := "is the front binary (built with -tags stowagefront)"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("a front as stowage-full: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}

	// stowage-full run by a front of another build refuses.
	_, errOut, code = runBin(t, full, []string{frontVersionEnv + "=v0.0.1-other"}, "vet", "../../examples/openpai-offline")
	if code != 1 || !strings.Contains(errOut, "the stowage that ran it is v0.0.1-other; install both binaries from one release archive") {
		t.Errorf("stowage-full under a front of another build: exit %d, stderr %q", code, errOut)
	}
}
