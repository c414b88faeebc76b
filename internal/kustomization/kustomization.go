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
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
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
)

// Bounds of the copy of the root directory the build reads.
const (
	// MaxFiles is the most files copied (directories named .git are
	// skipped).
	MaxFiles = 10000
	// MaxBytes is the most bytes copied in all.
	MaxBytes = 64 << 20
)

// input is one file copied for the build: at most 8 MiB.
var input = confined.Kind{What: "kustomization input", Max: 8 << 20}

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
}

// Find returns the kustomization file in dir (konfig's recognised names)
// or "" when there is none.
func Find(dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
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
	if root == "" {
		root = dir
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(absRoot, absDir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("kustomization %s is not beneath the root %s (--root)", dir, root)
	}
	name := Find(dir)
	if name == "" {
		return nil, fmt.Errorf("%s holds no kustomization file (%s)", dir, strings.Join(konfig.RecognizedKustomizationFileNames(), ", "))
	}
	b := &Build{Dir: dir, File: filepath.Join(dir, name)}

	mem, err := copyTree(root)
	if err != nil {
		return nil, err
	}
	top := path.Join("/", filepath.ToSlash(rel))
	if err := checkLocal(mem, root); err != nil {
		return nil, err
	}

	data, err := mem.ReadFile(path.Join(top, name))
	if err != nil {
		return nil, err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("%s: %w", b.File, err)
	}
	k.FixKustomization()

	// The stowage transformer: one object of one transformers entry.
	at := -1
	for i, t := range k.Transformers {
		objs, file, err := transformerObjects(mem, top, t)
		if err != nil {
			return nil, fmt.Errorf("%s: transformers[%d]: %w", b.File, i, err)
		}
		for _, o := range objs {
			if !isFunction(o) {
				continue
			}
			if at >= 0 {
				return nil, fmt.Errorf("%s: transformers[%d] and transformers[%d] both declare a stowage KRM function; keep one", b.File, at, i)
			}
			if len(objs) > 1 {
				return nil, fmt.Errorf("%s: transformers[%d] holds %d objects besides the stowage functionConfig; give the functionConfig a file of its own", b.File, i, len(objs)-1)
			}
			at = i
			b.FunctionConfig = o
			if file != "" {
				b.FunctionFile = filepath.Join(dir, filepath.FromSlash(file))
				_ = o.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, file))
			} else {
				b.FunctionFile = b.File
			}
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("%s %w (a Stowage or JupyterImagePuller object with a config.kubernetes.io/function annotation, listed in transformers:)", b.File, ErrNoFunction)
	}

	// A lock listed in resources but not written yet: an empty ImageLock
	// in its place, so that the build succeeds and names where it goes.
	for _, r := range k.Resources {
		p := path.Join(top, filepath.ToSlash(r))
		if path.Base(r) == lock.FileName && !mem.Exists(p) && filepath.IsLocal(filepath.FromSlash(r)) {
			if err := mem.WriteFile(p, (&lock.Lock{}).Marshal()); err != nil {
				return nil, err
			}
			b.LockListed = r
		}
	}

	// kustomize drops local-config resources at the end of a build, after
	// the function saw them: keep the ImageLock objects in this build.
	if err := keepLocks(mem); err != nil {
		return nil, err
	}

	// Build with the transformers that run before the function, and with
	// origin annotations to find the lock's file.
	k.Transformers = k.Transformers[:at]
	k.Validators = nil
	if !slices.Contains(k.BuildMetadata, types.OriginAnnotations) {
		k.BuildMetadata = append(k.BuildMetadata, types.OriginAnnotations)
	}
	out, err := sigsyaml.Marshal(&k)
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile(path.Join(top, name), out); err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, top)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s up to the stowage transformer: %w", dir, err)
	}
	for _, res := range rm.Resources() {
		o, err := res.GetOrigin()
		if err != nil {
			return nil, fmt.Errorf("kustomize build of %s: %w", dir, err)
		}
		n := res.RNode.Copy()
		_ = n.PipeE(yaml.ClearAnnotation(resourceOriginKey))
		if f := originFile(".", o); f != "" {
			if i, ok := indexIn(mem, path.Join(top, filepath.ToSlash(o.Path)), n); ok {
				_ = n.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, filepath.ToSlash(f)))
				_ = n.PipeE(yaml.SetAnnotation(kioutil.IndexAnnotation, strconv.Itoa(i)))
			}
		}
		if isLock(n) {
			_ = n.PipeE(yaml.SetAnnotation(filters.LocalConfigAnnotation, "true"))
			if b.LockFile != "" {
				return nil, fmt.Errorf("kustomization %s lists two ImageLock files (%s and %s); keep one", dir, b.LockFile, originFile(dir, o))
			}
			b.LockFile = originFile(dir, o)
			if b.LockFile == "" {
				return nil, fmt.Errorf("kustomization %s: the ImageLock does not come from a file of its own (generated or inline); list stowage.lock.yaml in resources", dir)
			}
		}
		b.Items = append(b.Items, n)
	}
	if b.LockFile != "" {
		rel, err := filepath.Rel(absRoot, absOf(b.LockFile))
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("kustomization %s: the lock file %s is not beneath the root %s", dir, b.LockFile, root)
		}
	}
	return b, nil
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
					return err
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

// indexIn returns the position of n among the objects of file p in mem:
// the only object, or the one with n's kind and name (a name changed by
// the build, namePrefix say, is not found).
func indexIn(mem filesys.FileSystem, p string, n *yaml.RNode) (int, bool) {
	data, err := mem.ReadFile(p)
	if err != nil {
		return 0, false
	}
	objs, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return 0, false
	}
	if len(objs) == 1 {
		return 0, true
	}
	for i, o := range objs {
		if o.GetKind() == n.GetKind() && o.GetName() == n.GetName() {
			return i, true
		}
	}
	return 0, false
}

// originFile is the file a resource was read from, joined to dir; "" when
// it has none (generated, or from a remote repository).
func originFile(dir string, o *resource.Origin) string {
	if o == nil || o.Path == "" || o.Repo != "" || o.ConfiguredIn != "" {
		return ""
	}
	return filepath.Join(dir, filepath.FromSlash(o.Path))
}

func absOf(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
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

// copyTree copies the regular files beneath root into an in-memory file
// system, at the same paths under "/". Each file is read with
// confined.ReadFile, so a symbolic link that leads outside root is an
// error; directories named .git are skipped.
func copyTree(root string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	files, total := 0, int64(0)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if files++; files > MaxFiles {
			return fmt.Errorf("%s holds more than %d files; give a smaller --root", root, MaxFiles)
		}
		data, err := confined.ReadFile(root, rel, input)
		var ce *confined.Error
		if errors.As(err, &ce) && d.Type()&fs.ModeSymlink != 0 && errors.Is(err, fs.ErrNotExist) {
			return nil // a dangling link: nothing kustomize could read either
		}
		if err != nil {
			if d.Type()&fs.ModeSymlink != 0 {
				if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
					// A link to a directory: kustomize could follow it; it
					// must stay beneath root like any file.
					if r, rerr := filepath.EvalSymlinks(p); rerr == nil {
						if rr, _ := filepath.Rel(absOf(root), absOf(r)); filepath.IsLocal(rr) {
							return nil
						}
					}
				}
			}
			return err
		}
		if total += int64(len(data)); total > MaxBytes {
			return fmt.Errorf("%s holds more than %d bytes of files; give a smaller --root", root, MaxBytes)
		}
		return mem.WriteFile(path.Join("/", filepath.ToSlash(rel)), data)
	})
	if err != nil {
		return nil, err
	}
	return mem, nil
}

// checkLocal refuses every kustomization file in mem that names a remote
// resource: an entry of resources, components, generators, transformers
// or validators that is neither inline YAML nor a file or directory of
// mem, or an http(s) URL in a field kustomize loads a file from (patches,
// crds, configurations, replacements, openapi, generator sources). The
// build reads only mem, so a local path that is missing fails there.
func checkLocal(mem filesys.FileSystem, root string) error {
	var errs []error
	err := mem.Walk("/", func(p string, info fs.FileInfo, err error) error {
		if err != nil || info.IsDir() || !slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(p)) {
			return err
		}
		shown := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, "/")))
		data, err := mem.ReadFile(p)
		if err != nil {
			return err
		}
		var k types.Kustomization
		if err := k.Unmarshal(data); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", shown, err))
			return nil
		}
		k.FixKustomization()
		dir := path.Dir(p)
		for field, list := range map[string][]string{
			"resources": k.Resources, "components": k.Components, "generators": k.Generators,
			"transformers": k.Transformers, "validators": k.Validators,
		} {
			for i, e := range list {
				if strings.Contains(e, "\n") || mem.Exists(path.Join(dir, filepath.ToSlash(e))) {
					continue
				}
				if path.Base(e) == lock.FileName && filepath.IsLocal(filepath.FromSlash(e)) {
					continue // the lock stowage lock writes
				}
				errs = append(errs, fmt.Errorf("%s: %s[%d] %q is not a file or directory beneath %s: stowage reads no remote resource and nothing outside the root (--root)", shown, field, i, e, root))
			}
		}
		var files []string
		for _, ps := range k.Patches {
			files = append(files, ps.Path)
		}
		for _, ps := range k.PatchesJson6902 {
			files = append(files, ps.Path)
		}
		for _, ps := range k.PatchesStrategicMerge {
			files = append(files, string(ps))
		}
		for _, r := range k.Replacements {
			files = append(files, r.Path)
		}
		for _, g := range k.ConfigMapGenerator {
			files = append(files, g.FileSources...)
			files = append(files, g.EnvSources...)
		}
		for _, g := range k.SecretGenerator {
			files = append(files, g.FileSources...)
			files = append(files, g.EnvSources...)
		}
		files = append(files, k.Crds...)
		files = append(files, k.Configurations...)
		files = append(files, k.OpenAPI["path"])
		for _, f := range files {
			// A file source may be written key=path.
			_, f2, ok := strings.Cut(f, "=")
			if !ok {
				f2 = f
			}
			for _, s := range []string{f, f2} {
				if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.Scheme != "" && u.Host != "" {
					errs = append(errs, fmt.Errorf("%s: %q is a URL: stowage reads no remote file", shown, s))
					break
				}
			}
		}
		if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
			errs = append(errs, fmt.Errorf("%s: helmCharts: stowage does not inflate Helm charts (they fetch charts and run helm); render the chart into a file and list it in resources", shown))
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
