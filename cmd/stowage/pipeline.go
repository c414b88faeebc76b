package main

import (
	"context"
	"time"

	engine "github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/render"
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
// entry) and the passwords and trust files of the profile
// (render.ReadNeeded, the variables through getenv), and renders the
// profile (render.Render); the config loads with the schema options of
// ctx's run (schemaOptions).
func renderDir(ctx context.Context, dir string, o loadOptions, getenv env) ([]engine.Object, error) {
	src, err := source.LoadDir(dir, source.LoadOptions{AllowLiteralPasswords: o.allowLiteralPasswords, Schema: schemaOptions(ctx)})
	if err != nil {
		return nil, err
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		return nil, err
	}
	pw, trust, err := render.ReadNeeded(dir, src.Config, o.profile, getenv)
	if err != nil {
		return nil, err
	}
	objs, err := render.Render(render.Input{Config: src.Config, Lock: lf.Lock.Object(), Profile: o.profile, Passwords: pw, Trust: trust})
	return engine.Objects(objs), err
}
