//go:build unix

package atomicfile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestReplaceDirReaderNeverMisses: a reader hammering kustomization.yaml
// while 50 replacements swap the directory always finds the file, holding
// one whole generation (issue 14 saw it missing in 45 of 50 renders with
// the two-rename swap).
func TestReplaceDirReaderNeverMisses(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	gen := func(i int) map[string][]byte {
		files := map[string][]byte{"kustomization.yaml": []byte(fmt.Sprintf("generation %03d\n", i))}
		for j := range 5 {
			files[fmt.Sprintf("obj-%02d.yaml", j)] = []byte(fmt.Sprintf("generation %03d\n", i))
		}
		return files
	}
	if err := ReplaceDir(out, gen(0)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, misses atomic.Int64
	var bad sync.Map
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			b, err := os.ReadFile(filepath.Join(out, "kustomization.yaml"))
			reads.Add(1)
			if err != nil {
				misses.Add(1)
				bad.Store(err.Error(), true)
			} else if !strings.HasPrefix(string(b), "generation ") || len(b) != len("generation 000\n") {
				bad.Store(string(b), true)
			}
		}
	}()
	for i := 1; i <= 50; i++ {
		if err := ReplaceDir(out, gen(i)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if misses.Load() > 0 {
		t.Errorf("kustomization.yaml missing in %d of %d reads", misses.Load(), reads.Load())
	}
	bad.Range(func(k, _ any) bool { t.Errorf("read %q", k); return true })
	if reads.Load() < 50 {
		t.Errorf("only %d reads: the reader did not overlap the swaps", reads.Load())
	}
	if got := tree(t, out)["kustomization.yaml"]; got != "generation 050\n" {
		t.Errorf("final kustomization.yaml = %q", got)
	}
}

// killEnv makes the test binary, run as a child, replace the directory it
// names and SIGKILL itself inside the swap.
const killEnv = "STOWAGE_ATOMICFILE_KILL_INSIDE_SWAP"

// TestKillInsideSwapChild is the child of TestReplaceDirKilledInsideSwap;
// it does nothing unless killEnv is set.
func TestKillInsideSwapChild(t *testing.T) {
	t.Parallel()
	out := os.Getenv(killEnv)
	if out == "" {
		t.Skip("child of TestReplaceDirKilledInsideSwap only")
	}
	s := osSteps
	s.afterSwap = func(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	replaceDir(context.Background(), out, map[string][]byte{"kustomization.yaml": []byte("new\n"), "secret.yaml": []byte("new secret\n")}, s)
	t.Fatal("not killed")
}

// TestReplaceDirKilledInsideSwap: a process killed after the swap and
// before the old tree is removed leaves dir holding the new tree, and
// beside it only a wrapper of mode 0700 (the old Secrets readable by
// nobody else), which the next replacement removes.
func TestReplaceDirKilledInsideSwap(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	if err := ReplaceDir(out, map[string][]byte{"kustomization.yaml": []byte("old\n"), "secret.yaml": []byte("old secret\n")}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillInsideSwapChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+out)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL", err)
	}
	if got := tree(t, out); got["kustomization.yaml"] != "new\n" || got["secret.yaml"] != "new secret\n" {
		t.Errorf("out after the kill = %q, want the new tree", got)
	}
	ents := entries(t, parent)
	if len(ents) != 2 || !strings.HasPrefix(ents[0], ".out.new-") {
		t.Fatalf("parent holds %q, want out and one .out.new-* wrapper", ents)
	}
	fi, err := os.Stat(filepath.Join(parent, ents[0]))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("leftover wrapper mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	if err := ReplaceDir(out, map[string][]byte{"kustomization.yaml": []byte("next\n")}); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, parent); len(got) != 1 || got[0] != "out" {
		t.Errorf("parent after the next run holds %q, want only out", got)
	}
}
