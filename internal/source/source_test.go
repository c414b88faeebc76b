package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/kustomization"
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
	src, err := Load(context.Background(), configDir, LoadOptions{})
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
	if _, err := Load(context.Background(), configDir, LoadOptions{Root: "."}); !errors.As(err, new(*UsageError)) {
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
	var declared []string
	parse := func(args []string) (Declaration, bool, error) {
		declared = args
		return Declaration{MaxInput: 7}, true, nil
	}
	src, err := Load(context.Background(), kustDir, LoadOptions{Warnings: &warnings, Declared: parse})
	if err != nil {
		t.Fatal(err)
	}
	if src.Kustomization == nil || src.LockPath != filepath.Join(kustDir, lock.FileName) {
		t.Fatalf("kustomization %v, lock %q", src.Kustomization, src.LockPath)
	}
	if len(src.Workloads) == 0 || src.MaxInput != 7 || src.AllowEnv != nil {
		t.Errorf("workloads %v, max input %d, allow-env %v", src.Workloads, src.MaxInput, src.AllowEnv)
	}
	if strings.Join(declared, " ") != "fn" {
		t.Errorf("the declaration's args given to Declared: %q, want [fn]", declared)
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
	if _, err := Load(context.Background(), kustDir, LoadOptions{AllowLiteralPasswords: true}); !errors.As(err, new(*UsageError)) {
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
	src, err := Load(context.Background(), configDir, LoadOptions{})
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

// TestExecDeclarationArgs: what Declared says of the declaration's args
// is what the source gets; args it does not know (ok false) keep the
// defaults, and its error names the functionConfig's file and the args.
func TestExecDeclarationArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		declared func([]string) (Declaration, bool, error)
		allow    []string
		max      int64
		err      string
	}{
		{"stowage fn", func([]string) (Declaration, bool, error) {
			return Declaration{AllowEnv: []string{"CI_JOB_TOKEN"}, MaxInput: 1000}, true, nil
		}, []string{"CI_JOB_TOKEN"}, 1000, ""},
		{"not stowage fn", func([]string) (Declaration, bool, error) { return Declaration{MaxInput: 1}, false, nil }, nil, 4 << 20, ""},
		{"refused", func([]string) (Declaration, bool, error) {
			return Declaration{}, true, errors.New("unknown flag: --nope")
		}, nil, 0, `stowage.yaml: the exec declaration's args ["fn"]: unknown flag: --nope`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, err := Load(context.Background(), kustDir, LoadOptions{Declared: tc.declared})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(src.AllowEnv, ",") != strings.Join(tc.allow, ",") || (src.AllowEnv == nil) != (tc.allow == nil) || src.MaxInput != tc.max {
				t.Errorf("allow-env %q, max input %d; want %q, %d", src.AllowEnv, src.MaxInput, tc.allow, tc.max)
			}
		})
	}
}

// TestLoadCancelled: a context cancelled while kustomize builds stops the
// build at once, with kustomization.ErrDeadline and the cancellation's
// cause, however long the build would take.
func TestLoadCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"stowage.yaml", "stowage.lock.yaml", "notebook-controller.yaml"} {
		b, err := os.ReadFile(filepath.Join(kustDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Enough ConfigMaps that the build takes far longer than the wait
	// before the cancel.
	var big strings.Builder
	for i := range 500 {
		fmt.Fprintf(&big, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\ndata:\n  k: v\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.yaml"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- stowage.lock.yaml\n- notebook-controller.yaml\n- big.yaml\ntransformers:\n- stowage.yaml\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("interrupted")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(20*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	_, err := Load(ctx, dir, LoadOptions{})
	took := time.Since(start)
	if !errors.Is(err, kustomization.ErrDeadline) || !errors.Is(err, cause) {
		t.Fatalf("err %v, want kustomization.ErrDeadline and the cause", err)
	}
	if took > 2*time.Second {
		t.Errorf("Load returned %v after the start, long after the cancel at 20ms", took)
	}
}

// TestCheckConfigDirAndDiscover: render's output directory is refused by
// both kinds of command, a kustomization only by those that take no
// kustomization, a config directory by neither; Discover names why a
// directory is stowage's, and says nothing of one that is not.
func TestCheckConfigDirAndDiscover(t *testing.T) {
	t.Parallel()
	rendered := "../../examples/gitops-flux/clusters/prod/prepull"
	for _, tc := range []struct {
		dir             string
		kustomizationOK bool
		err             string
	}{
		{rendered, true, "is the output of `stowage render --output-dir`"},
		{rendered, false, "is the output of `stowage render --output-dir`"},
		{kustDir, true, ""},
		{kustDir, false, "is a kustomization (kustomization.yaml), not a stowage config directory"},
		{configDir, false, ""},
	} {
		err := CheckConfigDir(tc.dir, tc.kustomizationOK)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckConfigDir(%s, %v) = %v, want %q", tc.dir, tc.kustomizationOK, err, tc.err)
		}
	}
	empty := t.TempDir()
	for dir, want := range map[string]string{
		kustDir:   "kustomization.yaml: a kustomization with the stowage transformer",
		configDir: lock.FileName + ": a stowage config directory",
		empty:     "",
	} {
		if got, err := Discover(dir); err != nil || got != want {
			t.Errorf("Discover(%s) = %q, %v; want %q", dir, got, err, want)
		}
	}
	if _, err := Discover(filepath.Join(empty, "missing")); err == nil {
		t.Error("Discover of a missing directory: no error")
	}
}
