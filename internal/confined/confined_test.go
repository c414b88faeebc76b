package confined

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const canary = "CANARY-outside-8d1f3c"

// setup makes dir/cfg with a file inside, a canary file outside, and the
// links the cases need.
func setup(t *testing.T) (cfg string) {
	t.Helper()
	root := t.TempDir()
	cfg = filepath.Join(root, "cfg")
	must(t, os.MkdirAll(filepath.Join(cfg, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "secret"), []byte(canary), 0o600))
	must(t, os.WriteFile(filepath.Join(cfg, "pw"), []byte("inside\n"), 0o600))
	must(t, os.Symlink("pw", filepath.Join(cfg, "sub", "..", "link-in")))
	must(t, os.Symlink("../pw", filepath.Join(cfg, "sub", "up-in")))
	must(t, os.Symlink("../secret", filepath.Join(cfg, "link-out")))
	must(t, os.Symlink(filepath.Join(root, "secret"), filepath.Join(cfg, "abs-out")))
	must(t, os.Symlink("/proc/self/environ", filepath.Join(cfg, "environ")))
	must(t, os.Symlink("/dev/zero", filepath.Join(cfg, "zero")))
	must(t, syscall.Mkfifo(filepath.Join(cfg, "fifo"), 0o600))
	must(t, os.WriteFile(filepath.Join(cfg, "big"), bytes.Repeat([]byte("x"), int(Password.Max)+1), 0o600))
	return cfg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadFile(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "fallback"
		}
		t.Run(name, func(t *testing.T) {
			if fallback {
				old := openat2
				openat2 = func(int, string, *unix.OpenHow) (int, error) { return -1, unix.ENOSYS }
				t.Cleanup(func() { openat2 = old })
			}
			cfg := setup(t)
			for _, tc := range []struct {
				rel, want string // want: content, or a part of the error
				ok        bool
			}{
				{rel: "pw", want: "inside\n", ok: true},
				{rel: "link-in", want: "inside\n", ok: true},
				{rel: "sub/up-in", want: "inside\n", ok: true},
				{rel: "link-out", want: "leads outside the directory " + cfg},
				{rel: "abs-out", want: "leads outside the directory " + cfg},
				{rel: "../secret", want: "is outside the directory " + cfg},
				{rel: "environ", want: "leads outside"},
				{rel: "zero", want: "leads outside"},
				{rel: "fifo", want: "is not a regular file (a FIFO)"},
				{rel: "sub", want: "is not a regular file (a directory)"},
				{rel: "big", want: "is 65537 bytes, more than the 65536 bytes a password file may hold"},
				{rel: "missing", want: "does not exist"},
			} {
				done := make(chan struct{})
				var b []byte
				var err error
				go func() { b, err = ReadFile(cfg, tc.rel, Password); close(done) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: ReadFile blocked", tc.rel)
				}
				if tc.ok {
					if err != nil || string(b) != tc.want {
						t.Errorf("%s: got %q, %v; want %q", tc.rel, b, err, tc.want)
					}
					continue
				}
				if err == nil {
					t.Errorf("%s: read %d bytes, want an error", tc.rel, len(b))
					continue
				}
				var ce *Error
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want an *Error containing %q", tc.rel, err, tc.want)
				}
				if !strings.HasPrefix(err.Error(), "password file "+filepath.Join(cfg, tc.rel)+": ") {
					t.Errorf("%s: %q does not name the file first", tc.rel, err)
				}
				if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "xxxx") {
					t.Errorf("%s: error quotes content: %v", tc.rel, err)
				}
			}
			if _, err := ReadFile(cfg, "missing", Password); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing file: %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

func TestReadPath(t *testing.T) {
	cfg := setup(t)
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "is not a regular file (a character device)"},
		{"/proc/self/environ", "is a file of /proc"},
		{filepath.Join(cfg, "fifo"), "is not a regular file (a FIFO)"},
		{filepath.Join(cfg, "big"), "more than the 1048576 bytes"},
	} {
		k := CA
		if strings.HasSuffix(tc.path, "big") {
			k.Max = 1 << 20
			must(t, os.WriteFile(tc.path, bytes.Repeat([]byte("x"), int(k.Max)+1), 0o600))
		}
		_, err := ReadPath(tc.path, k)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "CA file "+tc.path+": ") {
			t.Errorf("%s: got %v, want an error naming the file and %q", tc.path, err, tc.want)
		}
	}
	b, err := ReadPath(filepath.Join(cfg, "link-out"), CA)
	if err != nil || string(b) != canary {
		t.Errorf("a flag's own path is not confined: got %q, %v", b, err)
	}
}
