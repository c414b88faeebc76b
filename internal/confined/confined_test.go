//go:build unix

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
		{rel: "/tmp/h/base/keys/vendor-cosign.pub", want: "is outside the directory " + cfg},
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
		// A path that is not local is named as written: joined to cfg it
		// would name neither the file given nor one inside cfg.
		shown := filepath.Join(cfg, tc.rel)
		if !filepath.IsLocal(tc.rel) {
			shown = tc.rel
		}
		if !strings.HasPrefix(err.Error(), "password file "+shown+": ") {
			t.Errorf("%s: %q does not name the file first", tc.rel, err)
		}
		if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("%s: error quotes content: %v", tc.rel, err)
		}
	}
	if _, err := ReadFile(cfg, "missing", Password); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v does not wrap fs.ErrNotExist", err)
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

// TestReadFileRoot pins what the os.Root walk adds to a plain open: a
// link is followed while it stays inside the directory, whatever the
// path, and refused as soon as a step leaves it, also through a link to a
// directory or an absolute link that points back inside.
func TestReadFileRoot(t *testing.T) {
	cfg := setup(t)
	root := filepath.Dir(cfg)
	must(t, os.Symlink("..", filepath.Join(cfg, "up")))
	must(t, os.Symlink("sub", filepath.Join(cfg, "subdir")))
	must(t, os.Symlink(filepath.Join(cfg, "pw"), filepath.Join(cfg, "abs-in")))
	must(t, os.Symlink("loop-b", filepath.Join(cfg, "loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(cfg, "loop-b")))
	must(t, os.Symlink("dangling-target", filepath.Join(cfg, "dangling")))
	for _, tc := range []struct{ rel, want string }{
		{"sub/../pw", "inside\n"},
		{"subdir/../pw", "inside\n"},
		{"subdir/up-in", "inside\n"},
		{"up/secret", "leads outside the directory " + cfg},
		{"up/cfg/pw", "leads outside the directory " + cfg},
		{"abs-in", "leads outside the directory " + cfg},
		{"loop-a", "cannot be followed here"},
		{"dangling", "does not exist"},
		{"pw/x", "not a directory"},
	} {
		b, err := ReadFile(cfg, tc.rel, Password)
		got := string(b)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q in it", tc.rel, got, tc.want)
		}
		if strings.Contains(got, canary) {
			t.Errorf("%s: read the file outside: %q", tc.rel, got)
		}
	}
	// The directory itself may be reached through links and be named
	// relative to the working directory.
	t.Chdir(root)
	if b, err := ReadFile("cfg", "pw", Password); err != nil || string(b) != "inside\n" {
		t.Errorf("relative dir: got %q, %v", b, err)
	}
	must(t, os.Symlink("cfg", filepath.Join(root, "cfg-link")))
	if b, err := ReadFile("cfg-link", "subdir/up-in", Password); err != nil || string(b) != "inside\n" {
		t.Errorf("dir through a link: got %q, %v", b, err)
	}
	if _, err := ReadFile("", "secret", Password); err != nil {
		t.Errorf("empty dir is the current directory: %v", err)
	}
	if _, err := ReadFile("missing-dir", "pw", Password); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "password file missing-dir/pw: does not exist") {
		t.Errorf("missing dir: %v", err)
	}
}

// TestCheckFileRoot: CheckFile refuses exactly what ReadFile refuses and
// returns the size of what it accepts.
func TestCheckFileRoot(t *testing.T) {
	cfg := setup(t)
	if n, err := CheckFile(cfg, "link-in", Password); err != nil || n != int64(len("inside\n")) {
		t.Errorf("link-in: %d, %v", n, err)
	}
	for rel, want := range map[string]string{
		"link-out": "leads outside",
		"fifo":     "is not a regular file (a FIFO)",
		"big":      "is 65537 bytes",
		"../pw":    "is outside",
	} {
		if _, err := CheckFile(cfg, rel, Password); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", rel, err, want)
		}
	}
}

// TestReadInRoot: inside an os.Root held open (an OCI layout), a file is
// read under ReadFile's rules, and a file that is itself a symbolic link
// is refused even when it stays inside; a link among the parent
// directories is followed inside the root only.
func TestReadInRoot(t *testing.T) {
	cfg := setup(t)
	must(t, os.Symlink("sub", filepath.Join(cfg, "sublink")))
	must(t, os.WriteFile(filepath.Join(cfg, "sub", "f"), []byte("in sub"), 0o600))
	root, err := os.OpenRoot(cfg)
	must(t, err)
	t.Cleanup(func() { root.Close() })
	for _, tc := range []struct {
		rel, want string
		ok        bool
	}{
		{rel: "pw", want: "inside\n", ok: true},
		{rel: "sublink/f", want: "in sub", ok: true},
		{rel: "link-in", want: "is a symbolic link; a password file is never read through a link"},
		{rel: "link-out", want: "is a symbolic link"},
		{rel: "zero", want: "is a symbolic link"},
		{rel: "environ", want: "is a symbolic link"},
		{rel: "fifo", want: "is not a regular file (a FIFO)"},
		{rel: "sub", want: "is not a regular file (a directory)"},
		{rel: "big", want: "more than the 65536 bytes a password file may hold"},
		{rel: "../secret", want: "password file " + filepath.Join(cfg, "../secret") + ": "},
		{rel: "absent", want: "does not exist"},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { b, err = ReadInRoot(root, cfg, tc.rel, Password); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("blocked")
			}
			if tc.ok {
				if err != nil || string(b) != tc.want {
					t.Fatalf("= %q, %v; want %q", b, err, tc.want)
				}
				return
			}
			var ce *Error
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), canary) {
				t.Fatalf("err = %v, want an *Error with %q", err, tc.want)
			}
			if tc.rel == "absent" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("err = %v, want fs.ErrNotExist", err)
			}
		})
	}
}
