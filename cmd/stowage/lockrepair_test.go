package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestLockReplacesInvalidEntry: a lock entry that does not validate (a
// negative size, as a hostile registry once got written) blocks render and
// bump, which name it, but `stowage lock` drops it with a warning and
// resolves it again, giving the lock it would have written from scratch.
func TestLockReplacesInvalidEntry(t *testing.T) {
	t.Parallel()
	f := newLockFixture(t)
	good := f.lock
	sizes := regexp.MustCompile(`(?m)^(\s+size: )\d+$`)
	loc := sizes.FindIndex(good)
	if loc == nil {
		t.Fatalf("no size in the lock:\n%s", good)
	}
	bad := append(append(append([]byte{}, good[:loc[0]]...), sizes.ReplaceAll(good[loc[0]:loc[1]], []byte("${1}-5"))...), good[loc[1]:]...)
	if err := os.WriteFile(f.lockPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, nil, "render", f.dir); code != 1 || !strings.Contains(stderr, "-5 is negative") {
		t.Errorf("render on the bad lock: exit %d, %s; want 1 naming the size", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "lock", f.dir, "--check"); code != 1 || !strings.Contains(stderr, "-5 is negative") {
		t.Errorf("lock --check on the bad lock: exit %d, %s; want 1 naming the size", code, stderr)
	}
	_, stderr, code := runCLI(t, nil, "lock", f.dir, "--insecure-registry", f.reg.Host)
	if code != 0 || !strings.Contains(stderr, "size: -5 is negative; want bytes >= 0; the entry is dropped and resolved again") {
		t.Fatalf("lock on the bad lock: exit %d, %s; want 0 and the warning", code, stderr)
	}
	if got := readFile(t, f.lockPath); !bytes.Equal(got, good) {
		t.Errorf("repaired lock differs from the one written from scratch:\n%s\nwant\n%s", got, good)
	}
}
