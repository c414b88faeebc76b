package registrytest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/trustfile"
)

// TrustFile is a key or trusted-root file a config's verify policies name.
type TrustFile struct {
	// Path is the path as written, relative to the config directory.
	Path string
	// Kind bounds its read: trustfile.Key or trustfile.TrustedRoot.
	Kind confined.Kind
}

// TrustFiles lists the key and trusted-root files of every verify policy
// of cfg (top level, catalogue images, environments, profiles), each once,
// sorted by path. A path written both as a key and as a trusted root is
// listed as a key.
func TrustFiles(cfg *v1alpha1.Config) []TrustFile {
	kinds := map[string]confined.Kind{}
	add := func(v *v1alpha1.Verify) {
		if v == nil {
			return
		}
		for _, k := range v.Keys {
			kinds[k] = trustfile.Key
		}
		if _, ok := kinds[v.TrustedRoot]; v.TrustedRoot != "" && !ok {
			kinds[v.TrustedRoot] = trustfile.TrustedRoot
		}
	}
	add(cfg.Verify)
	for _, im := range cfg.Images {
		add(im.Verify)
	}
	for _, e := range cfg.Environments {
		add(e.Verify)
	}
	for _, p := range cfg.Profiles {
		add(p.Verify)
	}
	var out []TrustFile
	for p, k := range kinds {
		out = append(out, TrustFile{Path: p, Kind: k})
	}
	slices.SortFunc(out, func(a, b TrustFile) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return out
}

// CopyTrustFiles copies the trust files of cfg (TrustFiles) from the
// config directory from to the same relative paths under to, creating
// their directories: what a copy of an example needs beside its config
// files for `stowage lock` and render to read its keys. Each is read as
// lock reads it, confined to from (no path or symbolic link out of it) and
// bounded; a file that is missing or refused is an error naming it.
func CopyTrustFiles(cfg *v1alpha1.Config, from, to string) error {
	for _, f := range TrustFiles(cfg) {
		b, err := confined.ReadFile(from, f.Path, f.Kind)
		if err != nil {
			return fmt.Errorf("copy trust files: %w", err)
		}
		dst := filepath.Join(to, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
