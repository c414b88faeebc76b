// Package confined reads the files a config or a flag names — password
// files, the lock, config files, the CA file, a kustomization's files —
// without following a path out of their directory, without blocking on a
// FIFO or a device, and with a size bound per kind of file.
//
// Inside a directory ([ReadFile], [CheckFile]) the file is opened through
// an [os.Root] on the directory (Go 1.24 and later, on every platform): a
// path or a symbolic link that leads outside the directory, and any
// absolute symbolic link, is refused, and on Linux, macOS and the BSDs
// each step of the path is opened relative to the directory's open
// descriptor, so a link swapped in during the walk cannot lead out either.
// os.Root does not refuse device files or /proc files, so this package
// adds three rules of its own on top: the file must be a regular file,
// must not live on Linux's procfs (checked with fstatfs on the open file,
// Linux only: no other platform has a procfs), and may hold at most its
// kind's bound.
//
// On Unix every file is opened with O_NONBLOCK and O_NOCTTY, so a FIFO
// never blocks the open and a terminal never becomes the controlling one;
// it is then checked with fstat to be a regular file and read up to its
// kind's bound plus one byte. Windows has no FIFOs of that kind, and a
// device name (NUL, COM1) is refused by os.Root itself. Errors are *Error
// values: the path, the kind and the reason in words; never a byte of the
// content.
package confined

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Kind is what a file is for: its name in messages and the most bytes it
// may hold.
type Kind struct {
	// What names the kind in messages: "password file", "lock file".
	What string
	// Max is the size bound in bytes; a larger file is refused.
	Max int64
}

// The kinds stowage reads, with their bounds. The bounds are far above any
// real file of the kind and far below what would exhaust memory.
var (
	// Password is a `file:` password source: 64 KiB (a registry token is
	// a few KiB at most).
	Password = Kind{What: "password file", Max: 64 << 10}
	// Lock is stowage.lock.yaml: 32 MiB (an entry is about 300 bytes, so
	// about 100,000 images).
	Lock = Kind{What: "lock file", Max: 32 << 20}
	// Config is one config file (.cue, .yaml, .yml, .json): 16 MiB. The
	// whole config has its own bound in schema.
	Config = Kind{What: "config file", Max: 16 << 20}
	// CA is a --ca-file of PEM certificates: 1 MiB.
	CA = Kind{What: "CA file", Max: 1 << 20}
)

// outside is the error for rel, which is not local: an absolute path or
// one leading up out of dir, named as written, since joined to dir it
// would name neither the file given nor one inside dir.
func outside(dir, rel string, k Kind) error {
	return &Error{Path: rel, Kind: k.What, Reason: "is outside " + dirName(dir) + "; give a path inside it"}
}

// Error is a file that was refused or could not be read.
type Error struct {
	// Path is the file as named: joined to its directory, or as written
	// when it is not local (absolute, or leading out of the directory).
	Path string
	// Kind names what the file is for.
	Kind string
	// Reason says why, in words; it never quotes the file.
	Reason string
	// Err is the underlying error, when there is one (fs.ErrNotExist for
	// a missing file).
	Err error
}

// Error is "<kind> <path>: <reason>".
func (e *Error) Error() string { return fmt.Sprintf("%s %s: %s", e.Kind, e.Path, e.Reason) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ReadFile reads rel, a path relative to dir, refusing it unless it stays
// inside dir (after every symbolic link) and is a regular file of at most
// k.Max bytes. rel must be local (filepath.IsLocal). A missing file gives
// an *Error wrapping fs.ErrNotExist.
func ReadFile(dir, rel string, k Kind) ([]byte, error) {
	shown := filepath.Join(dir, rel)
	fail := func(reason string, err error) error {
		return &Error{Path: shown, Kind: k.What, Reason: reason, Err: err}
	}
	if !filepath.IsLocal(rel) {
		return nil, outside(dir, rel, k)
	}
	f, err := openBeneath(dir, rel)
	if err != nil {
		return nil, fail(openReason(err, dir), err)
	}
	defer f.Close()
	return read(f, shown, k)
}

// CheckFile refuses rel relative to dir exactly as ReadFile does (outside
// dir, not a regular file, a file of /proc, more than k.Max bytes), but
// only opens and stats it: its content is never read. It returns the
// file's size in bytes.
func CheckFile(dir, rel string, k Kind) (int64, error) {
	shown := filepath.Join(dir, rel)
	fail := func(reason string, err error) error {
		return &Error{Path: shown, Kind: k.What, Reason: reason, Err: err}
	}
	if !filepath.IsLocal(rel) {
		return 0, outside(dir, rel, k)
	}
	f, err := openBeneath(dir, rel)
	if err != nil {
		return 0, fail(openReason(err, dir), err)
	}
	defer f.Close()
	fi, err := check(f, shown, k)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// ReadPath reads path, a file named directly by the user (a flag), refusing
// it unless it is a regular file of at most k.Max bytes. It does not confine
// path to a directory.
func ReadPath(path string, k Kind) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, &Error{Path: path, Kind: k.What, Reason: openReason(err, ""), Err: err}
	}
	defer f.Close()
	return read(f, path, k)
}

// OpenInRoot opens rel inside root, an os.Root the caller keeps open on a
// directory it reads many files of (an OCI layout), under ReadFile's rules
// (nothing outside root, a regular file outside procfs, at most k.Max
// bytes; a FIFO never blocks the open) and one more: rel itself may not be
// a symbolic link. A link among rel's parent directories is followed only
// inside root, as os.Root does; a caller that refuses those checks them
// itself. It returns the open file, which the caller closes, and its size.
// shown is root's directory as messages name it; a missing file gives an
// *Error wrapping fs.ErrNotExist.
func OpenInRoot(root *os.Root, shown, rel string, k Kind) (*os.File, int64, error) {
	p := filepath.Join(shown, rel)
	fail := func(reason string, err error) (*os.File, int64, error) {
		return nil, 0, &Error{Path: p, Kind: k.What, Reason: reason, Err: err}
	}
	fi, err := root.Lstat(rel)
	switch {
	case err != nil:
		return fail(openReason(err, shown), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fail("is a symbolic link; a "+k.What+" is never read through a link", nil)
	case !fi.Mode().IsRegular():
		return fail("is not a regular file ("+TypeName(fi.Mode())+")", nil)
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return fail(openReason(err, shown), err)
	}
	st, err := check(f, p, k)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// ReadInRoot reads what OpenInRoot opens, at most k.Max bytes.
func ReadInRoot(root *os.Root, shown, rel string, k Kind) ([]byte, error) {
	f, _, err := OpenInRoot(root, shown, rel, k)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readChecked(f, filepath.Join(shown, rel), k)
}

// dirName names dir in messages.
func dirName(dir string) string {
	if dir == "" || dir == "." {
		return "the current directory"
	}
	return "the directory " + dir
}

// openBeneath opens rel inside dir through an os.Root, so that no step
// of rel (a "..", a symbolic link, an absolute link) leads out of dir. An
// escape is reported as ErrOutside.
func openBeneath(dir, rel string) (*os.File, error) {
	if dir == "" {
		dir = "."
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err == nil {
		return f, nil
	}
	if errors.Is(err, escapes(root)) {
		return nil, ErrOutside
	}
	return nil, err
}

// ErrOutside is wrapped by the *Error of a path that leads outside its
// directory (through ".." or a symbolic link).
var ErrOutside = errors.New("leads outside the directory")

// escapes returns the error os.Root gives for a path that leaves it
// (os does not export it): the one it gives, without any I/O, for a path
// starting with a separator.
func escapes(root *os.Root) error {
	_, err := root.Open(string(filepath.Separator))
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openReason words an open failure; dir is "" for a file named by a flag.
func openReason(err error, dir string) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, ErrOutside):
		return "leads outside " + dirName(dir) + " (through a symbolic link or \"..\"); stowage reads only files inside it"
	case errors.Is(err, syscall.ELOOP):
		return "is a symbolic link that cannot be followed here (more than 8 links in a row, or a loop)"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENXIO):
		return "is not a regular file (a FIFO or socket)"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// read checks f is a regular file outside procfs and reads at most k.Max
// bytes of it.
func read(f *os.File, shown string, k Kind) ([]byte, error) {
	if _, err := check(f, shown, k); err != nil {
		return nil, err
	}
	return readChecked(f, shown, k)
}

// ReadStream reads r, a stream the user named with "-" (standard input),
// shown in errors as shown: at most k.Max bytes; a longer stream is
// refused with an *Error.
func ReadStream(r io.Reader, shown string, k Kind) ([]byte, error) {
	return readChecked(r, shown, k)
}

// readChecked reads at most k.Max bytes of f, a file check accepted or a
// stream: a file growing past the bound meanwhile is refused.
func readChecked(f io.Reader, shown string, k Kind) ([]byte, error) {
	fail := func(reason string) error { return &Error{Path: shown, Kind: k.What, Reason: reason} }
	b, err := io.ReadAll(io.LimitReader(f, k.Max+1))
	if err != nil {
		return nil, fail(openReason(err, ""))
	}
	if int64(len(b)) > k.Max {
		return nil, fail(fmt.Sprintf("is more than the %d bytes a %s may hold", k.Max, k.What))
	}
	return b, nil
}

// check refuses f unless it is a regular file outside procfs of at most
// k.Max bytes, and returns its FileInfo.
func check(f *os.File, shown string, k Kind) (fs.FileInfo, error) {
	fail := func(reason string) error { return &Error{Path: shown, Kind: k.What, Reason: reason} }
	fi, err := f.Stat()
	if err != nil {
		return nil, fail(openReason(err, ""))
	}
	if !fi.Mode().IsRegular() {
		return nil, fail(fmt.Sprintf("is not a regular file (%s)", TypeName(fi.Mode())))
	}
	if onProcfs(f) {
		return nil, fail("is a file of /proc; stowage reads only regular files")
	}
	if fi.Size() > k.Max {
		return nil, fail(fmt.Sprintf("is %d bytes, more than the %d bytes a %s may hold", fi.Size(), k.Max, k.What))
	}
	return fi, nil
}

// TypeName names the type of a file that is not a regular file, for
// messages: "a directory", "a FIFO", "a socket", "a character device",
// "a block device", "a symbolic link" (or "not regular").
func TypeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not regular"
}
