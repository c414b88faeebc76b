package main

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/schema"
)

// loadOptions are the flags shared by commands that read a config.
type loadOptions struct {
	profile               string
	allowLiteralPasswords bool
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

// renderDir loads dir, reads the lock and the profile's passwords and renders
// the profile; Kubernetes validity is the tests' job (internal/kubecheck and
// the real API server in e2e/). passwords=false renders with placeholder passwords (for vet), so no
// secret has to be present.
func renderDir(dir string, o loadOptions, getenv env, passwords bool) ([]render.Object, error) {
	cfg, err := schema.Load(dir, schema.Options{AllowLiteralPasswords: o.allowLiteralPasswords})
	if err != nil {
		return nil, err
	}
	return renderConfig(cfg, dir, o.profile, getenv, passwords)
}

func renderConfig(cfg *schema.Config, dir, profile string, getenv env, passwords bool) ([]render.Object, error) {
	l, err := readLock(dir)
	if err != nil {
		return nil, err
	}
	return renderWithLock(cfg, dir, profile, l, getenv, passwords)
}

// renderWithLock is renderConfig with the lock given rather than read (bump
// renders with the lock it is about to write).
func renderWithLock(cfg *schema.Config, dir, profile string, l *lock.Lock, getenv env, passwords bool) ([]render.Object, error) {
	sources, err := render.PasswordSources(cfg, profile)
	if err != nil {
		return nil, err
	}
	pw := map[string][]byte{}
	if passwords {
		var cs []creds.Source
		for _, s := range sources {
			cs = append(cs, creds.Source{Source: s.Source, UsedBy: s.UsedBy})
		}
		if pw, err = creds.Read(dir, cs, getenv); err != nil {
			return nil, err
		}
	} else {
		for _, s := range sources {
			pw[s.Source] = []byte("placeholder")
		}
	}
	return render.Render(render.Input{Config: cfg, Profile: profile, Lock: l, Passwords: pw})
}
