package main

import (
	"github.com/stowage/stowage/internal/testing/testbin"

	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// The atomicity suite (issue 5, item 4): a render into -o DIR, a lock and a
// bump that fail half way — a write that fails (as root too: a file size
// limit, a name too long, a parent that is a regular file), a registry
// error on the last image, SIGTERM or SIGINT during the run — leave every
// file as it was and no temporary file behind. Signals go to the real
// binary, run as a subprocess.

// stowageBinary returns the stowage binary the tests share (testbin.Stowage).
func stowageBinary(t *testing.T) string {
	t.Helper()
	return testbin.Stowage(t)
}

// manyPullersDir is a config directory with its lock: n pullers in one
// namespace, each pulling the same two images, so that render -o writes
// 2n+1 files.
func manyPullersDir(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("environments:\n  jupyter: {image: \"apache/submarine:jupyter-notebook-0.7.0\"}\n  tool: {image: \"ghcr.io/example-org/tool:2\"}\nprofiles:\n  p:\n    pullers:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {name: puller-%04d, namespace: ns, environments: [jupyter, tool]}\n", i)
	}
	return cliConfigDir(t, append([]string{"apache/submarine:jupyter-notebook-0.7.0", "ghcr.io/example-org/tool:2"}, cliDefaultImages...),
		"config.yaml", b.String())
}

// oldOutput renders the small valid config into parent/name and returns
// the directory and its files.
func oldOutput(t *testing.T, parent, name string) (string, map[string]string) {
	t.Helper()
	rendered := filepath.Join(t.TempDir(), "old")
	if _, stderr, code := runCLI(t, nil, "render", cliValidDir(t), "--output-dir", rendered); code != 0 {
		t.Fatalf("render the old output: exit %d: %s", code, stderr)
	}
	old := cliSnapshot(t, rendered)
	// Copied, since a name may be too long for render's staging directory.
	out := filepath.Join(parent, name)
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, b := range old {
		if err := os.WriteFile(filepath.Join(out, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out, old
}

// onlyEntries fails unless dir holds exactly names (no staging directory
// or temporary file left).
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range ents {
		have = append(have, e.Name())
	}
	slices.Sort(names)
	if !slices.Equal(have, names) {
		t.Errorf("%s holds %v, want %v (nothing left behind)", dir, have, names)
	}
}

// TestAtomicRenderInterrupted sends SIGTERM, then SIGINT, to the real
// binary while it stages a render -o of several hundred files (as soon as
// the staging directory appears): it stops, removes what it staged and
// exits 1, leaving the old output. A signal that lands after the swap
// began lets the write finish (exit 0, the new output); at least one run
// per signal must be stopped.
func TestAtomicRenderInterrupted(t *testing.T) {
	// Not parallel: it asserts how soon the binary stops after the signal
	// and must hit a short window, both of which other tests' load upsets.
	bin := stowageBinary(t)
	config := manyPullersDir(t, 300)
	newOut := filepath.Join(t.TempDir(), "new")
	if _, stderr, code := runCLI(t, nil, "render", config, "--output-dir", newOut); code != 0 {
		t.Fatalf("render: exit %d: %s", code, stderr)
	}
	want := cliSnapshot(t, newOut)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			stopped := 0
			for attempt := 0; attempt < 8 && stopped < 2; attempt++ {
				parent := t.TempDir()
				out, old := oldOutput(t, parent, "prepull")
				var stderr bytes.Buffer
				cmd := exec.Command(bin, "render", config, "--output-dir", out)
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Signal as soon as the staging directory appears.
				deadline := time.Now().Add(20 * time.Second)
				for time.Now().Before(deadline) {
					if staging, _ := filepath.Glob(filepath.Join(parent, ".prepull.new-*")); len(staging) > 0 {
						break
					}
					time.Sleep(50 * time.Microsecond)
				}
				sent := time.Now()
				if err := cmd.Process.Signal(sig); err != nil {
					t.Logf("attempt %d: the process was gone before the signal: %v", attempt, err)
				}
				err := cmd.Wait()
				if time.Since(sent) > interruptGrace+time.Second {
					t.Errorf("attempt %d: took %v after the signal to stop", attempt, time.Since(sent))
				}
				code := cmd.ProcessState.ExitCode()
				switch {
				case code == 1:
					stopped++
					if got := cliSnapshot(t, out); !maps.Equal(old, got) {
						t.Errorf("attempt %d: stopped, but %s changed", attempt, out)
					}
					if !strings.Contains(stderr.String(), "stopped, nothing written") {
						t.Errorf("attempt %d: stderr does not say it stopped:\n%s", attempt, stderr.String())
					}
				case code == 0:
					if got := cliSnapshot(t, out); !maps.Equal(want, got) {
						t.Errorf("attempt %d: exit 0 after the signal, but %s is not the new output", attempt, out)
					}
				default:
					t.Errorf("attempt %d: %v (exit %d), want exit 1 or 0; stderr:\n%s", attempt, err, code, stderr.String())
				}
				onlyEntries(t, parent, "prepull")
			}
			if stopped == 0 {
				t.Errorf("no run was stopped by %v during the write", sig)
			}
		})
	}
}

// TestAtomicRenderWriteFails makes render -o fail while writing, in ways
// that fail for root too: a file size limit (RLIMIT_FSIZE, set by sh's
// ulimit for the real binary) that the DaemonSet files exceed after the
// smaller files were staged; an output name too long for its staging
// name; an output under a regular file.
func TestAtomicRenderWriteFails(t *testing.T) {
	t.Parallel()
	bin := stowageBinary(t)
	config := manyPullersDir(t, 3)

	t.Run("file size limit", func(t *testing.T) {
		parent := t.TempDir()
		out, old := oldOutput(t, parent, "prepull")
		// 4 blocks: 2 KiB for dash (512-byte blocks), 4 KiB for bash;
		// each DaemonSet file is larger, the records ConfigMaps smaller.
		cmd := exec.Command("sh", "-c", `ulimit -f 4 && exec "$0" "$@"`, bin, "render", config, "--output-dir", out)
		stderr, err := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(stderr), "file too large") {
			t.Fatalf("%v, want exit 1 and \"file too large\":\n%s", err, stderr)
		}
		if got := cliSnapshot(t, out); !maps.Equal(old, got) {
			t.Errorf("%s changed", out)
		}
		onlyEntries(t, parent, "prepull")
	})

	t.Run("name too long for the staging directory", func(t *testing.T) {
		parent := t.TempDir()
		out, old := oldOutput(t, parent, strings.Repeat("o", 250))
		_, stderr, code := runCLI(t, nil, "render", config, "--output-dir", out)
		if code != 1 || !strings.Contains(stderr, "file name too long") {
			t.Fatalf("exit %d, want 1 and \"file name too long\": %s", code, stderr)
		}
		if got := cliSnapshot(t, out); !maps.Equal(old, got) {
			t.Errorf("%s changed", out)
		}
		onlyEntries(t, parent, filepath.Base(out))
	})

	t.Run("parent is a regular file", func(t *testing.T) {
		parent := t.TempDir()
		file := filepath.Join(parent, "file")
		if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runCLI(t, nil, "render", config, "--output-dir", filepath.Join(file, "prepull"))
		if code != 1 || !strings.Contains(stderr, "not a directory") {
			t.Fatalf("exit %d, want 1 and \"not a directory\": %s", code, stderr)
		}
		if b, _ := os.ReadFile(file); string(b) != "x\n" {
			t.Errorf("the file changed to %q", b)
		}
		onlyEntries(t, parent, "file")
	})
}

// lockFixture is a config of four images on the in-process registry,
// pulled by one puller, with a complete lock.
type lockFixture struct {
	reg      *inProcess
	dir      string
	lockPath string
	refs     []string // app, tool, helper, pause; tool's key sorts last
	lock     []byte
}

func newLockFixture(t *testing.T) *lockFixture {
	t.Helper()
	reg := startInProcess(t)
	h := reg.Host
	f := &lockFixture{reg: reg, refs: []string{h + "/team/app:1.0", h + "/team/zz-tool:2", h + "/stowage/helper:v1", h + "/k8s/pause:3.10"}}
	seed(t, nil, f.refs, registry.WithInsecure(h))
	f.dir = writeConfig(t, map[string]configImage{"app": {Ref: f.refs[0]}, "tool": {Ref: f.refs[1]}}, f.refs[2], f.refs[3])
	f.lockPath = filepath.Join(f.dir, lock.FileName)
	if _, stderr, code := runCLI(t, nil, "lock", f.dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: exit %d: %s", code, stderr)
	}
	f.lock = readFile(t, f.lockPath)
	return f
}

// moveTags pushes other content under every tag, so that a bump changes
// every entry.
func (f *lockFixture) moveTags(t *testing.T) {
	t.Helper()
	r, err := registry.New(registry.WithInsecure(f.reg.Host))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.refs {
		ref, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := name.ParseReference(s + "-moved")
		img, idx, err := offlineimage.For(other)
		if err != nil {
			t.Fatal(err)
		}
		if err := registrytest.Write(context.Background(), r, ref, nil, img, idx); err != nil {
			t.Fatal(err)
		}
	}
}

// unchanged fails unless the config directory holds the config and the
// lock as they were, and nothing else.
func (f *lockFixture) unchanged(t *testing.T) {
	t.Helper()
	if got := readFile(t, f.lockPath); !bytes.Equal(got, f.lock) {
		t.Errorf("the lock changed:\n%s", linediff.First(f.lock, got))
	}
	onlyEntries(t, f.dir, "config.yaml", lock.FileName)
}

// TestAtomicLockRegistryErrorOnLastImage: lock (filling a lock that lacks
// every entry) and bump (every tag moved, with --render and --pr-body)
// resolve one image at a time; the last one fails with a 500. Nothing is
// written: the lock, the rendered directory and the PR body stay as they
// were.
func TestAtomicLockRegistryErrorOnLastImage(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"lock", "bump"} {
		t.Run(command, func(t *testing.T) {
			f := newLockFixture(t)
			if command == "lock" {
				f.lock = (&lock.Lock{}).Marshal()
				if err := os.WriteFile(f.lockPath, f.lock, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				f.moveTags(t)
			}
			parent := t.TempDir()
			out, oldOut := oldOutput(t, parent, "prepull")
			body := filepath.Join(parent, "body.md")

			f.reg.Faults.Reset()
			f.reg.Faults.Add(registrytest.Rule{Path: "/v2/team/zz-tool/manifests/", Fault: registrytest.Status(500, nil)})
			args := []string{command, f.dir, "--insecure-registry", f.reg.Host, "--jobs", "1", "--retries", "0"}
			if command == "bump" {
				args = append(args, "--render", out, "--pr-body", body)
			}
			_, stderr, code := runCLI(t, nil, args...)
			if code != 1 || !strings.Contains(stderr, "zz-tool") || !strings.Contains(stderr, "500") {
				t.Fatalf("exit %d, want 1 naming zz-tool and the 500: %s", code, stderr)
			}
			// The failing image was the last one resolved.
			reqs := f.reg.Faults.Requests()
			if last := reqs[len(reqs)-1]; !strings.Contains(last.Path, "zz-tool") {
				t.Errorf("the last request was %s %s, want the failing image's", last.Method, last.Path)
			}
			for _, img := range []string{"team/app", "stowage/helper", "k8s/pause"} {
				if f.reg.Faults.Count("", "/v2/"+img+"/manifests/") == 0 {
					t.Errorf("%s was not resolved before the failure", img)
				}
			}
			if command == "bump" {
				f.unchanged(t)
			} else {
				// lock keeps what it learned: the three that resolved,
				// not the failing one.
				l, err := lock.Parse(readFile(t, f.lockPath), f.lockPath)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, e := range l.Entries {
					got = append(got, e.Reference)
				}
				if len(got) != 3 || strings.Contains(strings.Join(got, " "), "zz-tool") {
					t.Errorf("lock entries %v, want app, helper and pause", got)
				}
			}
			if got := cliSnapshot(t, out); !maps.Equal(oldOut, got) {
				t.Errorf("%s changed", out)
			}
			onlyEntries(t, parent, "prepull")
		})
	}
}

// TestAtomicBumpHalfWay: bump's lock write goes through, then a later
// write fails — the rendered directory (a name too long for its staging
// directory) or the PR body (under a regular file). The lock is put back
// as it was, the rendered directory too, and nothing is left behind.
func TestAtomicBumpHalfWay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		outName    string
		bodyInFile bool
		says       string
	}{
		{"render directory fails", strings.Repeat("o", 250), false, "file name too long"},
		{"PR body fails", "prepull", true, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLockFixture(t)
			f.moveTags(t)
			parent := t.TempDir()
			out, oldOut := oldOutput(t, parent, tc.outName)
			body := filepath.Join(parent, "body.md")
			entries := []string{tc.outName}
			if tc.bodyInFile {
				file := filepath.Join(parent, "file")
				if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				body = filepath.Join(file, "body.md")
				entries = append(entries, "file")
			}
			_, stderr, code := runCLI(t, nil, "bump", f.dir, "--insecure-registry", f.reg.Host, "--render", out, "--pr-body", body)
			if code != 1 || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit %d, want 1 and %q: %s", code, tc.says, stderr)
			}
			f.unchanged(t)
			if got := cliSnapshot(t, out); !maps.Equal(oldOut, got) {
				t.Errorf("%s changed", out)
			}
			onlyEntries(t, parent, entries...)
		})
	}
}

// TestAtomicLockInterrupted sends SIGTERM to the real binary while lock,
// then bump --render, waits for the registry's answer about the last
// image (held for a minute): it stops at once and exits 1, the lock and
// the rendered directory as they were, nothing left behind.
func TestAtomicLockInterrupted(t *testing.T) {
	// Not parallel: it asserts that the binary stops within interruptGrace
	// of the signal, which other tests' load can stretch.
	bin := stowageBinary(t)
	for _, command := range []string{"lock", "bump"} {
		t.Run(command, func(t *testing.T) {
			f := newLockFixture(t)
			if command == "lock" {
				f.lock = (&lock.Lock{}).Marshal()
				if err := os.WriteFile(f.lockPath, f.lock, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				f.moveTags(t)
			}
			parent := t.TempDir()
			out, oldOut := oldOutput(t, parent, "prepull")
			f.reg.Faults.Reset()
			f.reg.Faults.Add(registrytest.Rule{Path: "/v2/team/zz-tool/manifests/", Fault: registrytest.Delay(time.Minute)})
			args := []string{command, f.dir, "--insecure-registry", f.reg.Host, "--jobs", "1", "--timeout", "2m"}
			if command == "bump" {
				args = append(args, "--render", out)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for f.reg.Faults.Count("", "/v2/team/zz-tool/manifests/") == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			sent := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if d := time.Since(sent); d > interruptGrace {
				t.Errorf("stopped %v after SIGTERM, want well within %v", d, interruptGrace)
			}
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), "stopped, nothing written") {
				t.Fatalf("%v, want exit 1 saying it stopped:\n%s", err, stderr.String())
			}
			f.unchanged(t)
			if got := cliSnapshot(t, out); !maps.Equal(oldOut, got) {
				t.Errorf("%s changed", out)
			}
			onlyEntries(t, parent, "prepull")
		})
	}
}

// TestAtomicLockWriteFails: lock's write of the lock file fails half way
// (a file size limit the new lock exceeds): the old lock stays, and no
// temporary file. sh's ulimit -f counts 512-byte blocks: one block is less
// than the new lock's four entries whatever the registry's port (two
// blocks were not always).
func TestAtomicLockWriteFails(t *testing.T) {
	t.Parallel()
	bin := stowageBinary(t)
	f := newLockFixture(t)
	f.lock = []byte("# an old, short lock\n" + string((&lock.Lock{}).Marshal()))
	if err := os.WriteFile(f.lockPath, f.lock, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -f 1 && exec "$0" "$@"`, bin, "lock", f.dir, "--insecure-registry", f.reg.Host)
	stderr, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(stderr), "file too large") {
		t.Fatalf("%v, want exit 1 and \"file too large\":\n%s", err, stderr)
	}
	f.unchanged(t)
}
