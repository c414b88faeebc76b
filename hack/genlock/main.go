// Command genlock writes the stowage.lock.yaml of each config directory it
// is given from the deterministic stand-in images of internal/standin: the
// real registries are out of reach offline, so the examples' digests come
// from images that are the same bytes on every machine. No digest is typed
// by hand.
//
//	go run ./hack/genlock examples/openpai-offline examples/submarine-notebooks
//	go run ./hack/genlock -fn stowage.yaml -extra repo:tag,... DIR
//
// With -fn, the config is the spec of the Stowage functionConfig file in DIR
// (a kustomization using stowage as a KRM function); -extra adds images of
// workloads that the function pins.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/standin"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

func main() {
	fnFile := flag.String("fn", "", "read the config from this Stowage functionConfig file in DIR")
	extra := flag.String("extra", "", "comma-separated extra references to lock")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: genlock [-fn FILE] [-extra REF,...] DIR...")
		os.Exit(2)
	}
	var extras []string
	if *extra != "" {
		extras = strings.Split(*extra, ",")
	}
	for _, dir := range flag.Args() {
		if err := genlock(dir, *fnFile, extras); err != nil {
			fmt.Fprintf(os.Stderr, "genlock: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// genlock locks every image of every profile of dir to its stand-in.
func genlock(dir, fnFile string, extras []string) error {
	var cfg *schema.Config
	var err error
	if fnFile != "" {
		var data []byte
		if data, err = os.ReadFile(filepath.Join(dir, fnFile)); err != nil {
			return err
		}
		cfg, err = schema.LoadEmbedded(dir, fnFile, data, "spec", []string{"profile"}, schema.Options{AllowNoProfiles: true})
	} else {
		cfg, err = schema.Load(dir, schema.Options{})
	}
	if err != nil {
		return err
	}
	l := &lock.Lock{}
	for _, x := range extras {
		e, err := standin.Entry(x)
		if err != nil {
			return err
		}
		if _, ok := l.Lookup(e.Name); !ok {
			l.Put(e)
		}
	}
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
