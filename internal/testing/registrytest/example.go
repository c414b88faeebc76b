package registrytest

import (
	"fmt"
	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/workload"
	"os"
	"path/filepath"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

// Example is an example directory to lock: a config directory, or a
// kustomization with the stowage transformer (its top-level files only).
type Example struct {
	// Config is the config: the directory's or the functionConfig's.
	Config *v1alpha1.Config
	// Workloads are the images the function pins (kustomization only).
	Workloads []plan.Workload
	// Files are the directory's files without the lock, by base name.
	Files map[string][]byte
	// Lock is the lock file's base name in the directory.
	Lock string
	// Dir is the directory, which the config's trust files (keys,
	// trusted roots: TrustFiles) are relative to.
	Dir string
}

// LoadExample reads dir as `stowage lock` does.
func LoadExample(dir string) (*Example, error) { return LoadExampleRoot(dir, "") }

// LoadExampleRoot reads dir as `stowage lock --root root` does.
func LoadExampleRoot(dir, root string) (*Example, error) {
	ex := &Example{Files: map[string][]byte{}, Lock: lock.FileName, Dir: dir}
	if kustomization.Find(dir) == "" {
		cfg, err := schema.Load(dir, schema.Options{})
		if err != nil {
			return nil, err
		}
		files, err := schema.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			ex.Files[filepath.Base(f.Name)] = f.Data
		}
		ex.Config = cfg
		return ex, nil
	}
	b, err := kustomization.Load(dir, root, fn.IsFunctionConfig)
	if err != nil {
		return nil, err
	}
	c, rs, ok := (&fn.Processor{Dir: dir}).ReadConfig(b.FunctionConfig)
	if !ok {
		return nil, fmt.Errorf("%s: %v", b.FunctionFile, rs)
	}
	if filepath.Dir(b.LockFile) != filepath.Clean(dir) {
		return nil, fmt.Errorf("%s: the lock %s is not in the kustomization's directory", dir, b.LockFile)
	}
	ex.Config, ex.Workloads, ex.Lock = c.Config, workload.Pinned(b.Items, c.Config.ImagePlaces), filepath.Base(b.LockFile)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == ex.Lock {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ex.Files[e.Name()] = data
	}
	return ex, nil
}

// Write writes the example's files (not its lock) into dir, and the trust
// files its config names at the same paths (CopyTrustFiles).
func (ex *Example) Write(dir string) error {
	for name, data := range ex.Files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return CopyTrustFiles(ex.Config, ex.Dir, dir)
}
