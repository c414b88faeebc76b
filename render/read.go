package render

import (
	"errors"
	"os"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	engine "github.com/stowage/stowage/internal/render"
)

// ParseLock decodes the bytes of a stowage.lock.yaml as every stowage
// command does; filename is only used in errors. It is strict: one
// ImageLock object of v1alpha1.APIVersion, known fields only (an unknown
// or repeated field, a value of the wrong type is an error), every entry
// following the lock's rules (its name the normalised reference, digests
// sha256:<64 hex>, a known kind, platforms canonical) and no two entries
// sharing a name. Every problem is reported at once, one per line, each
// as "FILE:LINE: spec.images[I] (IMAGE): FIELD: message" without the
// parts that do not apply. The lock returned has apiVersion, kind and
// metadata as the file writes them and its entries sorted by name.
// ParseLock does no I/O.
func ParseLock(data []byte, filename string) (*v1alpha1.ImageLock, error) {
	return lock.ParseObject(data, filename)
}

// ReadLock reads the lock file at path and parses it (ParseLock), as
// `stowage render` reads DIR/stowage.lock.yaml: the file must lie inside
// path's directory after every symbolic link, be a regular file (not a
// FIFO or a device) and hold at most 32 MiB; a refusal never quotes the
// file. A missing file is an error wrapping fs.ErrNotExist: the CLI
// renders with an empty lock then (Input.Lock nil), which pins only the
// references that carry a digest.
func ReadLock(path string) (*v1alpha1.ImageLock, error) {
	data, err := lock.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return ParseLock(data, path)
}

// Needed is what Input must carry, besides the config and the lock, to
// render one profile: the keys of Input.Passwords and of Input.Trust.
type Needed struct {
	// Passwords are the password sources of the credentials the
	// profile's pull Secrets hold, as the config writes them
	// ("env:HARBOR_PASSWORD", "file:secrets/hub"; a literal password,
	// which schema.AllowLiteralPasswords lets through, is its own source),
	// sorted, each once. Empty unless the profile has secrets: render.
	Passwords []string
	// Trust are the cosign key and sigstore trusted-root files of the
	// verify policies that apply to the profile's images, paths relative
	// to the config directory as the config writes them, sorted, each
	// once. Empty unless the profile has a policy field.
	Trust []string
}

// Needs says what must be read to render profile ("" for the only one) of
// cfg, a config as schema.Load returns it. It needs no lock and does no
// I/O. Errors: an unknown profile, an OpenPAI selection that does not
// reduce, a reference that does not parse; those Render would give too.
func Needs(cfg *v1alpha1.Config, profile string) (Needed, error) {
	if cfg == nil {
		return Needed{}, errors.New("render: no config")
	}
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		return Needed{}, err
	}
	var n Needed
	for _, s := range p.PasswordSources() {
		n.Passwords = append(n.Passwords, s.Source)
	}
	n.Trust = p.AdmissionFiles(cfg)
	return n, nil
}

// ReadNeeded reads what Needs lists for profile of cfg, loaded from the
// config directory dir, as `stowage render dir` reads it, and returns the
// maps for Input.Passwords and Input.Trust. It is the one function of
// the package besides ReadLock and WriteDir that touches the file system
// or the environment:
//
//   - an "env:NAME" source is read through getenv (nil: os.LookupEnv)
//     when NAME starts with STOWAGE_ or is listed in STOWAGE_ALLOW_ENV
//     (also read through getenv), else refused;
//   - a "file:PATH" source, a key and a trusted root are read inside dir
//     after every symbolic link (os.Root), each a regular file, not of
//     /proc, of at most 64 KiB (a password file, a key) or 1 MiB (a
//     trusted root);
//   - one trailing line ending is cut from a password, and an empty one
//     is refused.
//
// Errors name the variable or file and what needs it, never a value; all
// the passwords' problems at once.
func ReadNeeded(dir string, cfg *v1alpha1.Config, profile string, getenv func(name string) (string, bool)) (passwords, trust map[string][]byte, err error) {
	if cfg == nil {
		return nil, nil, errors.New("render: no config")
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		return nil, nil, err
	}
	return engine.ReadFiles(p, cfg, engine.Options{Dir: dir, Getenv: getenv})
}
