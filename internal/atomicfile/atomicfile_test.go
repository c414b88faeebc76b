package atomicfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// entries lists the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// tree reads every regular file under dir, by slash-separated relative name.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// failRename makes the n-th call (1-based) of s's rename fail.
func failRename(s *steps, n int) {
	calls := 0
	s.rename = func(from, to string) error {
		calls++
		if calls == n {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("injected failure")}
		}
		return os.Rename(from, to)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		old  *string // nil: no file before
		perm fs.FileMode
	}{
		{name: "new file", perm: 0o644},
		{name: "replace file", old: new("old content\n"), perm: 0o600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "stowage.lock.yaml")
			if tc.old != nil {
				if err := os.WriteFile(path, []byte(*tc.old), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, []byte("new content\n"), tc.perm); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			if got := tree(t, dir); len(got) != 1 || got["stowage.lock.yaml"] != "new content\n" {
				t.Errorf("dir content = %q, want only the new file", got)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.perm {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tc.perm)
			}
		})
	}
}

func TestWriteFileFailureKeepsOld(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string, s *steps) string // returns the path to write
	}{
		{
			name: "rename fails",
			setup: func(t *testing.T, dir string, s *steps) string {
				failRename(s, 1)
				return filepath.Join(dir, "file")
			},
		},
		{
			name: "target is a directory",
			setup: func(t *testing.T, dir string, _ *steps) string {
				p := filepath.Join(dir, "sub")
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(p, "keep"), []byte("kept"), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			},
		},
		{
			name: "name too long",
			setup: func(t *testing.T, dir string, _ *steps) string {
				return filepath.Join(dir, strings.Repeat("x", 300))
			},
		},
		{
			name: "directory missing",
			setup: func(t *testing.T, dir string, _ *steps) string {
				return filepath.Join(dir, "missing", "file")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "file"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			s := osSteps
			path := tc.setup(t, dir, &s)
			before := tree(t, dir)
			beforeNames := entries(t, dir)
			err := writeFile(context.Background(), path, []byte("new"), 0o644, s)
			if err == nil {
				t.Fatal("WriteFile succeeded, want an error")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if got := tree(t, dir); !mapsEqual(got, before) {
				t.Errorf("content after failure = %q, want %q", got, before)
			}
			if got := entries(t, dir); !slices.Equal(got, beforeNames) {
				t.Errorf("entries after failure = %q, want %q (no temp file)", got, beforeNames)
			}
		})
	}
}

func TestWriteFileReadOnlyDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "file")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := WriteFile(path, []byte("new"), 0o644); err == nil {
		t.Fatal("WriteFile succeeded in a read-only directory")
	}
	if got := tree(t, dir); got["file"] != "old" || len(got) != 1 {
		t.Errorf("content = %q, want only the old file", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestReplaceDir(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"kustomization.yaml":     []byte("resources: []\n"),
		"base/daemonset.yaml":    []byte("kind: DaemonSet\n"),
		"base/deep/records.yaml": []byte("kind: ConfigMap\n"),
	}
	want := map[string]string{}
	for k, v := range files {
		want[k] = string(v)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, out string)
	}{
		{name: "new dir", setup: func(t *testing.T, out string) {}},
		{name: "new dir with missing parents", setup: func(t *testing.T, out string) {}},
		{name: "replace dir", setup: func(t *testing.T, out string) {
			if err := os.MkdirAll(filepath.Join(out, "stale"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"stale/old.yaml", "kustomization.yaml"} {
				if err := os.WriteFile(filepath.Join(out, f), []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			parent := root
			if strings.Contains(tc.name, "parents") {
				parent = filepath.Join(root, "a", "b")
			}
			out := filepath.Join(parent, "out")
			tc.setup(t, out)
			if err := ReplaceDir(out, files); err != nil {
				t.Fatalf("ReplaceDir: %v", err)
			}
			if got := tree(t, out); !mapsEqual(got, want) {
				t.Errorf("content = %q, want %q", got, want)
			}
			if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
				t.Errorf("parent holds %q, want only out (no temp or old dir)", got)
			}
			for _, p := range []string{out, filepath.Join(out, "base")} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
					t.Errorf("mode of %s = %v, %v; want 0755", p, fi.Mode().Perm(), err)
				}
			}
			if fi, err := os.Stat(filepath.Join(out, "kustomization.yaml")); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("mode of kustomization.yaml = %v, %v; want 0644", fi.Mode().Perm(), err)
			}
		})
	}
}

// failExchange makes every exchange of s fail with errno (ENOSYS: the
// kernel lacks it, and the two-rename fallback runs).
func failExchange(s *steps, errno error) {
	s.exchange = func(string, string) error { return errno }
}

func TestReplaceDirFailureKeepsOld(t *testing.T) {
	t.Parallel()
	good := map[string][]byte{"a.yaml": []byte("new")}
	tests := []struct {
		name  string
		files map[string][]byte
		setup func(s *steps)
		msg   string
	}{
		{name: "absolute name", files: map[string][]byte{"/etc/passwd": nil}, msg: "relative"},
		{name: "escaping name", files: map[string][]byte{"../x": nil}, msg: "relative"},
		{name: "dot element", files: map[string][]byte{"./x": nil}, msg: "relative"},
		{name: "empty name", files: map[string][]byte{"": nil}, msg: "relative"},
		{name: "file and directory", files: map[string][]byte{"base": nil, "base/x.yaml": nil}, msg: `"base" is also a file`},
		{name: "name too long, mid-way", files: map[string][]byte{"a.yaml": []byte("new"), "b/" + strings.Repeat("x", 300): nil, "c.yaml": nil}, msg: "file name too long"},
		{name: "exchange fails", files: good, setup: func(s *steps) { failExchange(s, syscall.EIO) }, msg: "input/output error"},
		{name: "no exchange, rename aside fails", files: good, setup: func(s *steps) { failExchange(s, syscall.ENOSYS); failRename(s, 1) }, msg: "injected failure"},
		{name: "no exchange, rename into place fails, old restored", files: good, setup: func(s *steps) { failExchange(s, syscall.ENOSYS); failRename(s, 2) }, msg: "injected failure"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			if err := os.MkdirAll(filepath.Join(out, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"a.yaml", "sub/b.yaml"} {
				if err := os.WriteFile(filepath.Join(out, f), []byte("old "+f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, out)
			s := osSteps
			if tc.setup != nil {
				tc.setup(&s)
			}
			err := replaceDir(context.Background(), out, tc.files, s)
			if err == nil {
				t.Fatal("ReplaceDir succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), out) {
				t.Errorf("error %q does not contain %q and %s", err, tc.msg, out)
			}
			if got := tree(t, out); !mapsEqual(got, before) {
				t.Errorf("content after failure = %q, want %q", got, before)
			}
			if got := entries(t, parent); !slices.Equal(got, []string{"out"}) {
				t.Errorf("parent holds %q, want only out (no temp dir)", got)
			}
		})
	}
}

func TestReplaceDirRefusesTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, parent string) string
		msg   string
	}{
		{name: "target is a file", msg: "not a directory", setup: func(t *testing.T, parent string) string {
			p := filepath.Join(parent, "out")
			if err := os.WriteFile(p, []byte("file"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{name: "target is a symlink", msg: "symbolic link", setup: func(t *testing.T, parent string) string {
			if err := os.Mkdir(filepath.Join(parent, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(parent, "out")
			if err := os.Symlink("real", p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		// These targets are spelled so that, cleaned, they land on the test's
		// own temporary directory: were the check broken, nothing outside it
		// would be replaced.
		{name: "current directory", msg: "below it", setup: func(t *testing.T, parent string) string { return parent + "/." }},
		{name: "parent directory", msg: "below it", setup: func(t *testing.T, parent string) string {
			if err := os.Mkdir(filepath.Join(parent, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			return parent + "/sub/.."
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			target := tc.setup(t, parent)
			before := entries(t, parent)
			err := ReplaceDir(target, map[string][]byte{"a": nil})
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("ReplaceDir(%s) error = %v, want one containing %q", target, err, tc.msg)
			}
			if got := entries(t, parent); !slices.Equal(got, before) {
				t.Errorf("parent holds %q, want %q", got, before)
			}
		})
	}
}

// TestReplaceDirModes: a file named in modes gets that mode, the others
// 0644, whatever the umask; replacing a tree of 0644 files with one whose
// secret is 0600 leaves the secret 0600 (the mode is the new file's, not
// the old one's).
func TestReplaceDirModes(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
	out := filepath.Join(t.TempDir(), "out")
	files := map[string][]byte{"secret-a.yaml": []byte("kind: Secret\n"), "configmap-a.yaml": []byte("kind: ConfigMap\n")}
	if err := ReplaceDir(out, files); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceDirModes(context.Background(), out, files, map[string]fs.FileMode{"secret-a.yaml": 0o600, "not-written.yaml": 0o600}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"secret-a.yaml": 0o600, "configmap-a.yaml": 0o644} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("mode of %s = %v, %v; want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "not-written.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a name only in modes was written: %v", err)
	}
}

// TestWriteFileMissingDir checks that a write into a directory that does
// not exist, or into a path under a regular file, names that directory and
// not the temporary file the user never chose.
func TestWriteFileMissingDir(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		notExist         bool
	}{
		{"missing", filepath.Join(root, "nodir", "x.yaml"), "directory " + filepath.Join(root, "nodir") + " does not exist", true},
		{"missing parent", filepath.Join(root, "a", "b", "x.yaml"), "directory " + filepath.Join(root, "a", "b") + " does not exist", true},
		{"under a file", filepath.Join(file, "x.yaml"), file + " is not a directory", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFile(tc.path, []byte("data"), 0o644)
			if err == nil {
				t.Fatal("WriteFile succeeded")
			}
			want := "write " + tc.path + ": " + tc.want
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %q, want it to start with %q", err, want)
			}
			if strings.Contains(err.Error(), ".tmp-") {
				t.Errorf("error %q names the temporary file", err)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tc.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tc.notExist)
			}
		})
	}
}
