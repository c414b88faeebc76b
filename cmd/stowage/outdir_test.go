package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderRefusesForeignOutputDir: -o replaces the whole directory, so a
// directory holding anything stowage did not write (a config, .git, other
// manifests) is refused and left as it was; an empty one or a previous
// render is fine.
func TestRenderRefusesForeignOutputDir(t *testing.T) {
	example := filepath.Join(repoRoot, "examples", "openpai-offline")
	cases := []struct {
		name  string
		setup func(t *testing.T, out string)
		ok    bool
	}{
		{"missing", func(t *testing.T, out string) {}, true},
		{"empty", func(t *testing.T, out string) { mkdir(t, out) }, true},
		{"previous render", func(t *testing.T, out string) {
			if _, stderr, code := runCLI(t, nil, "render", example, "-o", out); code != 0 {
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
			if _, stderr, code := runCLI(t, nil, "render", example, "-o", out); code != 0 {
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
			_, stderr, code := runCLI(t, nil, "render", example, "-o", out)
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
