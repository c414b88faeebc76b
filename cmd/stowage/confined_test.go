package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/lock"
)

// confinedCanary is the content of a file outside the config directory; no
// output of any case may carry it.
const confinedCanary = "CANARY-outside-the-config-3f9e"

// TestConfinedReads: every file a config or a flag names is read inside its
// directory, as a regular file, with a size bound. Each case reproduces a
// finding of issue 14 (a symbolic link out of the directory to a canary
// file and to /proc/self/environ, /dev/zero, a FIFO) as a password file,
// the lock and --ca-file: exit 1 within seconds, a message naming the file,
// never its content or a runtime trace.
func TestConfinedReads(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	if err := os.WriteFile(outside, []byte(confinedCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := cliJupyterConfig + `
images:
  app:
    reference: registry.example/app:1.0
    auth: {username: robot, password: "file:pw"}
`
	config = strings.Replace(config, "environments: [jupyter]", "environments: [jupyter]\n        images: [app]", 1)
	refs := append([]string{"apache/submarine:jupyter-notebook-0.7.0", "registry.example/app:1.0"}, cliDefaultImages...)
	type place func(t *testing.T, dir string, make func(path string) error) []string
	password := func(t *testing.T, dir string, make func(string) error) []string {
		if err := make(filepath.Join(dir, "pw")); err != nil {
			t.Fatal(err)
		}
		return []string{"render", dir}
	}
	lockFile := func(t *testing.T, dir string, make func(string) error) []string {
		p := filepath.Join(dir, lock.FileName)
		os.Remove(p)
		if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("pw\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return []string{"vet", dir}
	}
	caFile := func(t *testing.T, dir string, make func(string) error) []string {
		d, err := os.MkdirTemp(root, "ca-*")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "ca.pem")
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("pw\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"lock", dir, "--ca-file", p}
	}
	link := func(target string) func(string) error {
		return func(p string) error { return os.Symlink(target, p) }
	}
	fifo := func(p string) error { return mkfifo(p, 0o600) }
	for _, tc := range []struct {
		name  string
		place place
		make  func(string) error
		want  string
	}{
		{"password file linked outside", password, link(outside), "password file DIR/pw: leads outside the directory DIR"},
		{"password file linked to /proc/self/environ", password, link("/proc/self/environ"), "password file DIR/pw: leads outside the directory DIR"},
		{"password file linked to /dev/zero", password, link("/dev/zero"), "password file DIR/pw: leads outside the directory DIR"},
		{"password file a FIFO", password, fifo, "password file DIR/pw: is not a regular file (a FIFO)"},
		{"lock linked outside", lockFile, link(outside), "lock file DIR/stowage.lock.yaml: leads outside the directory DIR"},
		{"lock linked to /dev/zero", lockFile, link("/dev/zero"), "lock file DIR/stowage.lock.yaml: leads outside the directory DIR"},
		{"lock a FIFO", lockFile, fifo, "lock file DIR/stowage.lock.yaml: is not a regular file (a FIFO)"},
		{"--ca-file /dev/zero", caFile, link("/dev/zero"), "is not a regular file (a character device)"},
		{"--ca-file a FIFO", caFile, fifo, "is not a regular file (a FIFO)"},
		{"--ca-file /proc/self/environ", caFile, link("/proc/self/environ"), "is a file of /proc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := cliConfigDir(t, refs, "config.yaml", config)
			args := tc.place(t, dir, tc.make)
			type result struct {
				stdout []byte
				stderr string
				code   int
			}
			done := make(chan result, 1)
			go func() {
				o, e, c := runCLI(t, map[string]string{}, args...)
				done <- result{o, e, c}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("stowage %s blocked", strings.Join(args, " "))
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q", r.code, r.stderr, want)
			}
			for _, s := range []string{confinedCanary, "goroutine ", "PATH="} {
				if strings.Contains(r.stderr, s) || strings.Contains(string(r.stdout), s) {
					t.Errorf("output carries %q:\n%s\n%s", s, r.stdout, r.stderr)
				}
			}
		})
	}
}

// TestFnInputBounded: a ResourceList larger than --max-input-bytes is
// refused with exit 1, naming the limit and the flag, before kyaml holds it.
func TestFnInputBounded(t *testing.T) {
	t.Parallel()
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + strings.Repeat("- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n", 100) +
		"functionConfig: {apiVersion: stowage.dev/v1alpha1, kind: Stowage, metadata: {name: n}, spec: {}}\n"
	_, stderr, code := hygieneRun(t, nil, rl, "fn", "--max-input-bytes", "1000")
	want := "the ResourceList on stdin is larger than 1000 bytes, the limit of stowage fn; raise it with --max-input-bytes"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if _, stderr, _ := hygieneRun(t, nil, rl, "fn"); strings.Contains(stderr, "larger than") {
		t.Errorf("the default limit refused %d bytes: %s", len(rl), stderr)
	}
}

// TestConfigLimitsByFlag: the config limits are set on the command line
// and named with their flag when hit.
func TestConfigLimitsByFlag(t *testing.T) {
	t.Parallel()
	dir := cliValidDir(t)
	_, stderr, code := runCLI(t, nil, "vet", dir, "--max-config-nodes", "10")
	if code != 1 || !strings.Contains(stderr, "syntax nodes by this file, the limit of a config; raise it with --max-config-nodes") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI(t, nil, "vet", dir, "--max-config-bytes", "10")
	if code != 1 || !strings.Contains(stderr, "raise it with --max-config-bytes") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "vet", dir); code != 0 {
		t.Errorf("the defaults again: exit %d, %s", code, stderr)
	}
}

// TestFnListAnnotations: an item whose metadata.annotations is a list
// (kyaml's reader refuses it with "wrong node kind" and no place) exits 1
// naming the item, the field and the line; it never panics.
func TestFnListAnnotations(t *testing.T) {
	t.Parallel()
	rl := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig: {apiVersion: stowage.dev/v1alpha1, kind: Stowage, metadata: {name: n}, spec: {}}
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: p
    annotations: [x]
  spec: {containers: [{name: c, image: "busybox:1.36"}]}
`
	_, stderr, code := hygieneRun(t, nil, rl, "fn")
	want := "stowage: items[0] (Pod p) metadata.annotations, line 9: want a map of strings, got a sequence"
	if code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
