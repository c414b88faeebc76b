// Package atomicfile replaces files and directories so that a reader, or a
// crash, sees either the old content or the new, never a mix.
//
// Both functions stage the new content beside the target (same directory, so
// the final rename stays on one file system) under a hidden name starting
// with "." and the target's base name, and remove what they staged on error.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// steps are the file system operations a write or a replacement takes
// that tests replace, per call, to fail a chosen step or to stop inside
// the swap; production uses osSteps.
type steps struct {
	// rename is os.Rename.
	rename func(from, to string) error
	// exchange swaps two paths atomically (swapDirs: renameat2 on Linux,
	// renamex_np on macOS, none elsewhere).
	exchange func(a, b string) error
	// afterSwap runs once the new tree is in place and before the old one
	// is removed.
	afterSwap func(old string)
}

// dirError is err from creating a file in dir, said of dir itself when dir
// is missing or is not a directory: the temporary file's name is one the
// user never chose (fs.ErrNotExist and syscall.ENOTDIR stay in the chain).
func dirError(dir string, err error) error {
	dir = filepath.Clean(dir)
	fi, serr := os.Stat(dir)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: %w", dir, fs.ErrNotExist)
	case serr == nil && !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return err
}

// osSteps are the steps of WriteFile and ReplaceDir.
var osSteps = steps{rename: os.Rename, exchange: swapDirs, afterSwap: func(string) {}}

// WriteFile writes data to path with mode perm (applied as given, without the
// umask). The bytes go to a temporary file in the same directory, which is
// synced and then renamed over path, and the directory is synced. On any
// error path keeps its old content (or stays absent) and no temporary file
// remains. The directory of path must exist.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return WriteFileContext(context.Background(), path, data, perm)
}

// WriteFileContext is WriteFile that gives up when ctx is done before the
// rename: path keeps its old content, the temporary file is removed, and
// the error wraps ctx.Err(). (A signal handler cancels ctx, so an
// interrupted stowage leaves nothing behind.)
func WriteFileContext(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	return writeFile(ctx, path, data, perm, osSteps)
}

// writeFile is WriteFileContext with the rename of s.
func writeFile(ctx context.Context, path string, data []byte, perm fs.FileMode, s steps) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeLeftovers(dir, "."+base+".tmp-")
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, dirError(dir, err))
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// ReplaceDir makes files the complete content of dir: each key is a
// slash-separated path relative to dir ("kustomization.yaml",
// "base/ds.yaml"; subdirectories are created), each value the file's bytes.
// Files get mode 0644 (ReplaceDirModes gives some another), directories
// 0755, each applied as given, without the umask. Anything else in the old dir is
// gone afterwards. Missing parents of dir are created.
//
// The new tree is built and synced in a temporary directory beside dir,
// inside a wrapper ".<base>.new-<random>" of mode 0700, so that nobody else
// can read the Secrets it holds. It is then swapped with dir in one step,
// so a reader of dir sees the old tree or the new one, never none; the old
// tree, now inside the wrapper, is removed with it. The one step is
// renameat2(2) with RENAME_EXCHANGE on Linux (3.15 and later) and
// renamex_np(2) with RENAME_SWAP on macOS.
//
// What the other platforms, and a file system without the exchange (on
// Linux: EINVAL, ENOSYS or EOPNOTSUPP; on macOS: ENOTSUP), give up: the
// old tree is renamed into the wrapper and the new one into place, two
// renames with a moment in between where dir is missing (a reader then
// finds no file, never a mix of the two trees; a crash in that moment
// leaves the old tree in the wrapper, and the next ReplaceDir removes it
// without restoring it). On Windows the wrapper's mode 0700 is not a
// permission: the wrapper inherits its parent's access control list, so
// the staged Secrets are as readable as the parent directory's files, and
// a rename fails while another process holds a file of dir open.
// Wrappers a killed run left beside dir are removed at the start of the
// next ReplaceDir of dir.
//
// On error the old dir is left as it was (or absent, if it was) and no
// temporary directory remains; the one exception is a failure to remove the
// old copy after the swap, reported with the copy's path. Refused before
// anything is written: a dir that is a symbolic link or whose last element is
// ".", ".." or the root, and a name in files that is absolute, escapes dir
// ("..") or is both a file and a directory.
func ReplaceDir(dir string, files map[string][]byte) error {
	return ReplaceDirContext(context.Background(), dir, files)
}

// ReplaceDirContext is ReplaceDir that gives up when ctx is done before the
// new tree is swapped in: it checks ctx before each file it stages and
// before the swap, removes what it staged, leaves dir as it was and returns
// an error wrapping ctx.Err(). Once the swap has begun it runs to the end,
// so dir holds either the old tree or the new one.
func ReplaceDirContext(ctx context.Context, dir string, files map[string][]byte) error {
	return replaceDir(ctx, dir, files, osSteps)
}

// ReplaceDirModes is ReplaceDirContext with the mode of each file named in
// modes (its permission bits, applied as given, without the umask) instead
// of 0644: 0600 for a file that holds a password, such as a rendered
// Secret, so that it is readable by its owner alone once in place, as it
// was while staged. A name in modes that files lacks is ignored.
func ReplaceDirModes(ctx context.Context, dir string, files map[string][]byte, modes map[string]fs.FileMode) error {
	return replaceDirModes(ctx, dir, files, modes, osSteps)
}

// replaceDir is ReplaceDirContext with the steps of s.
func replaceDir(ctx context.Context, dir string, files map[string][]byte, s steps) error {
	return replaceDirModes(ctx, dir, files, nil, s)
}

// replaceDirModes is ReplaceDirModes with the steps of s.
func replaceDirModes(ctx context.Context, dir string, files map[string][]byte, modes map[string]fs.FileMode, s steps) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("replace directory %s: %w", dir, err)
		}
	}()
	names, err := checkNames(files)
	if err != nil {
		return err
	}
	// Judge the name as given: cleaning "out/x/.." would turn it into "out".
	if b := filepath.Base(dir); b == "." || b == ".." || b == string(filepath.Separator) {
		return errors.New("name a directory below it, not the current, parent or root directory")
	}
	dir = filepath.Clean(dir)
	existed := false
	switch fi, err := os.Lstat(dir); {
	case err == nil && fi.IsDir():
		existed = true
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("is a symbolic link; pass the directory it points to")
	case err == nil:
		return errors.New("exists and is not a directory")
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeLeftovers(parent, "."+base+".new-", "."+base+".old-")

	// The staging wrapper is 0700 (MkdirTemp's mode) and stays so: the
	// new tree is built in it, and the old tree lands in it after the
	// swap, so neither is ever readable by others outside dir, whenever
	// the process dies.
	wrap, err := os.MkdirTemp(parent, "."+base+".new-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(wrap)
		}
	}()
	tmp := filepath.Join(wrap, "tree")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		perm := fs.FileMode(0o644)
		if m, ok := modes[name]; ok {
			perm = m.Perm()
		}
		if err := writeSynced(p, files[name], perm); err != nil {
			return err
		}
	}
	syncDirs(tmp, names)
	if err := ctx.Err(); err != nil {
		return err
	}

	if !existed {
		if err := s.rename(tmp, dir); err != nil {
			return err
		}
		syncDir(parent)
		os.RemoveAll(wrap)
		return nil
	}
	old := tmp
	switch xerr := s.exchange(tmp, dir); {
	case xerr == nil:
	case noExchange(xerr):
		// No atomic exchange here: two renames, through the wrapper.
		old = filepath.Join(wrap, "old")
		if err := s.rename(dir, old); err != nil {
			return err
		}
		if err := s.rename(tmp, dir); err != nil {
			if rerr := s.rename(old, dir); rerr != nil {
				return fmt.Errorf("%w; restoring the old content also failed, it is at %s: %v", err, old, rerr)
			}
			return err
		}
	default:
		return xerr
	}
	syncDir(parent)
	s.afterSwap(old)
	if err := os.RemoveAll(wrap); err != nil {
		return fmt.Errorf("new content in place, but the old copy at %s could not be removed: %w", old, err)
	}
	return nil
}

// removeLeftovers removes what earlier runs killed mid-write left in
// parent: the entries (temporary trees or files) whose names start with one
// of prefixes. Best effort: one that cannot be removed stays for the next
// run.
func removeLeftovers(parent string, prefixes ...string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
}

// checkNames validates the keys of files and returns them sorted.
func checkNames(files map[string][]byte) ([]string, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	isFile := map[string]bool{}
	for _, name := range names {
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("file name %q: want a relative slash-separated path inside the directory, without \".\" or \"..\" elements", name)
		}
		isFile[name] = true
	}
	for _, name := range names {
		for d := pathDir(name); d != ""; d = pathDir(d) {
			if isFile[d] {
				return nil, fmt.Errorf("file name %q: %q is also a file", name, d)
			}
		}
	}
	return names, nil
}

// pathDir is the parent of a slash-separated path, "" at the top.
func pathDir(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// writeSynced creates path with mode perm (without the umask), writes
// data and syncs it.
func writeSynced(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDirs syncs root and every directory under it that holds a name.
func syncDirs(root string, names []string) {
	seen := map[string]bool{"": true}
	for _, name := range names {
		for d := pathDir(name); !seen[d]; d = pathDir(d) {
			seen[d] = true
			syncDir(filepath.Join(root, filepath.FromSlash(d)))
		}
	}
	syncDir(root)
}

// syncDir makes a rename or create in dir durable. It is best effort: some
// file systems refuse to sync a directory, and the data itself is already
// synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
