// Package output decides where stowage may write, and writes there.
//
//   - CheckPaths compares every output path of a run (the rendered
//     directory, the PR body, the lock) with the config directory, the lock
//     and each other before anything is written;
//   - CheckDir says whether a directory is stowage's to replace (empty,
//     missing, or a previous render);
//   - CheckPRBody says whether a PR body file may be written: a new file,
//     or one stowage wrote (it starts with PRBodyMarker);
//   - CheckPackageCache does the same for openpai package-cache -o
//     (PackageCacheMarker), and keeps it off the config and the lock;
//   - Diff compares a rendered directory with what a render would write
//     (render --check);
//   - Set makes file and directory replacements that go together (bump's
//     lock, rendered directory and PR body) change together or not at all.
package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/render"
	kustypes "sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

// Paths are the paths of one run. Empty fields are not part of the run.
type Paths struct {
	// ConfigDir is the config directory the run reads.
	ConfigDir string
	// Lock is the lock file the run writes (lock, bump).
	Lock string
	// RenderDir is the directory the run replaces (render -o, bump --render).
	RenderDir string
	// RenderFlag names RenderDir's flag in messages ("-o", "--render").
	RenderFlag string
	// PRBody is the file bump --pr-body writes.
	PRBody string
}

// CheckPaths refuses, before anything is written, a run whose outputs
// would land on its inputs or on each other: a rendered directory that is
// the config directory or holds it (the swap would delete the config and
// the lock) or that holds the PR body; a PR body that is the lock, a
// config file (a file directly in the config directory with a config
// extension: it would be read as config next time) or inside the rendered
// directory. Paths are compared after resolving symbolic links of the part
// that exists. The PR body is then checked with CheckPRBody.
func CheckPaths(p Paths) error {
	cfg, lockPath, out, body := real(p.ConfigDir), real(p.Lock), real(p.RenderDir), real(p.PRBody)
	flag := p.RenderFlag
	if flag == "" {
		flag = "--output-dir"
	}
	if out != "" {
		switch {
		case cfg != "" && out == cfg:
			return fmt.Errorf("%s %s is the config directory; rendering there would replace the config: give a directory of its own", flag, p.RenderDir)
		case cfg != "" && within(cfg, out):
			return fmt.Errorf("%s %s holds the config directory %s; rendering there would replace the config: give a directory of its own", flag, p.RenderDir, p.ConfigDir)
		case lockPath != "" && within(lockPath, out):
			return fmt.Errorf("%s %s holds the lock %s: give a directory of its own", flag, p.RenderDir, p.Lock)
		case body != "" && within(body, out):
			return fmt.Errorf("--pr-body %s is inside %s %s, which is replaced whole: write the body elsewhere", p.PRBody, flag, p.RenderDir)
		}
	}
	if body == "" {
		return nil
	}
	switch {
	case lockPath != "" && body == lockPath:
		return fmt.Errorf("--pr-body %s is the lock file: write the body elsewhere", p.PRBody)
	case cfg != "" && filepath.Dir(body) == cfg && isConfigName(filepath.Base(body)):
		return fmt.Errorf("--pr-body %s is a config file of %s (every .cue, .yaml, .yml and .json file there is config): write the body elsewhere", p.PRBody, p.ConfigDir)
	case cfg != "" && body == cfg:
		return fmt.Errorf("--pr-body %s is the config directory: write the body elsewhere", p.PRBody)
	}
	return CheckPRBody(p.PRBody)
}

// PRBodyMarker starts every PR body file stowage writes (an HTML comment,
// invisible in a rendered pull request), so that a later run knows the
// file is its own to overwrite.
const PRBodyMarker = "<!-- written by stowage bump --pr-body; stowage overwrites this file -->\n"

// CheckPRBody refuses a PR body path that holds anything but a file stowage
// wrote: an existing file must be a regular file (not a symbolic link)
// starting with PRBodyMarker.
func CheckPRBody(path string) error {
	return checkOwned("--pr-body", path, PRBodyMarker)
}

// PackageCacheMarker starts every package_cache_info file that `stowage
// openpai package-cache -o` writes: a '#' comment, which ubuntu_build.sh
// and pkgcache.Parse skip, so that a later run knows the file is its own.
const PackageCacheMarker = "# written by stowage openpai package-cache; stowage overwrites this file\n"

// CheckPackageCache refuses, before anything is written, an `openpai
// package-cache -o` path that is the config directory, the lock, a config
// file of configDir (a .cue, .yaml, .yml or .json name directly in it), a
// directory, or an existing file that does not start with
// PackageCacheMarker (a symbolic link included). A new file is fine.
// Paths are compared after resolving symbolic links.
func CheckPackageCache(path, configDir, lockPath string) error {
	out, cfg, lk := real(path), real(configDir), real(lockPath)
	switch {
	case lk != "" && out == lk:
		return fmt.Errorf("--output-file %s is the lock file: write package_cache_info elsewhere", path)
	case cfg != "" && out == cfg:
		return fmt.Errorf("--output-file %s is the config directory: --output-file names the file, e.g. --output-file %s", path, filepath.Join(path, "package_cache_info"))
	case cfg != "" && filepath.Dir(out) == cfg && isConfigName(filepath.Base(out)):
		return fmt.Errorf("--output-file %s is a config file of %s (every .cue, .yaml, .yml and .json file there is config): write package_cache_info elsewhere", path, configDir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--output-file %s is a directory; --output-file names the file, e.g. --output-file %s", path, filepath.Join(path, "package_cache_info"))
	}
	return checkOwned("--output-file", path, PackageCacheMarker)
}

// checkOwned refuses a path (named by flag in errors) that exists and is
// not a regular file starting with marker.
func checkOwned(flag, path, marker string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s exists and is not a regular file: give a new file or one stowage wrote", flag, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, unwrapPath(err))
	}
	defer f.Close()
	head := make([]byte, len(marker))
	n, _ := io.ReadFull(f, head)
	if string(head[:n]) != marker {
		return fmt.Errorf("%s %s exists and stowage did not write it: give a new file or one stowage wrote", flag, path)
	}
	return nil
}

// CheckDir refuses an output directory that render -o (or bump --render)
// must not replace: one that holds anything stowage did not write there.
// The directory is replaced whole, so a config directory, a .git or a
// neighbour's manifests inside it would be deleted. It may be missing,
// empty, or a previous render: a kustomization.yaml starting with
// render.GeneratedHeader and regular files it lists. flag names the
// option that gave out ("--output-dir", "--render") in the message; ""
// for a caller that has none.
func CheckDir(out, flag string) error {
	foreign, err := Foreign(out)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(foreign)-5))
	}
	replaces := "it is replaced whole"
	if flag != "" {
		replaces = flag + " replaces the whole directory"
	}
	return fmt.Errorf("output directory %s holds files stowage did not write (%s); %s, so give an empty directory or one that stowage rendered",
		out, strings.Join(shown, ", "), replaces)
}

// Foreign returns the names of the entries of out that stowage did not
// write there, sorted. An entry is stowage's when out holds a
// kustomization.yaml that starts with render.GeneratedHeader and lists it
// under resources, and it is a regular file of at most maxOwnedBytes
// holding one YAML document labelled app.kubernetes.io/managed-by: stowage
// (every object render writes carries that label): a file a user added
// and listed in the generated kustomization.yaml is foreign, and so is
// everything in a directory without that kustomization.yaml. Nothing is
// foreign in a missing or empty out. Errors: out cannot be read.
func Foreign(out string) ([]string, error) {
	ents, err := os.ReadDir(out)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	listed := generatedResources(out)
	var foreign []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case !e.Type().IsRegular() || listed == nil:
			foreign = append(foreign, name)
		case name == "kustomization.yaml":
		case !listed[name] || !managedByStowage(filepath.Join(out, name)):
			foreign = append(foreign, name)
		}
	}
	return foreign, nil
}

// maxOwnedBytes bounds each file Foreign reads to decide whether stowage
// wrote it (bytes); a larger file is foreign. Rendered files are far
// smaller: the largest, a records ConfigMap of 20,000 images, is about
// 2 MiB.
const maxOwnedBytes = 64 << 20

// generatedResources returns the resources listed by out/kustomization.yaml
// when that file starts with render.GeneratedHeader and decodes as a
// Kustomization, else nil.
func generatedResources(out string) map[string]bool {
	data, ok := readBounded(filepath.Join(out, "kustomization.yaml"))
	if !ok || !bytes.HasPrefix(data, []byte(render.GeneratedHeader)) {
		return nil
	}
	var k kustypes.Kustomization
	if err := sigsyaml.UnmarshalStrict(data, &k); err != nil {
		return nil
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
	}
	return listed
}

// managedByStowage reports whether path is one YAML document whose
// metadata.labels carry app.kubernetes.io/managed-by: stowage.
func managedByStowage(path string) bool {
	data, ok := readBounded(path)
	if !ok || bytes.Contains(data, []byte("\n---")) {
		return false
	}
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := sigsyaml.Unmarshal(data, &obj); err != nil {
		return false
	}
	return obj.Metadata.Labels["app.kubernetes.io/managed-by"] == "stowage"
}

// readBounded reads path when it is a regular file (not a link) of at most
// maxOwnedBytes.
func readBounded(path string) ([]byte, bool) {
	li, err := os.Lstat(path)
	if err != nil || !li.Mode().IsRegular() {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxOwnedBytes+1))
	if err != nil || len(data) > maxOwnedBytes {
		return nil, false
	}
	return data, true
}

// FileDiff is one file that differs between a directory and what was
// rendered (v1alpha1.FileDiff, as render --check's report lists it).
type FileDiff = v1alpha1.FileDiff

// Diff is DiffFiles worded: "changed NAME", "missing NAME", "extra NAME",
// sorted by file name.
func Diff(dir string, want map[string][]byte) ([]string, error) {
	files, err := DiffFiles(dir, want)
	if err != nil {
		return nil, err
	}
	var diff []string
	for _, f := range files {
		diff = append(diff, f.String())
	}
	return diff, nil
}

// DiffFiles compares want (file name to bytes) with the regular files of
// dir and returns each difference, sorted by file name. A missing dir has
// every file missing. Errors: dir or one of its files cannot be read.
func DiffFiles(dir string, want map[string][]byte) ([]FileDiff, error) {
	have := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		have[e.Name()] = b
	}
	var diff []FileDiff
	for n, b := range want {
		h, ok := have[n]
		switch {
		case !ok:
			diff = append(diff, FileDiff{File: n, Status: "missing"})
		case !bytes.Equal(h, b):
			diff = append(diff, FileDiff{File: n, Status: "changed"})
		}
	}
	for n := range have {
		if _, ok := want[n]; !ok {
			diff = append(diff, FileDiff{File: n, Status: "extra"})
		}
	}
	slices.SortFunc(diff, func(a, b FileDiff) int { return strings.Compare(a.File, b.File) })
	return diff, nil
}

// Set is file and directory replacements that go together: Commit makes
// each one atomically, in order, and when one fails, or ctx is done, puts
// back what the earlier ones replaced, so the files change together or not
// at all. The zero value is an empty set.
type Set struct {
	steps []step
}

type step struct {
	path string
	// root and rel, for a file of FileIn: its directory, every step
	// confined to it, and its path inside (path is then their join).
	root, rel string
	file      []byte                 // a file's new content, when isDir is false
	dir       map[string][]byte      // a directory's new files (atomicfile.ReplaceDirModes)
	modes     map[string]fs.FileMode // the modes of those that are not 0644
	isDir     bool
}

// File adds the replacement of the file at path by data (mode 0644).
func (s *Set) File(path string, data []byte) {
	s.steps = append(s.steps, step{path: path, file: data})
}

// FileIn adds the replacement of the file rel, a path inside the
// directory root, by data (mode 0644), with the read of its old content,
// the write and any undo confined to root through an os.Root
// (atomicfile.WriteFileIn): a link leading out of root is refused.
func (s *Set) FileIn(root, rel string, data []byte) {
	s.steps = append(s.steps, step{path: filepath.Join(root, rel), root: root, rel: rel, file: data})
}

// Dir adds the replacement of the directory at path by files, each of
// mode 0644 unless modes gives another (render.FileModes: 0600 for a
// Secret's file).
func (s *Set) Dir(path string, files map[string][]byte, modes map[string]fs.FileMode) {
	s.steps = append(s.steps, step{path: path, dir: files, modes: modes, isDir: true})
}

// Commit makes the writes in order. On failure it undoes the ones made, in
// reverse order, and returns the failure (and any undo that failed too,
// naming what it could not put back).
func (s *Set) Commit(ctx context.Context) error {
	var undo []func() error
	for _, st := range s.steps {
		restore, err := st.snapshot()
		if err == nil {
			switch {
			case st.isDir:
				err = atomicfile.ReplaceDirModes(ctx, st.path, st.dir, st.modes)
			case st.root != "":
				err = atomicfile.WriteFileIn(ctx, st.root, st.rel, st.file, 0o644)
			default:
				err = atomicfile.WriteFileContext(ctx, st.path, st.file, 0o644)
			}
		}
		if err != nil {
			errs := []error{err}
			for i := len(undo) - 1; i >= 0; i-- {
				if uerr := undo[i](); uerr != nil {
					errs = append(errs, uerr)
				}
			}
			return errors.Join(errs...)
		}
		undo = append(undo, restore)
	}
	return nil
}

// snapshot reads what st replaces and returns the function that puts it
// back: the old file or directory, or its absence.
func (st step) snapshot() (func() error, error) {
	if st.root != "" {
		return st.snapshotIn()
	}
	if !st.isDir {
		old, err := os.ReadFile(st.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return func() error { return undoErr(st.path, os.Remove(st.path)) }, nil
		case err != nil:
			return nil, err
		}
		return func() error {
			return undoErr(st.path, atomicfile.WriteFile(st.path, old, 0o644))
		}, nil
	}
	old, oldModes := map[string][]byte{}, map[string]fs.FileMode{}
	err := filepath.WalkDir(st.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(st.path, p)
		old[filepath.ToSlash(rel)] = b
		oldModes[filepath.ToSlash(rel)] = fi.Mode().Perm()
		return err
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return func() error { return undoErr(st.path, os.RemoveAll(st.path)) }, nil
	case err != nil:
		return nil, err
	}
	return func() error {
		return undoErr(st.path, atomicfile.ReplaceDirModes(context.Background(), st.path, old, oldModes))
	}, nil
}

// snapshotIn is snapshot for a file of FileIn: its old content read, and
// put back or removed, through an os.Root on st.root.
func (st step) snapshotIn() (func() error, error) {
	old, err := confined.ReadFile(st.root, st.rel, confined.Lock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return func() error {
			root, err := os.OpenRoot(st.root)
			if err != nil {
				return undoErr(st.path, err)
			}
			defer root.Close()
			return undoErr(st.path, root.Remove(st.rel))
		}, nil
	case err != nil:
		return nil, err
	}
	return func() error {
		return undoErr(st.path, atomicfile.WriteFileIn(context.Background(), st.root, st.rel, old, 0o644))
	}, nil
}

func undoErr(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("putting %s back as it was failed: %w", path, err)
}

// real is path made absolute with the symbolic links of its longest
// existing prefix resolved; "" stays "".
func real(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for p := abs; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

func isConfigName(n string) bool {
	switch filepath.Ext(n) {
	case ".cue", ".yaml", ".yml", ".json":
		return !strings.HasPrefix(n, ".")
	}
	return false
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
