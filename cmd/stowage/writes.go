package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stowage/stowage/internal/atomicfile"
)

// writes are file and directory replacements that go together (bump's
// lock, rendered directory and PR body): commit makes each one atomically,
// in order, and when one fails, or ctx is done, puts back what the earlier
// ones replaced, so the files change together or not at all.
type writes struct {
	steps []writeStep
}

type writeStep struct {
	path  string
	file  []byte            // a file's new content, when dir is nil
	dir   map[string][]byte // a directory's new files (atomicfile.ReplaceDir)
	isDir bool
}

// file adds the replacement of the file at path by data (mode 0644).
func (w *writes) file(path string, data []byte) {
	w.steps = append(w.steps, writeStep{path: path, file: data})
}

// dir adds the replacement of the directory at path by files.
func (w *writes) dir(path string, files map[string][]byte) {
	w.steps = append(w.steps, writeStep{path: path, dir: files, isDir: true})
}

// commit makes the writes in order. On failure it undoes the ones made, in
// reverse order, and returns the failure (and any undo that failed too,
// naming what it could not put back).
func (w *writes) commit(ctx context.Context) error {
	var undo []func() error
	for _, s := range w.steps {
		restore, err := s.snapshot()
		if err == nil {
			if s.isDir {
				err = atomicfile.ReplaceDirContext(ctx, s.path, s.dir)
			} else {
				err = atomicfile.WriteFileContext(ctx, s.path, s.file, 0o644)
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

// snapshot reads what s replaces and returns the function that puts it
// back: the old file or directory, or its absence.
func (s writeStep) snapshot() (func() error, error) {
	if !s.isDir {
		old, err := os.ReadFile(s.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return func() error { return undoErr(s.path, os.Remove(s.path)) }, nil
		case err != nil:
			return nil, err
		}
		return func() error {
			return undoErr(s.path, atomicfile.WriteFile(s.path, old, 0o644))
		}, nil
	}
	old := map[string][]byte{}
	err := filepath.WalkDir(s.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(s.path, p)
		old[filepath.ToSlash(rel)] = b
		return err
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return func() error { return undoErr(s.path, os.RemoveAll(s.path)) }, nil
	case err != nil:
		return nil, err
	}
	return func() error { return undoErr(s.path, atomicfile.ReplaceDir(s.path, old)) }, nil
}

func undoErr(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("putting %s back as it was failed: %w", path, err)
}
