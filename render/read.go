package render

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/trustfile"
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
// opts change how the passwords are read (FunctionRule, Placeholders);
// the trust files are read the same way whatever they say.
//
// Errors name the variable or file and what needs it, never a value; all
// the passwords' problems at once (as a list of problems each at the
// place the config writes the password, for a caller that places them).
// A trust file's error names the policy and the field that writes the
// file ("profiles.gpu.policy: environments.driver.verify.keys[0]: ...").
func ReadNeeded(dir string, cfg *v1alpha1.Config, profile string, getenv func(name string) (string, bool), opts ...ReadOption) (passwords, trust map[string][]byte, err error) {
	if cfg == nil {
		return nil, nil, errors.New("render: no config")
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	var o readSettings
	for _, opt := range opts {
		opt(&o)
	}
	_, prof, err := cfg.Profile(profile)
	if err != nil {
		return nil, nil, err
	}
	if prof.Policy == nil && (prof.Secrets != v1alpha1.SecretsRender || !anyPassword(cfg)) {
		// Nothing to read (Needs would list nothing): the plan, whose
		// errors Render gives too, is not built twice.
		return map[string][]byte{}, map[string][]byte{}, nil
	}
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		return nil, nil, err
	}
	rule := creds.Rule{Dir: dir, Function: o.function, AllowEnv: o.allowEnv}
	sources := p.PasswordSources()
	switch {
	case !o.placeholders:
		passwords, err = rule.Read(sources, getenv)
	case o.check:
		err = rule.Check(sources, getenv)
	}
	if err != nil {
		return nil, nil, err
	}
	if o.placeholders {
		passwords = map[string][]byte{}
		for _, s := range sources {
			passwords[s.Source] = []byte("placeholder")
		}
	}
	trust = map[string][]byte{}
	keys := keysOf(cfg)
	for _, f := range p.AdmissionFiles(cfg) {
		k := trustfile.Key
		if !slices.Contains(keys, f) {
			k = trustfile.TrustedRoot
		}
		b, err := confined.ReadFile(dir, f, k)
		if err != nil {
			return nil, nil, fmt.Errorf("profiles.%s.policy: %s: %w", p.Profiles[0], fieldOf(cfg, f), err)
		}
		trust[f] = b
	}
	return passwords, trust, nil
}

// anyPassword says whether an image or environment of cfg has a
// password source: the only places a pull Secret's password comes from.
func anyPassword(cfg *v1alpha1.Config) bool {
	for _, im := range cfg.Images {
		if im.Auth != nil && im.Auth.Password != "" {
			return true
		}
	}
	for _, e := range cfg.Environments {
		if e.Auth != nil && e.Auth.Password != "" {
			return true
		}
	}
	return false
}

// ReadOption changes how ReadNeeded reads the passwords: FunctionRule,
// Placeholders.
type ReadOption func(*readSettings)

// readSettings are the ReadOptions of one ReadNeeded.
type readSettings struct {
	function     bool
	allowEnv     []string
	placeholders bool
	check        bool
}

// FunctionRule reads the passwords under the KRM function's rule, as
// `stowage fn` reads them: an "env:NAME" source only when NAME starts
// with STOWAGE_ or the operator lists it in STOWAGE_ALLOW_ENV and, when
// allowEnv is not nil (the exec declaration's --allow-env names), allowEnv
// lists it too: the declaration may narrow the operator's list, never
// widen it.
func FunctionRule(allowEnv []string) ReadOption {
	return func(s *readSettings) { s.function, s.allowEnv = true, allowEnv }
}

// Placeholders reads no password: every source the profile needs maps to
// the bytes "placeholder", so that the profile renders without its
// secrets present (`stowage vet` and `stowage status` render so; the
// Secrets then hold no password). With check, each source is still
// refused where reading it would be (a variable not allowed, unset or
// empty; a file outside dir, not regular or empty), without reading a
// file's content, with reading's errors.
func Placeholders(check bool) ReadOption {
	return func(s *readSettings) { s.placeholders, s.check = true, check }
}

// fieldOf names the first field (in the order top level, images,
// environments, profiles, each by name) whose verify policy writes path
// as a key or trusted root: "environments.driver.verify.keys[0]".
func fieldOf(cfg *v1alpha1.Config, path string) string {
	type at struct {
		field string
		v     *v1alpha1.Verify
	}
	all := []at{{"verify", cfg.Verify}}
	for _, n := range slices.Sorted(maps.Keys(cfg.Images)) {
		all = append(all, at{"images." + n + ".verify", cfg.Images[n].Verify})
	}
	for _, n := range slices.Sorted(maps.Keys(cfg.Environments)) {
		all = append(all, at{"environments." + n + ".verify", cfg.Environments[n].Verify})
	}
	for _, n := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		all = append(all, at{"profiles." + n + ".verify", cfg.Profiles[n].Verify})
	}
	for _, a := range all {
		if a.v == nil {
			continue
		}
		if i := slices.Index(a.v.Keys, path); i >= 0 {
			return fmt.Sprintf("%s.keys[%d]", a.field, i)
		}
		if a.v.TrustedRoot == path {
			return a.field + ".trustedRoot"
		}
	}
	return "verify"
}

// keysOf lists every key path the config's verify policies write.
func keysOf(cfg *v1alpha1.Config) []string {
	var out []string
	add := func(v *v1alpha1.Verify) {
		if v != nil {
			out = append(out, v.Keys...)
		}
	}
	add(cfg.Verify)
	for _, im := range cfg.Images {
		add(im.Verify)
	}
	for _, e := range cfg.Environments {
		add(e.Verify)
	}
	for _, pr := range cfg.Profiles {
		add(pr.Verify)
	}
	return out
}
