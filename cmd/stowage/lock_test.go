package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/standin"
)

// TestLockThenBump locks a config against the in-process registry, checks
// every entry against the stand-in it was seeded with, then bumps with
// nothing changed (one HEAD per image, no GET) and with one tag moved.
func TestLockThenBump(t *testing.T) {
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
		e, err := standin.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		want.Put(e)
	}
	if got := l.Marshal(); !bytes.Equal(got, want.Marshal()) {
		t.Errorf("lock differs from the stand-ins:\n%s", firstDiff(want.Marshal(), got))
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
