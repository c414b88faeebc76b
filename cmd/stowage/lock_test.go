package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestLockThenBump locks a config against the in-process registry, checks
// every entry against the stand-in it was seeded with, then bumps with
// nothing changed (one HEAD per image, no GET) and with one tag moved.
func TestLockThenBump(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	refs := []string{h + "/team/app:1.0", h + "/team/tool:2", h + "/stowage/helper:v1", h + "/k8s/pause:3.10"}
	seed(t, nil, refs, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{
		"app":  {Ref: refs[0]},
		"tool": {Ref: refs[1]},
	}, refs[2], refs[3])
	lockPath := filepath.Join(dir, lock.FileName)

	reg.Faults.Reset()
	stdout, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h)
	if code != 0 {
		t.Fatalf("lock exit %d: %s", code, stderr)
	}
	if !strings.Contains(string(stdout), "4 added, 0 removed, 0 changed (4 images)") {
		t.Errorf("lock stdout = %q", stdout)
	}
	l, err := lock.Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	want := &lock.Lock{}
	for _, r := range refs {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		want.Put(e)
	}
	if got := l.Marshal(); !bytes.Equal(got, want.Marshal()) {
		t.Errorf("lock differs from the stand-ins:\n%s", linediff.First(want.Marshal(), got))
	}
	if n := reg.Faults.Count("HEAD", "/manifests/"); n != 0 {
		t.Errorf("lock sent %d HEAD requests for new entries, want 0 (one GET each)", n)
	}

	// A second lock has nothing to do and sends nothing.
	reg.Faults.Reset()
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("second lock exit %d: %s", code, stderr)
	}
	if n := len(reg.Faults.Requests()); n != 0 {
		t.Errorf("second lock sent %d requests, want 0", n)
	}

	// Steady-state bump: exactly one HEAD per image, nothing else but the
	// pings.
	reg.Faults.Reset()
	before := readFile(t, lockPath)
	stdout, stderr, code = runCLI(t, nil, "bump", dir, "--insecure-registry", h, "--exit-code")
	if code != 0 || len(stdout) != 0 {
		t.Fatalf("bump with nothing new: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if got := reg.Faults.Count("HEAD", "/manifests/"); got != len(refs) {
		t.Errorf("steady-state bump sent %d HEADs, want %d", got, len(refs))
	}
	if got := reg.Faults.Count("GET", "/manifests/"); got != 0 {
		t.Errorf("steady-state bump sent %d GETs of manifests, want 0", got)
	}
	if !bytes.Equal(readFile(t, lockPath), before) {
		t.Error("steady-state bump rewrote the lock")
	}
}

// TestLockCheck: --check needs no registry; it lists missing, unused and
// respelled entries and exits 1, and exits 0 on a lock in line.
func TestLockCheck(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	app, tool, helper, pause := h+"/team/app:1.0", h+"/team/tool:2", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, tool, helper, pause}, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}, "tool": {Ref: tool}}, helper, pause)
	lockPath := filepath.Join(dir, lock.FileName)

	reg.Faults.Reset()
	_, stderr, code := runCLI(t, nil, "lock", dir, "--check")
	if code != 1 || !strings.Contains(stderr, "missing  "+app+" ("+app+")") || strings.Count(stderr, "missing ") != 4 {
		t.Errorf("--check without a lock: exit %d:\n%s", code, stderr)
	}
	if n := len(reg.Faults.Requests()); n != 0 {
		t.Errorf("--check sent %d requests", n)
	}
	if readFile(t, lockPath) != nil {
		t.Error("--check wrote a lock")
	}
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--check"); code != 0 {
		t.Errorf("--check of a lock in line: exit %d: %s", code, stderr)
	}

	// Drop tool from the config: its entry is unused.
	dir2 := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
	if err := os.WriteFile(filepath.Join(dir2, lock.FileName), readFile(t, lockPath), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, nil, "lock", dir2, "--check")
	if code != 1 || !strings.Contains(stderr, "unused   "+tool) {
		t.Errorf("--check with an unused entry: exit %d:\n%s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, nil, "lock", dir2, "--insecure-registry", h)
	if code != 0 || !strings.Contains(string(stdout), "0 added, 1 removed, 0 changed (3 images)") {
		t.Errorf("lock pruning: exit %d, stdout %q: %s", code, stdout, stderr)
	}
}

// TestBumpOutputs moves a tag and checks the text output, --pr-body,
// --render (the output directory gets the new digest; the config is not
// touched) and --exit-code.
func TestBumpOutputs(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	app, helper, pause := h+"/team/app:1.0", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	push, err := registry.New(registry.WithInsecure(h))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, nil, []string{app, helper, pause}, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
	config := readFile(t, filepath.Join(dir, "config.yaml"))
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: %s", stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out); code != 0 {
		t.Fatalf("render: %s", stderr)
	}
	old := standinEntry(t, app)

	other := h + "/team/other:9"
	img, idx, err := offlineimage.For(registrytest.Ref(t, other))
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.Write(context.Background(), push, registrytest.Ref(t, app), nil, img, idx); err != nil {
		t.Fatal(err)
	}
	moved := standinEntry(t, other)
	body := filepath.Join(t.TempDir(), "pr.md")
	stdout, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", h, "--pr-body", body, "--render", out, "--exit-code")
	if code != 1 {
		t.Fatalf("bump --exit-code of a moved tag: exit %d, want 1: %s", code, stderr)
	}
	title := "stowage: bump " + app + " to " + strings.TrimPrefix(moved.Digest, "sha256:")[:12]
	if string(stdout) != title+"\n" {
		t.Errorf("stdout with --pr-body = %q, want the title only", stdout)
	}
	b := string(readFile(t, body))
	for _, want := range []string{"`" + strings.TrimPrefix(old.Digest, "sha256:")[:12] + "` → `" + strings.TrimPrefix(moved.Digest, "sha256:")[:12] + "`", `image "app"`, "`ns/pre`", "the manifests in `" + out + "`"} {
		if !strings.Contains(b, want) {
			t.Errorf("PR body lacks %q:\n%s", want, b)
		}
	}
	rendered, err := os.ReadFile(filepath.Join(out, "daemonset-ns-pre.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rendered), app+"@"+moved.Digest) && !strings.Contains(string(rendered), moved.Digest) {
		t.Errorf("--render did not pin the new digest:\n%s", rendered)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "config.yaml")), config) {
		t.Error("bump rewrote the config")
	}
	// Nothing left to bump: text output is empty, exit 0 even with
	// --exit-code, and the render check passes.
	stdout, stderr, code = runCLI(t, nil, "bump", dir, "--insecure-registry", h, "--exit-code", "--render", out)
	if code != 0 || len(stdout) != 0 || !strings.Contains(stderr, "is current") {
		t.Errorf("second bump: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out, "--check"); code != 0 {
		t.Errorf("render --check after bump --render: %s", stderr)
	}
}

func TestRegistryFlagsAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]configImage{"app": {Ref: "127.0.0.1:1/a:1"}}, "127.0.0.1:1/h:1", "127.0.0.1:1/p:1")
	for _, args := range [][]string{
		{"lock", dir, "--jobs", "0"},
		{"lock", dir, "--mirror", "docker.io"},
		{"bump", dir, "-o", "xml"},
		{"lock", dir, "--retries", "-1"},
		{"vet", dir, "--remote", "--insecure-registry", "http://x"},
	} {
		if _, stderr, code := runCLI(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}

// TestBumpNamesWrittenPins: an image written once with a digest and once
// with its tag alone is pinned by the written digest in both places; bump
// does not re-resolve it and says so, naming both spellings and the use of
// the tag-only one, instead of only "current".
func TestBumpNamesWrittenPins(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	app, helper, pause := h+"/team/app:1.0", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, helper, pause}, registry.WithInsecure(h))
	pinned := app + "@" + standinEntry(t, app).Digest
	dir := writeConfig(t, map[string]configImage{"a-pinned": {Ref: pinned}, "b-tag": {Ref: app}}, helper, pause)
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: %s", stderr)
	}
	_, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", h)
	want := "stowage: " + h + "/team/app:1.0 is not re-resolved: " + pinned + " pins it by the digest written there, and that pin also holds " + app + ` (image "b-tag"), written without one; remove the digest to let bump follow the tag`
	if code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("bump: exit %d, stderr:\n%s\nwant a line:\n%s", code, stderr, want)
	}
}
