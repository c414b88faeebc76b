package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stowage/stowage/internal/render"
)

// checkOutputDir refuses an output directory that render -o (or bump
// --render) must not replace: one that holds anything stowage did not write
// there. The directory is replaced whole, so a config directory, a .git or a
// neighbour's manifests inside it would be deleted. It may be missing, empty,
// or a previous render: a kustomization.yaml starting with
// render.GeneratedHeader and regular files it lists.
func checkOutputDir(out string) error {
	ents, err := os.ReadDir(out)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	k, err := os.ReadFile(filepath.Join(out, "kustomization.yaml"))
	listed := map[string]bool{"kustomization.yaml": true}
	if err == nil && bytes.HasPrefix(k, []byte(render.GeneratedHeader)) {
		for _, line := range strings.Split(string(k), "\n") {
			if f, ok := strings.CutPrefix(line, "- "); ok {
				listed[f] = true
			}
		}
	} else {
		listed = map[string]bool{}
	}
	var foreign []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !listed[e.Name()] {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(foreign)-5))
	}
	return fmt.Errorf("output directory %s holds files stowage did not write (%s); -o replaces the whole directory, so give an empty directory or one that stowage rendered",
		out, strings.Join(shown, ", "))
}
