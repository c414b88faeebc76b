// Package kustomization reads a kustomization that declares stowage as a
// KRM function transformer, for the commands that take one instead of a
// config directory (lock, bump, vet, mirror): the functionConfig, the items
// kustomize hands the function, and the file the function reads the lock
// from.
//
// The items come from kustomize's own build (sigs.k8s.io/kustomize/api
// krusty) of the kustomization with its transformers cut before stowage's,
// so every field that runs before the function (resources, components,
// generators, images, patches, namespace, earlier transformers) gives
// exactly what the function will see. The build reads an in-memory copy of
// the files beneath a root directory, never the disk: no read escapes the
// root, and no resource is fetched from a network (a kustomization that
// names a remote resource is refused before the build).
package kustomization

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/strictyaml"
)

// Bounds of the copy of the root directory the build reads.
const (
	// MaxFiles is the most files copied (directories named .git are
	// skipped).
	MaxFiles = 10000
	// MaxEntries is the most directory entries walked (files,
	// directories and links), so that a tree of empty directories is
	// bounded as well.
	MaxEntries = 100000
	// MaxBytes is the most bytes copied in all.
	MaxBytes = 64 << 20
)

// input is one file copied for the build: at most MaxBytes, the bound of
// all files together, so that a single large resource file the function
// accepts (its --max-input-bytes raised) is read by lock and vet too.
var input = confined.Kind{What: "kustomization input", Max: MaxBytes}

// ErrNoFunction is returned (wrapped) when the kustomization declares no
// stowage transformer.
var ErrNoFunction = errors.New("declares no stowage KRM function in its transformers")

// Build is what a kustomization gives stowage.
type Build struct {
	// Dir is the kustomization's directory, as given.
	Dir string
	// File is the kustomization file (Dir joined with its name).
	File string
	// FunctionConfig is the stowage functionConfig, annotated with the
	// file it was read from (kioutil.PathAnnotation, relative to Dir).
	FunctionConfig *yaml.RNode
	// FunctionFile is that file, joined to Dir.
	FunctionFile string
	// Items are the resources kustomize passes to the function, in build
	// order, with kustomize's bookkeeping annotations removed.
	Items []*yaml.RNode
	// LockFile is the file the function reads the lock from: the file of
	// the ImageLock item, joined to Dir; "" when the resources list none.
	LockFile string
	// LockListed is the lock entry of the kustomization's resources that
	// names a file not written yet (LockFile then names it); "" otherwise.
	LockListed string
	// Root is the root the build read beneath (absolute, links
	// resolved), and LockRel the lock file relative to it ("" when the
	// resources list none): a lock is read and written only through an
	// os.Root on Root (confined.ReadFile, atomicfile.WriteFileIn), so
	// that no link leads its read or write out of the root.
	Root, LockRel string
}

// Find returns the kustomization file in dir (konfig's recognised names,
// a regular file or a link to one) or "" when there is none.
func Find(dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			return n
		}
	}
	return ""
}

// Load builds the kustomization in dir up to its stowage transformer (the
// transformers entry holding an object isFunction accepts). Reads stay
// beneath root ("" is dir), which must contain dir.
//
// Errors name the file and the problem: no kustomization file, no stowage
// transformer (wrapping ErrNoFunction), two of them, a file or symbolic
// link that leaves root, a remote resource, a kustomize build error, more
// than MaxFiles files or MaxBytes bytes beneath root.
func Load(dir, root string, isFunction func(*yaml.RNode) bool) (*Build, error) {
	return load(dir, root, isFunction, MaxEntries)
}

// ErrDeadline is returned (wrapped) by LoadContext when its context ends
// before the build does.
var ErrDeadline = errors.New("kustomize's build did not end in time")

// LoadContext is Load stopped when ctx ends: it then returns an error
// wrapping ErrDeadline and ctx's error, within milliseconds. kustomize's
// build cannot be cancelled, so it is abandoned and runs on until it ends
// or the process exits; LoadContext is for a command that exits after it.
func LoadContext(ctx context.Context, dir, root string, isFunction func(*yaml.RNode) bool) (*Build, error) {
	type result struct {
		b   *Build
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := load(dir, root, isFunction, MaxEntries)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("kustomization %s: %w (%w)", dir, ErrDeadline, context.Cause(ctx))
	}
}

// load is Load. A panic inside kustomize or kyaml (kustomize panics on
// some inputs, such as list-form metadata.annotations) is returned as an
// error naming the kustomization, since LoadContext runs load where no
// caller can recover it. maxEntries bounds the entries walked beneath
// root (MaxEntries; tests lower it).
func load(dir, root string, isFunction func(*yaml.RNode) bool, maxEntries int) (b *Build, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("kustomization %s: kustomize failed on it (%v); check its files' syntax (metadata.annotations and labels are mappings)", dir, r)
		}
	}()
	l, err := open(dir, root, maxEntries, isFunction)
	if err != nil {
		return nil, err
	}
	at, err := l.findFunction(isFunction)
	if err != nil {
		return nil, err
	}
	if err := l.standInLock(); err != nil {
		return nil, err
	}
	// kustomize drops local-config resources at the end of a build, after
	// the function saw them: keep the ImageLock objects in this build.
	if err := keepLocks(l.c.mem); err != nil {
		return nil, l.c.explain(err)
	}
	rm, err := l.buildUpTo(at)
	if err != nil {
		return nil, err
	}
	if err := l.collect(rm); err != nil {
		return nil, err
	}
	// The build read only the copy, so the lock file is beneath the root.
	return l.b, nil
}

// loading is one Load in progress: the kustomization's directory as given
// (dir) and as a slash path in the copy (top), its file's name, the copy
// of the files beneath the root, the parsed kustomization, and the Build
// being filled in.
type loading struct {
	dir  string
	top  string
	name string
	c    *copied
	k    types.Kustomization
	b    *Build
}

// open checks that dir (a kustomization directory) is beneath root ("" is
// dir), copies the files beneath root into memory (copyTree), refuses a
// remote or unreachable resource and anything the build would run besides
// kustomize's builtins and the stowage function (checkReachable), and parses the
// kustomization file. It returns the load with Build.Dir and Build.File
// set. Errors: dir not beneath root, no kustomization file, the copy's
// limits, a file kustomize cannot parse (naming it).
func open(dir, root string, maxEntries int, isFunction func(*yaml.RNode) bool) (*loading, error) {
	if root == "" {
		root = dir
	}
	absDir, err := resolved(dir)
	if err != nil {
		return nil, err
	}
	absRoot, err := resolved(root)
	if err != nil {
		return nil, err
	}
	if !beneath(absRoot, absDir) {
		return nil, fmt.Errorf("kustomization %s is not beneath the root %s (--root)", dir, root)
	}
	name := Find(dir)
	if name == "" {
		return nil, fmt.Errorf("%s holds no kustomization file (%s)", dir, strings.Join(konfig.RecognizedKustomizationFileNames(), ", "))
	}
	l := &loading{dir: dir, name: name, b: &Build{Dir: dir, File: filepath.Join(dir, name)}}

	// The copy keeps the files at their absolute paths, so that a path
	// with ".." past the root names a file the copy lacks instead of
	// being clamped back into it.
	if l.c, err = copyTree(absRoot, maxEntries); err != nil {
		return nil, err
	}
	l.top = filepath.ToSlash(absDir)
	l.b.Root = absRoot
	if err := l.c.checkReachable(l.top, root, isFunction); err != nil {
		return nil, err
	}

	data, err := l.c.mem.ReadFile(path.Join(l.top, name))
	if err != nil {
		return nil, l.c.explain(err)
	}
	if l.k, err = parseKustomization(data, l.b.File); err != nil {
		return nil, err
	}
	return l, nil
}

// findFunction finds the stowage transformer: the one object of one
// transformers entry that isFunction accepts. It sets Build.FunctionConfig
// (annotated with its file's path when it has one) and Build.FunctionFile,
// and returns the entry's index. Errors: two entries declaring the
// function, an entry holding other objects besides it, none at all
// (wrapping ErrNoFunction, naming an entry that is a directory).
func (l *loading) findFunction(isFunction func(*yaml.RNode) bool) (int, error) {
	b, mem := l.b, l.c.mem
	at := -1
	for i, t := range l.k.Transformers {
		objs, file, err := transformerObjects(mem, l.top, t)
		if err != nil {
			return 0, fmt.Errorf("%s: transformers[%d]: %w", b.File, i, l.c.explain(err))
		}
		for _, o := range objs {
			if !isFunction(o) {
				continue
			}
			if at >= 0 {
				return 0, fmt.Errorf("%s: transformers[%d] and transformers[%d] both declare a stowage KRM function; keep one", b.File, at, i)
			}
			if len(objs) > 1 {
				return 0, fmt.Errorf("%s: transformers[%d] holds %d objects besides the stowage functionConfig; give the functionConfig a file of its own", b.File, i, len(objs)-1)
			}
			at = i
			b.FunctionConfig = o
			if file != "" {
				b.FunctionFile = filepath.Join(l.dir, filepath.FromSlash(file))
				_ = o.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, file))
			} else {
				b.FunctionFile = b.File
			}
		}
	}
	if at < 0 {
		for i, t := range l.k.Transformers {
			if !strings.Contains(t, "\n") && mem.IsDir(path.Join(l.top, filepath.ToSlash(t))) {
				return 0, fmt.Errorf("%s %w: transformers[%d] %q is a directory, and stowage reads its functionConfig from a file (or inline YAML) listed in transformers:", b.File, ErrNoFunction, i, t)
			}
		}
		return 0, fmt.Errorf("%s %w (a Stowage or JupyterImagePuller object with a config.kubernetes.io/function annotation, in a file listed in transformers:)", b.File, ErrNoFunction)
	}
	return at, nil
}

// standInLock writes an empty ImageLock into the copy in place of a lock
// listed in resources but not written yet, so that the build succeeds and
// names where it goes; it sets Build.LockListed to that resources entry.
// Errors: the in-memory write's.
func (l *loading) standInLock() error {
	mem := l.c.mem
	for _, r := range l.k.Resources {
		p := path.Join(l.top, filepath.ToSlash(r))
		if path.Base(r) == lock.FileName && !mem.Exists(p) && filepath.IsLocal(filepath.FromSlash(r)) {
			if err := mem.WriteFile(p, (&lock.Lock{}).Marshal()); err != nil {
				return err
			}
			l.b.LockListed = r
		}
	}
	return nil
}

// buildUpTo rewrites the copy's kustomization file to keep only the
// transformers before index at (no validators) and to ask for origin
// annotations (to find the lock's file), then runs kustomize's build on
// the copy. It returns the built resources; errors name the kustomization.
func (l *loading) buildUpTo(at int) (resmap.ResMap, error) {
	k := l.k
	k.Transformers = k.Transformers[:at]
	k.Validators = nil
	if !slices.Contains(k.BuildMetadata, types.OriginAnnotations) {
		k.BuildMetadata = append(slices.Clip(k.BuildMetadata), types.OriginAnnotations)
	}
	out, err := sigsyaml.Marshal(&k)
	if err != nil {
		return nil, err
	}
	if err := l.c.mem.WriteFile(path.Join(l.top, l.name), out); err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(l.c.mem, l.top)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s up to the stowage transformer: %w", l.dir, l.c.explain(err))
	}
	return rm, nil
}

// collect appends the built resources to Build.Items, each with its
// origin annotation replaced by the path and index annotations of the
// file it came from (when it came from one), and the ImageLock marked
// local-config again with Build.LockFile set to its file. Errors: an
// origin kustomize cannot give, two ImageLock objects, an ImageLock not
// from a file of its own.
func (l *loading) collect(rm resmap.ResMap) error {
	b, dir := l.b, l.dir
	index := newFileIndex(l.c.mem)
	for _, res := range rm.Resources() {
		o, err := res.GetOrigin()
		if err != nil {
			return fmt.Errorf("kustomize build of %s: %w", dir, err)
		}
		n := res.RNode.Copy()
		_ = n.PipeE(yaml.ClearAnnotation(resourceOriginKey))
		if f := originFile(".", o); f != "" {
			if i, ok := index.at(path.Join(l.top, filepath.ToSlash(o.Path)), n); ok {
				_ = n.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, filepath.ToSlash(f)))
				_ = n.PipeE(yaml.SetAnnotation(kioutil.IndexAnnotation, strconv.Itoa(i)))
			}
		}
		if isLock(n) {
			_ = n.PipeE(yaml.SetAnnotation(filters.LocalConfigAnnotation, "true"))
			if b.LockFile != "" {
				return fmt.Errorf("kustomization %s lists two ImageLock files (%s and %s); keep one", dir, b.LockFile, originFile(dir, o))
			}
			b.LockFile = originFile(dir, o)
			if b.LockFile == "" {
				return fmt.Errorf("kustomization %s: the ImageLock does not come from a file of its own (generated or inline); list stowage.lock.yaml in resources", dir)
			}
			rel, err := filepath.Rel(l.c.root, filepath.FromSlash(path.Join(l.top, filepath.ToSlash(o.Path))))
			if err != nil || !filepath.IsLocal(rel) {
				return fmt.Errorf("kustomization %s: the lock %s is not beneath the root %s", dir, b.LockFile, l.c.root)
			}
			b.LockRel = rel
		}
		b.Items = append(b.Items, n)
	}
	return nil
}

// resourceOriginKey is the annotation kustomize's originAnnotations build
// option writes (config.kubernetes.io/origin).
const resourceOriginKey = "config.kubernetes.io/origin"

// keepLocks sets the local-config annotation of every ImageLock object in
// the YAML files of mem to "false", so that kustomize keeps it in the
// build's output (Load sets it back to "true").
func keepLocks(mem filesys.FileSystem) error {
	return mem.Walk("/", func(p string, info fs.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if ext := path.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := mem.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte(lock.ObjectKind)) {
			return err
		}
		objs, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil // not stowage's to judge: kustomize reports it if it reads the file
		}
		changed := false
		for _, o := range objs {
			if isLock(o) {
				if err := o.PipeE(yaml.SetAnnotation(filters.LocalConfigAnnotation, "false")); err != nil {
					return fmt.Errorf("%s: ImageLock metadata.annotations: %w", p, err)
				}
				changed = true
			}
		}
		if !changed {
			return nil
		}
		var out bytes.Buffer
		if err := (kio.ByteWriter{Writer: &out}).Write(objs); err != nil {
			return err
		}
		return mem.WriteFile(p, out.Bytes())
	})
}

// isLock reports whether n is an ImageLock.
func isLock(n *yaml.RNode) bool {
	return n.GetApiVersion() == lock.APIVersion && n.GetKind() == lock.ObjectKind
}

// fileIndex finds the position of a built resource among the objects of
// the file it came from. Each file is parsed once, whatever the number of
// resources it holds: parsing it again for each of them made a file of
// 3,000 small objects cost 3,000 parses of the whole file.
type fileIndex struct {
	mem   filesys.FileSystem
	files map[string]*indexedFile
	// parses counts the files parsed (tests).
	parses int
}

// indexedFile is one file's objects: how many, and the position of the
// first of each kind and name.
type indexedFile struct {
	ok     bool
	count  int
	byName map[string]int
}

// newFileIndex indexes files of mem on first use.
func newFileIndex(mem filesys.FileSystem) *fileIndex {
	return &fileIndex{mem: mem, files: map[string]*indexedFile{}}
}

// at returns the position of n among the objects of file p in mem: the
// only object, or the first one with n's kind and name (a name changed by
// the build, namePrefix say, is not found).
func (x *fileIndex) at(p string, n *yaml.RNode) (int, bool) {
	f, seen := x.files[p]
	if !seen {
		f = &indexedFile{byName: map[string]int{}}
		x.files[p] = f
		x.parses++
		data, err := x.mem.ReadFile(p)
		if err != nil {
			return 0, false
		}
		objs, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return 0, false
		}
		f.ok, f.count = true, len(objs)
		for i, o := range objs {
			k := o.GetKind() + "\x00" + o.GetName()
			if _, dup := f.byName[k]; !dup {
				f.byName[k] = i
			}
		}
	}
	if !f.ok {
		return 0, false
	}
	if f.count == 1 {
		return 0, true
	}
	i, ok := f.byName[n.GetKind()+"\x00"+n.GetName()]
	return i, ok
}

// originFile is the file a resource was read from, joined to dir; "" when
// it has none (generated, or from a remote repository).
func originFile(dir string, o *resource.Origin) string {
	if o == nil || o.Path == "" || o.Repo != "" || o.ConfiguredIn != "" {
		return ""
	}
	return filepath.Join(dir, filepath.FromSlash(o.Path))
}

// parseKustomization decodes the kustomization file data (named file in
// errors) strictly, with internal/strictyaml, into kustomize's own type,
// and applies kustomize's fixes of legacy fields (FixKustomization). A
// field kustomize does not know, a key given twice, a value of the wrong
// type are errors at their line and column, each naming its field (an
// unknown one with the nearest known name), all of them at once; nesting
// and aliases are bounded. kustomize's own reader says none of this by
// line, takes the last of repeated keys, and matches field names in any
// case; stowage refuses what it would read differently. A file holding
// no document is an empty kustomization, as it is to kustomize.
func parseKustomization(data []byte, file string) (types.Kustomization, error) {
	var k types.Kustomization
	doc, err := strictyaml.Parse(data, file)
	if errors.Is(err, strictyaml.ErrEmpty) {
		return k, nil
	}
	if err == nil {
		err = strictyaml.Decode(doc, &k, strictyaml.Options{File: file})
	}
	if err != nil {
		return k, err
	}
	k.FixKustomization()
	return k, nil
}

// transformerObjects returns the objects of one transformers entry: inline
// YAML, or the file it names (relative to the kustomization's directory
// top in mem, returned as file). A directory entry holds no functionConfig
// stowage looks for: it returns none.
func transformerObjects(mem filesys.FileSystem, top, entry string) ([]*yaml.RNode, string, error) {
	var data []byte
	file := ""
	if strings.Contains(entry, "\n") {
		data = []byte(entry)
	} else {
		p := path.Join(top, filepath.ToSlash(entry))
		if mem.IsDir(p) {
			return nil, "", nil
		}
		d, err := mem.ReadFile(p)
		if err != nil {
			return nil, "", fmt.Errorf("%q: %w", entry, err)
		}
		data, file = d, entry
	}
	objs, err := (&kio.ByteReader{Reader: strings.NewReader(string(data)), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, "", fmt.Errorf("%q: %w", entry, err)
	}
	return objs, file, nil
}

// resolved returns p absolute with every symbolic link resolved.
func resolved(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(a)
}

// beneath reports whether p is root or inside it (both absolute, clean).
func beneath(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// copied is the in-memory copy of a root directory, with the files left
// out and why.
type copied struct {
	// root is the directory copied (absolute, links resolved).
	root string
	mem  filesys.FileSystem
	// skipped maps the absolute path of each file or link not copied to
	// the reason.
	skipped map[string]string
	files   int
	// entries counts everything walked: files, directories and links;
	// maxEntries bounds it.
	entries, maxEntries int
	bytes               int64
	// aliasNodes sums the nodes the copied YAML files with aliases
	// expand to (strictyaml.Expanded), at most MaxAliasNodes.
	aliasNodes int
}

// MaxAliasNodes bounds the nodes a YAML file may expand to through its
// aliases (a "billion laughs" file of a few KB expands to gigabytes in
// kustomize's reader), and the nodes all the YAML files with aliases
// beneath the root expand to together.
const MaxAliasNodes = 1_000_000

// copyTree copies the files beneath root (absolute, links resolved) into
// an in-memory file system at the same absolute paths. Each file is read
// with confined.ReadFile; a link to a directory beneath root is followed
// (at its own path). What cannot be copied — a link leading out of root, a
// FIFO or device, a file over 8 MiB, a YAML file whose aliases expand past
// MaxAliasNodes — is left out and remembered: it is an error only when the
// build needs it (explain). Directories named .git are skipped. Errors:
// more than MaxFiles files, maxEntries entries or MaxBytes bytes, or YAML
// files whose aliases expand past MaxAliasNodes nodes together.
func copyTree(root string, maxEntries int) (*copied, error) {
	c := &copied{root: root, maxEntries: maxEntries, mem: filesys.MakeFsInMemory(), skipped: map[string]string{}}
	if err := c.mem.MkdirAll(filepath.ToSlash(root)); err != nil {
		return nil, err
	}
	return c, c.walk(root, root, root, map[string]bool{root: true}, 0)
}

// walk copies the directory real (a directory beneath root, links
// resolved) to the path at in the copy.
func (c *copied) walk(root, real, at string, seen map[string]bool, depth int) error {
	if depth > 40 {
		c.skipped[at] = "directory links nested more than 40 deep"
		return nil
	}
	ents, err := os.ReadDir(real)
	if err != nil {
		c.skipped[at] = err.Error()
		return nil
	}
	for _, e := range ents {
		src, dst := filepath.Join(real, e.Name()), filepath.Join(at, e.Name())
		// Directories and links count too: a tree of empty directories
		// is walked no further than a tree of files.
		if c.entries++; c.entries > c.maxEntries {
			return fmt.Errorf("%s holds more than %d files, directories and links; give a smaller --root", root, c.maxEntries)
		}
		switch {
		case e.IsDir():
			if e.Name() == ".git" {
				continue
			}
			if err := c.walk(root, src, dst, seen, depth+1); err != nil {
				return err
			}
			continue
		case e.Type()&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(src)
			if err != nil {
				c.skipped[dst] = "a symbolic link that leads nowhere"
				continue
			}
			if !beneath(root, target) {
				c.skipped[dst] = "a symbolic link that leads out of the root (--root)"
				continue
			}
			if fi, err := os.Stat(target); err == nil && fi.IsDir() {
				if seen[target] {
					continue // a loop of links: its files are copied once already
				}
				seen[target] = true
				if err := c.walk(root, target, dst, seen, depth+1); err != nil {
					return err
				}
				continue
			}
		case !e.Type().IsRegular():
			c.skipped[dst] = "not a regular file"
			continue
		}
		if c.files++; c.files > MaxFiles {
			return fmt.Errorf("%s holds more than %d files; give a smaller --root", root, MaxFiles)
		}
		rel, err := filepath.Rel(root, src)
		if err != nil {
			return err
		}
		data, err := confined.ReadFile(root, rel, input)
		if err != nil {
			c.skipped[dst] = err.Error()
			continue
		}
		if c.bytes += int64(len(data)); c.bytes > MaxBytes {
			return fmt.Errorf("%s holds more than %d bytes of files; give a smaller --root", root, MaxBytes)
		}
		n, ok := strictyaml.Expanded(data, MaxAliasNodes)
		if !ok {
			c.skipped[dst] = fmt.Sprintf("a YAML file whose aliases expand to more than %d nodes (%d counted)", MaxAliasNodes, n)
			continue
		}
		// Each file under the bound is not enough: kustomize's reader
		// holds every file it reads expanded, so alias bombs split across
		// many small files are bounded together.
		if c.aliasNodes += n; c.aliasNodes > MaxAliasNodes {
			return fmt.Errorf("%s: the YAML files beneath %s expand through their aliases to more than %d nodes together by this file; give a smaller --root or fewer aliases", dst, root, MaxAliasNodes)
		}
		if err := c.mem.WriteFile(filepath.ToSlash(dst), data); err != nil {
			return err
		}
	}
	return nil
}

// explain appends to err the reason of each file the copy left out that
// err names (a build that needed it), so that "does not exist" says why.
func (c *copied) explain(err error) error {
	if err == nil || len(c.skipped) == 0 {
		return err
	}
	msg := err.Error()
	var notes []string
	for _, p := range slices.Sorted(maps.Keys(c.skipped)) {
		if strings.Contains(msg, p) || strings.Contains(msg, filepath.Base(p)) && len(notes) < 5 && strings.Contains(msg, filepath.Base(filepath.Dir(p))) {
			notes = append(notes, fmt.Sprintf("%s was not read: %s", p, c.skipped[p]))
		}
	}
	if len(notes) == 0 {
		return err
	}
	return fmt.Errorf("%w\n%s", err, strings.Join(notes, "\n"))
}

// remoteForm reports whether a resources, components, generators,
// transformers or validators entry would make kustomize fetch from a
// network, by the forms its loader tries before a local path (a git
// repository: a scheme, user@host, a github.com path, the git:: prefix;
// an http(s) URL). It is checked whether or not a local path of the same
// name exists, since kustomize tries the remote first.
func remoteForm(e string) bool {
	l := strings.ToLower(strings.TrimSpace(e))
	l = strings.TrimPrefix(l, "git::")
	first, _, _ := strings.Cut(l, "/")
	return strings.Contains(l, "://") ||
		strings.Contains(first, "@") ||
		first == "github.com" || strings.HasPrefix(l, "github.com:") ||
		strings.HasPrefix(strings.ToLower(strings.TrimSpace(e)), "git::")
}

// isURL reports whether a file path field holds a URL (kustomize loads
// http and https ones over the network).
func isURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	return err == nil && u.Scheme != "" && u.Host != ""
}

// checkReachable checks the kustomization at dir (absolute, in the copy)
// and every kustomization it reaches through resources and components,
// once each: an entry of resources, components, generators, transformers
// or validators in a remote form (remoteForm), outside root, or absent
// from the copy is refused by file, field and index; a URL in a field
// kustomize loads a file from (patches, crds, configurations,
// replacements, openapi, generator sources) is refused; helmCharts is
// refused; the generators, transformers and validators must pass
// checkFunctions (isFunction tells stowage's functionConfig). shownRoot is
// the root as the user named it.
func (c *copied) checkReachable(top, shownRoot string, isFunction func(*yaml.RNode) bool) error {
	var errs []error
	seen := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		name := ""
		for _, n := range konfig.RecognizedKustomizationFileNames() {
			if c.mem.Exists(path.Join(dir, n)) && !c.mem.IsDir(path.Join(dir, n)) {
				name = n
				break
			}
		}
		if name == "" {
			return // kustomize says the directory holds no kustomization
		}
		file := path.Join(dir, name)
		data, err := c.mem.ReadFile(file)
		if err != nil {
			errs = append(errs, err)
			return
		}
		k, err := parseKustomization(data, file)
		if err != nil {
			errs = append(errs, err)
			return
		}
		lines := entryLines(data)
		for _, f := range []struct {
			name string
			list []string
		}{{"resources", k.Resources}, {"components", k.Components}, {"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
			for i, e := range f.list {
				if strings.Contains(e, "\n") {
					continue // inline YAML
				}
				p := path.Join(dir, filepath.ToSlash(e))
				switch {
				case remoteForm(e):
					errs = append(errs, fmt.Errorf("%s:%d: %s[%d] %q is a remote resource: stowage reads local files only (render or vendor it into the repository)", file, lines.at(f.name, i), f.name, i, e))
				case f.name == "resources" && path.Base(e) == lock.FileName && !c.mem.Exists(p) && c.leftOut(p) != "":
					at := c.leftOut(p)
					errs = append(errs, fmt.Errorf("%s:%d: resources[%d] %q: %s was not read (%s): stowage reads and writes a lock only beneath the root %s (--root), never through a link out of it", file, lines.at("resources", i), i, e, at, c.skipped[at], shownRoot))
				case f.name == "resources" && path.Base(e) == lock.FileName && !c.mem.Exists(p) && dir != top && filepath.IsLocal(filepath.FromSlash(e)):
					errs = append(errs, fmt.Errorf("%s:%d: resources[%d] %q does not exist yet, and a lock in a base would be shared by every overlay (each overlay's lock would prune the others' entries): list %s in the resources of the kustomization that declares the stowage transformer instead", file, lines.at("resources", i), i, e, lock.FileName))
				case path.IsAbs(filepath.ToSlash(e)) || !c.mem.Exists(p) && !(f.name == "resources" && path.Base(e) == lock.FileName):
					reason := "is not a file or directory beneath " + shownRoot + " (--root)"
					if !path.IsAbs(filepath.ToSlash(e)) && !beneath(c.root, filepath.FromSlash(p)) {
						reason = fmt.Sprintf("is outside the root %s: to let stowage read it, pass --root %s (a directory that holds both)", shownRoot, commonDir(c.root, filepath.FromSlash(p)))
					}
					if why, ok := c.skipped[filepath.FromSlash(p)]; ok {
						reason = "was not read: " + why
					}
					errs = append(errs, fmt.Errorf("%s:%d: %s[%d] %q %s", file, lines.at(f.name, i), f.name, i, e, reason))
				case c.mem.IsDir(p) && (f.name == "resources" || f.name == "components"):
					visit(p)
				}
			}
		}
		// Every field a builtin reads a file from: a URL there is fetched
		// by kustomize. Each is located at the item (or key) of its
		// top-level field.
		type fileField struct {
			top  string // the kustomization's field
			i    int    // its item, -1 for the key itself
			vals []string
		}
		fields := map[string]fileField{"openapi.path": {"openapi", -1, []string{k.OpenAPI["path"]}}}
		for i, v := range k.Crds {
			fields[fmt.Sprintf("crds[%d]", i)] = fileField{"crds", i, []string{v}}
		}
		for i, v := range k.Configurations {
			fields[fmt.Sprintf("configurations[%d]", i)] = fileField{"configurations", i, []string{v}}
		}
		for i, ps := range k.Patches {
			fields[fmt.Sprintf("patches[%d].path", i)] = fileField{"patches", i, []string{ps.Path}}
		}
		for i, ps := range k.PatchesJson6902 {
			fields[fmt.Sprintf("patchesJson6902[%d].path", i)] = fileField{"patchesJson6902", i, []string{ps.Path}}
		}
		for i, ps := range k.PatchesStrategicMerge {
			fields[fmt.Sprintf("patchesStrategicMerge[%d]", i)] = fileField{"patchesStrategicMerge", i, []string{string(ps)}}
		}
		for i, r := range k.Replacements {
			fields[fmt.Sprintf("replacements[%d].path", i)] = fileField{"replacements", i, []string{r.Path}}
		}
		for i, g := range k.ConfigMapGenerator {
			fields[fmt.Sprintf("configMapGenerator[%d]", i)] = fileField{"configMapGenerator", i, append(slices.Clone(g.FileSources), g.EnvSources...)}
		}
		for i, g := range k.SecretGenerator {
			fields[fmt.Sprintf("secretGenerator[%d]", i)] = fileField{"secretGenerator", i, append(slices.Clone(g.FileSources), g.EnvSources...)}
		}
		for _, f := range slices.Sorted(maps.Keys(fields)) {
			ff := fields[f]
			for _, v := range ff.vals {
				_, after, ok := strings.Cut(v, "=") // a file source may be written key=path
				if isURL(v) || ok && isURL(after) {
					errs = append(errs, fmt.Errorf("%s:%d: %s: %q is a URL: stowage reads no remote file", file, lines.at(ff.top, ff.i), f, v))
				}
			}
		}
		errs = append(errs, c.checkFunctions(file, dir, data, &k, dir == top, isFunction)...)
		if len(k.HelmCharts) > 0 {
			// FixKustomization moves the legacy field's charts here.
			field := "helmCharts"
			if _, ok := lines["helmCharts"]; !ok {
				if _, ok := lines["helmChartInflationGenerator"]; ok {
					field = "helmChartInflationGenerator"
				}
			}
			errs = append(errs, fmt.Errorf("%s:%d: %s: stowage does not inflate Helm charts (they fetch charts and run helm); render the chart into a file and list it in resources", file, lines.at(field, -1), field))
		}
	}
	visit(top)
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// leftOut returns p (a slash path in the copy) or the nearest of its
// parents beneath the root that the copy left out (a symbolic link leading
// out of the root, say), as a path of the OS; "" when none was.
func (c *copied) leftOut(p string) string {
	for d := filepath.FromSlash(p); beneath(c.root, d) && d != c.root; d = filepath.Dir(d) {
		if _, ok := c.skipped[d]; ok {
			return d
		}
	}
	return ""
}

// commonDir is the deepest directory holding both a and b (absolute).
func commonDir(a, b string) string {
	for d := a; ; d = filepath.Dir(d) {
		if beneath(d, b) {
			return d
		}
		if d == filepath.Dir(d) {
			return d
		}
	}
}
