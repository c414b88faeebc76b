package source

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

const (
	configDir = "../../examples/submarine-notebooks"
	kustDir   = "../../examples/gitops-argo/prepull"
)

// TestLoadConfigDir reads a config directory: its lock is
// DIR/stowage.lock.yaml, read whole; passwords under the CLI's rule.
func TestLoadConfigDir(t *testing.T) {
	t.Parallel()
	src, err := Load(configDir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if src.Kustomization != nil || src.LockPath != filepath.Join(configDir, lock.FileName) {
		t.Fatalf("kustomization %v, lock %q", src.Kustomization, src.LockPath)
	}
	if r := src.Passwords(); r.Function || r.Dir != configDir {
		t.Errorf("password rule %+v, want the CLI's in %s", r, configDir)
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(src.LockPath)
	if err != nil {
		t.Fatal(err)
	}
	if !lf.Exists || !bytes.Equal(lf.Data, want) || len(lf.Lock.Entries) == 0 {
		t.Errorf("lock exists %v, %d bytes (want %d), %d entries", lf.Exists, len(lf.Data), len(want), len(lf.Lock.Entries))
	}
	if _, err := Load(configDir, LoadOptions{Root: "."}); !errors.As(err, new(*UsageError)) {
		t.Errorf("--root on a config directory: %v, want a *UsageError", err)
	}
}

// TestReadLockMissing: a lock that does not exist is an empty lock with no
// bytes, so that render names every image that needs an entry.
func TestReadLockMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := &Source{Dir: dir, LockPath: filepath.Join(dir, lock.FileName)}
	lf, err := src.ReadLock(nil)
	if err != nil {
		t.Fatal(err)
	}
	if lf.Exists || lf.Data != nil || lf.Lock == nil || len(lf.Lock.Entries) != 0 {
		t.Errorf("got %+v, want an empty lock that does not exist", lf)
	}
}

// TestReadLockRepair: with repair, an entry that does not validate is
// dropped and handed to repair; without, it fails the read naming it.
func TestReadLockRepair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := "apiVersion: " + lock.APIVersion + "\nkind: " + lock.ObjectKind + "\nmetadata:\n  name: stowage-lock\nspec:\n  images:\n" +
		"  - name: docker.io/library/busybox:1.36\n    reference: busybox:1.36\n    digest: sha256:nothex\n    kind: manifest\n"
	if err := os.WriteFile(filepath.Join(dir, lock.FileName), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	src := &Source{Dir: dir, LockPath: filepath.Join(dir, lock.FileName)}
	if _, err := src.ReadLock(nil); err == nil || !strings.Contains(err.Error(), "busybox") {
		t.Fatalf("strict read: %v, want an error naming the entry", err)
	}
	var dropped []error
	lf, err := src.ReadLock(func(d error) { dropped = append(dropped, d) })
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 1 || len(lf.Lock.Entries) != 0 || string(lf.Data) != data {
		t.Errorf("dropped %v, entries %v, data %q", dropped, lf.Lock.Entries, lf.Data)
	}
}

// TestLoadKustomization reads a kustomization running stowage as a KRM
// function: the functionConfig's one profile, the lock its resources list,
// the workloads it pins, the function's password rule, and --profile and
// --allow-literal-passwords refused as usage errors.
func TestLoadKustomization(t *testing.T) {
	t.Parallel()
	var warnings bytes.Buffer
	find := func(args []string) (*cobra.Command, []string, error) {
		c := &cobra.Command{Use: "fn"}
		c.Flags().StringArray("allow-env", nil, "")
		c.Flags().Int64("max-input-bytes", 7, "")
		return c, args[1:], nil
	}
	src, err := Load(kustDir, LoadOptions{Warnings: &warnings, Find: find})
	if err != nil {
		t.Fatal(err)
	}
	if src.Kustomization == nil || src.LockPath != filepath.Join(kustDir, lock.FileName) {
		t.Fatalf("kustomization %v, lock %q", src.Kustomization, src.LockPath)
	}
	if len(src.Workloads) == 0 || src.MaxInput != 7 || src.AllowEnv != nil {
		t.Errorf("workloads %v, max input %d, allow-env %v", src.Workloads, src.MaxInput, src.AllowEnv)
	}
	if r := src.Passwords(); !r.Function || r.Dir != kustDir {
		t.Errorf("password rule %+v, want the function's in %s", r, kustDir)
	}
	ps, err := src.Profiles("")
	if err != nil || len(ps) != 1 || ps[0] != "notebooks" {
		t.Errorf("profiles %v, %v; want [notebooks]", ps, err)
	}
	if _, err := src.Profiles("other"); !errors.As(err, new(*UsageError)) {
		t.Errorf("--profile on a kustomization: %v, want a *UsageError", err)
	}
	if _, err := Load(kustDir, LoadOptions{AllowLiteralPasswords: true}); !errors.As(err, new(*UsageError)) {
		t.Errorf("--allow-literal-passwords on a kustomization: %v, want a *UsageError", err)
	}
	if err := src.OwnLock(); err != nil {
		t.Errorf("OwnLock: %v", err)
	}
}

// TestPlansOnce: a profile's plan is built once however often it is asked
// for, and All over those plans is plan.All's plan.
func TestPlansOnce(t *testing.T) {
	t.Parallel()
	src, err := Load(configDir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := src.Plans(lf.Lock)
	a, err := ps.Profile("")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := ps.Profile(""); a != b {
		t.Error("the plan of a profile was built twice")
	}
	all, err := ps.All()
	if err != nil {
		t.Fatal(err)
	}
	want, err := plan.All(src.Config, lf.Lock)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(all.Profiles, ",") != strings.Join(want.Profiles, ",") || len(all.Images) != len(want.Images) {
		t.Fatalf("All: profiles %v, %d images; plan.All: %v, %d", all.Profiles, len(all.Images), want.Profiles, len(want.Images))
	}
	for i, img := range all.Images {
		if w := want.Images[i]; img.Key != w.Key || img.UsedBy() != w.UsedBy() || strings.Join(img.Pins(), ",") != strings.Join(w.Pins(), ",") {
			t.Errorf("image %d: %s %s %v, plan.All: %s %s %v", i, img.Key, img.UsedBy(), img.Pins(), w.Key, w.UsedBy(), w.Pins())
		}
	}
	if again, _ := ps.All(); again != all {
		t.Error("All was built twice")
	}
}
