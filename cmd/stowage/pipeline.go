package main

import (
	"context"
	"time"

	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
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

// renderDir loads the config directory dir, reads its lock (a missing
// lock is an empty lock, so that render names every image that needs an
// entry) and renders the profile through render.FromConfig, reading the
// passwords through getenv; the config loads with the schema options of
// ctx's run (schemaOptions).
func renderDir(ctx context.Context, dir string, o loadOptions, getenv env) ([]render.Object, error) {
	src, err := source.LoadDir(dir, source.LoadOptions{AllowLiteralPasswords: o.allowLiteralPasswords, Schema: schemaOptions(ctx)})
	if err != nil {
		return nil, err
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		return nil, err
	}
	return render.FromConfig(src.Config, o.profile, lf.Lock, render.Options{Dir: dir, Getenv: getenv})
}
