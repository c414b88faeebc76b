// Command genlock writes the stowage.lock.yaml of each config directory it
// is given from the deterministic stand-in images of internal/standin: the
// real registries are out of reach offline, so the examples' digests come
// from images that are the same bytes on every machine. No digest is typed
// by hand.
//
//	go run ./hack/genlock examples/openpai-offline examples/submarine-notebooks
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/standin"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: genlock DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := genlock(dir); err != nil {
			fmt.Fprintf(os.Stderr, "genlock: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// genlock locks every image of every profile of dir to its stand-in.
func genlock(dir string) error {
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		return err
	}
	l := &lock.Lock{}
	for _, p := range cfg.ProfileNames() {
		refs, err := render.Images(cfg, p)
		if err != nil {
			return err
		}
		for _, ref := range refs {
			if ref.Digest != "" {
				continue
			}
			if _, ok := l.Lookup(ref.Key()); ok {
				continue // the first spelling in sort order is recorded
			}
			e, err := standin.Entry(ref.Written)
			if err != nil {
				return err
			}
			l.Put(e)
		}
	}
	return atomicfile.WriteFile(filepath.Join(dir, lock.FileName), l.Marshal(), 0o644)
}
