package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
)

// linkedLockApp is a kustomization whose resources list
// sub/stowage.lock.yaml, sub being a symbolic link to a directory outside
// the kustomization's root that holds another tenant's lock (tenant). It
// returns the kustomization's directory and the outside lock's path.
func linkedLockApp(t *testing.T, tenant string) (app, outsideLock string) {
	t.Helper()
	top := t.TempDir()
	app = filepath.Join(top, "app")
	outside := filepath.Join(top, "outside")
	writeTree(t, app, map[string]string{
		"kustomization.yaml": "resources:\n  - sub/stowage.lock.yaml\ntransformers:\n  - stowage.yaml\n",
		"stowage.yaml":       "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: pin\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: stowage, args: [fn]}\nspec: {}\n",
	})
	writeTree(t, outside, map[string]string{lock.FileName: tenant})
	if err := os.Symlink(filepath.Join("..", "outside"), filepath.Join(app, "sub")); err != nil {
		t.Fatal(err)
	}
	return app, filepath.Join(outside, lock.FileName)
}

// TestLockThroughLinkOutOfRoot: a lock listed as sub/stowage.lock.yaml,
// sub a link to a directory outside the kustomization's root, is refused
// by lock, lock --check, bump and vet (exit 1, the kustomization file,
// line and entry named), and by stowage fn when its lock item names that
// file: the outside lock, another tenant's valid one, keeps its bytes (lock
// and bump would otherwise prune its entries, since this kustomization
// pins no image), and an outside file that is not a lock is never quoted.
func TestLockThroughLinkOutOfRoot(t *testing.T) {
	t.Parallel()
	valid, err := os.ReadFile(filepath.Join(argoExample, "prepull", lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "tenant-b-private-field"
	invalid := "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata: {name: b}\nspec:\n  images: []\n  " + secret + ": 1\n"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"lock", []string{"lock", "--quiet"}},
		{"lock --check", []string{"lock", "--check"}},
		{"bump", []string{"bump", "--quiet"}},
		{"vet", []string{"vet"}},
	} {
		for _, tenant := range []string{string(valid), invalid} {
			app, outsideLock := linkedLockApp(t, tenant)
			out, stderr, code := runCLI(t, nil, append(tc.args, app)...)
			want := filepath.Join(app, "kustomization.yaml") + `:2: resources[0] "sub/stowage.lock.yaml": ` + filepath.Join(app, "sub") + " was not read (a symbolic link that leads out of the root (--root)): stowage reads and writes a lock only beneath the root"
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s: exit %d (want 1)\n%s%s\nwant stderr to contain:\n%s", tc.name, code, out, stderr, want)
			}
			if strings.Contains(stderr, secret) || strings.Contains(string(out), secret) {
				t.Errorf("%s quotes the outside file:\n%s%s", tc.name, out, stderr)
			}
			if now, err := os.ReadFile(outsideLock); err != nil || string(now) != tenant {
				t.Errorf("%s changed the outside lock %s (%v):\n%s", tc.name, outsideLock, err, now)
			}
		}
	}

	// stowage fn, run by hand in the kustomization's directory with a
	// lock item that names the linked file.
	app, outsideLock := linkedLockApp(t, invalid)
	item := strings.Replace(invalid, "metadata: {name: b}", "metadata:\n  name: b\n  annotations:\n    config.kubernetes.io/path: sub/stowage.lock.yaml\n    config.kubernetes.io/index: '0'", 1)
	fc, err := os.ReadFile(filepath.Join(app, "stowage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(item, "\n"), "\n", "\n  ") +
		"\nfunctionConfig:\n  " + strings.ReplaceAll(strings.TrimSuffix(string(fc), "\n"), "\n", "\n  ") + "\n"
	cmd := exec.Command(stowageBinary(t), "fn")
	cmd.Dir = app
	cmd.Stdin = strings.NewReader(rl)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "the lock sub/stowage.lock.yaml leads out of the kustomization's directory through a symbolic link") {
		t.Errorf("fn: exit %d (%v), want 1 naming the lock\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), secret) {
		t.Errorf("fn quotes the outside lock:\n%s", stderr.String())
	}
	if now, err := os.ReadFile(outsideLock); err != nil || string(now) != invalid {
		t.Errorf("fn changed the outside lock (%v):\n%s", err, now)
	}
}
