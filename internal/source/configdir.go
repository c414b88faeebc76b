package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/render"
)

// CheckConfigDir recognises a directory that is not a config directory but
// is easily taken for one, before CUE reports its files as conflicts: the
// output of `stowage render --output-dir` (its kustomization.yaml starts with
// render.GeneratedHeader), or any other kustomization (refused unless
// kustomizationOK: a command that takes one reads it, Load). A config directory
// never holds a kustomization file: every YAML file there is config.
func CheckConfigDir(dir string, kustomizationOK bool) error {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		path := filepath.Join(dir, n)
		// Only a regular file (or a link to one) is opened: a FIFO would
		// block the open.
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		head := make([]byte, len(render.GeneratedHeader))
		k, _ := io.ReadFull(f, head)
		f.Close()
		if bytes.Equal(head[:k], []byte(render.GeneratedHeader)) {
			return fmt.Errorf("%s is the output of `stowage render --output-dir` (%s says so), not a config directory: run stowage on the config directory that rendered it, the one holding the config (.cue, .yaml) and stowage.lock.yaml", dir, n)
		}
		if kustomizationOK {
			return nil // Load reads it, or says why it cannot
		}
		return fmt.Errorf("%s is a kustomization (%s), not a stowage config directory: a config directory holds only stowage's config (.cue, .yaml, .yml, .json) and stowage.lock.yaml; inside a kustomization, run stowage as a KRM function (README: \"stowage as a kustomize KRM function\"); stowage lock, bump, vet, mirror and status take such a kustomization itself", dir, n)
	}
	return nil
}

// Discover says why dir is stowage's (for `stowage cmp discover`) ("" when it is not): a
// kustomization declaring stowage's transformer, or a config directory
// (a lock or a .cue file, and no kustomization file). A kustomization that
// does not build for another reason counts as stowage's when its
// transformers name a file kustomization.Load finds a functionConfig in,
// which is the only way Load gets past ErrNoFunction; so generate then
// reports the build's error instead of Argo CD saying no plugin matched.
func Discover(dir string) (string, error) {
	if fi, err := os.Stat(dir); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	if name := kustomization.Find(dir); name != "" {
		_, err := kustomization.Load(dir, "", fn.IsFunctionConfig)
		if errors.Is(err, kustomization.ErrNoFunction) {
			return "", nil
		}
		return fmt.Sprintf("%s: a kustomization with the stowage transformer", name), nil
	}
	if fi, err := os.Stat(filepath.Join(dir, lock.FileName)); err == nil && fi.Mode().IsRegular() {
		return fmt.Sprintf("%s: a stowage config directory", lock.FileName), nil
	}
	cue, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil {
		return "", err
	}
	if len(cue) > 0 {
		return fmt.Sprintf("%s: a stowage config directory", filepath.Base(cue[0])), nil
	}
	return "", nil
}

// CheckDirArg is CheckConfigDir for the DIR argument of command (as the
// user types it, "openpai services"), after refusing "-": DIR is a
// directory, never standard input, so "-" is a *UsageError naming what
// command reads.
func CheckDirArg(command, dir string, kustomizationOK bool) error {
	if dir == "-" {
		what := "a config directory"
		if kustomizationOK {
			what += " or a kustomization"
		}
		return &UsageError{fmt.Errorf("DIR -: %s reads %s, not stdin; give its path", command, what)}
	}
	return CheckConfigDir(dir, kustomizationOK)
}
