package main

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/schema"
)

// loadOptions are the flags shared by commands that read a config.
type loadOptions struct {
	profile               string
	allowLiteralPasswords bool
	// root is --root: when DIR is a kustomization, the directory its
	// reads stay beneath ("" is DIR).
	root string
	// deadline, when set, points at the command's --deadline: a
	// kustomization's build stops there too.
	deadline *time.Duration
}

// readLock reads DIR/stowage.lock.yaml; a missing lock is an empty lock, so
// that render names every image that needs an entry.
func readLock(dir string) (*lock.Lock, error) {
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return &lock.Lock{}, nil
	}
	return l, err
}

// renderDir loads dir, reads its lock and renders the profile through
// source.Render, reading the passwords through getenv.
func renderDir(dir string, o loadOptions, getenv env) ([]render.Object, error) {
	cfg, err := schema.Load(dir, schemaOptions(schema.Options{AllowLiteralPasswords: o.allowLiteralPasswords})...)
	if err != nil {
		return nil, err
	}
	l, err := readLock(dir)
	if err != nil {
		return nil, err
	}
	return source.Render(cfg, o.profile, l, source.RenderOptions{Dir: dir, Getenv: getenv})
}
