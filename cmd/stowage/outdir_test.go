package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRenderRefusesForeignOutputDir: -o replaces the whole directory, so a
// directory holding anything stowage did not write (a config, .git, other
// manifests) is refused and left as it was; an empty one or a previous
// render is fine.
func TestRenderRefusesForeignOutputDir(t *testing.T) {
	t.Parallel()
	example := filepath.Join(repoRoot, "examples", "openpai-offline")
	cases := []struct {
		name  string
		setup func(t *testing.T, out string)
		ok    bool
	}{
		{"missing", func(t *testing.T, out string) {}, true},
		{"empty", func(t *testing.T, out string) { mkdir(t, out) }, true},
		{"previous render", func(t *testing.T, out string) {
			if _, stderr, code := runCLI(t, nil, "render", example, "--output-dir", out); code != 0 {
				t.Fatalf("first render: %s", stderr)
			}
		}, true},
		{"git repository", func(t *testing.T, out string) { mkdir(t, filepath.Join(out, ".git")) }, false},
		{"other manifests", func(t *testing.T, out string) {
			mkdir(t, out)
			write(t, filepath.Join(out, "notes.txt"), "keep me")
		}, false},
		{"hand-written kustomization", func(t *testing.T, out string) {
			mkdir(t, out)
			write(t, filepath.Join(out, "kustomization.yaml"), "resources: [a.yaml]\n")
		}, false},
		{"previous render plus a stranger", func(t *testing.T, out string) {
			if _, stderr, code := runCLI(t, nil, "render", example, "--output-dir", out); code != 0 {
				t.Fatalf("first render: %s", stderr)
			}
			write(t, filepath.Join(out, "extra.yaml"), "kind: ConfigMap\n")
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			tc.setup(t, out)
			before := snapshot(t, out)
			_, stderr, code := runCLI(t, nil, "render", example, "--output-dir", out)
			if tc.ok {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, "stowage did not write") {
				t.Fatalf("exit %d, stderr %q; want exit 1 refusing the directory", code, stderr)
			}
			if after := snapshot(t, out); after != before {
				t.Errorf("the directory changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists a directory tree with file contents, as one string.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		b.WriteString(p)
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString("=" + string(data))
		}
		b.WriteString(";")
		return nil
	})
	return b.String()
}

// TestOutputPathsChecked: bump --pr-body onto the lock or a config file,
// and -o or --render onto the config directory, are refused (exit 1)
// before anything is written or any registry contacted; every file stays
// as it was (issue 14: --pr-body overwrote them with markdown, exit 0).
func TestOutputPathsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args func(dir string) []string
		want func(dir string) string
	}{
		{"--pr-body on the lock", func(dir string) []string {
			return []string{"bump", dir, "--pr-body", filepath.Join(dir, "stowage.lock.yaml")}
		}, func(dir string) string { return "is the lock file" }},
		{"--pr-body on the config", func(dir string) []string {
			return []string{"bump", dir, "--pr-body", filepath.Join(dir, "config.yaml")}
		}, func(dir string) string { return "is a config file of " + dir }},
		{"--pr-body on someone's file", func(dir string) []string {
			return []string{"bump", dir, "--pr-body", filepath.Join(dir, "README.md")}
		}, func(dir string) string { return "exists and stowage did not write it" }},
		{"--render onto the config", func(dir string) []string {
			return []string{"bump", dir, "--render", dir}
		}, func(dir string) string { return "--render " + dir + " is the config directory" }},
		{"--pr-body inside --render", func(dir string) []string {
			return []string{"bump", dir, "--render", filepath.Join(dir, "out"), "--pr-body", filepath.Join(dir, "out", "body.md")}
		}, func(dir string) string { return "is inside --render" }},
		{"-o onto the config", func(dir string) []string {
			return []string{"render", dir, "--output-dir", dir}
		}, func(dir string) string { return "--output-dir " + dir + " is the config directory" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := cliValidDir(t)
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("notes\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := cliSnapshot(t, dir)
			_, stderr, code := runCLI(t, nil, tc.args(dir)...)
			if code != 1 || !strings.Contains(stderr, tc.want(dir)) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, tc.want(dir))
			}
			if after := cliSnapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("the config directory changed")
			}
		})
	}
}

// TestRenderSecretFileMode: render --output-dir writes a Secret's file
// 0600 and the other files 0644, whatever the umask. --check compares
// bytes only: a Secret file left 0644 (a directory rendered by an older
// stowage, or checked out from git, which keeps no such bits) is not a
// change, and the next render --output-dir makes it 0600.
func TestRenderSecretFileMode(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
	dir := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := runCLI(t, exampleEnv, "render", dir, "--output-dir", out); code != 0 {
		t.Fatalf("render --output-dir: exit %d: %s", code, stderr)
	}
	modes := func() (map[string]fs.FileMode, []string) {
		ents, err := os.ReadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]fs.FileMode{}
		var secrets []string
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			got[e.Name()] = fi.Mode().Perm()
			if strings.HasPrefix(e.Name(), "secret-") {
				secrets = append(secrets, e.Name())
			}
		}
		return got, secrets
	}
	got, secrets := modes()
	if len(secrets) == 0 {
		t.Fatalf("no Secret rendered: %v", got)
	}
	configMaps := 0
	for name, m := range got {
		want := fs.FileMode(0o644)
		if strings.HasPrefix(name, "secret-") {
			want = 0o600
		}
		if strings.HasPrefix(name, "configmap-") {
			configMaps++
		}
		if m != want {
			t.Errorf("mode of %s = %v, want %v", name, m, want)
		}
	}
	if configMaps == 0 {
		t.Errorf("no ConfigMap rendered: %v", got)
	}
	for _, s := range secrets {
		if err := os.Chmod(filepath.Join(out, s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := runCLI(t, exampleEnv, "render", dir, "--output-dir", out, "--check"); code != 0 {
		t.Errorf("--check with only a Secret's mode changed: exit %d, want 0: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, exampleEnv, "render", dir, "--output-dir", out); code != 0 {
		t.Fatalf("render --output-dir again: exit %d: %s", code, stderr)
	}
	if got, _ := modes(); got[secrets[0]] != 0o600 {
		t.Errorf("mode of %s after rendering again = %v, want 0600", secrets[0], got[secrets[0]])
	}
}
