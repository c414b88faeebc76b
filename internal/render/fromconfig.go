package render

// FromConfig and FromPlan are the one way a config becomes Kubernetes
// objects, shared by the CLI (render, vet, status, bump --render) and the
// KRM function: plan the profile against the lock, read the password
// sources and trust files the plan names, render.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/trustfile"
)

// Options say where FromConfig reads password sources and trust files.
type Options struct {
	// Dir is the config directory "file:" sources and trust files are
	// relative to.
	Dir string
	// Getenv reads "env:" sources: the value and whether it is set.
	Getenv func(string) (string, bool)
	// Function reads and checks passwords under the KRM function's rule
	// (creds.Rule with Function): the operator's rule (creds.Allowed)
	// narrowed by AllowEnv, the exec declaration's --allow-env names (nil
	// when it gives none). Without Function the operator's rule alone
	// applies (creds.Read, creds.Check).
	Function bool
	AllowEnv []string
	// NoPasswords renders with a placeholder for every password instead of
	// reading it, so that no secret has to be present (vet, status).
	NoPasswords bool
	// CheckPasswords, with NoPasswords, still refuses every source Read
	// would refuse (creds.Rule.Check: variables set and non-empty, files
	// inside Dir, regular and non-empty) without reading a file's content
	// (vet).
	CheckPasswords bool
}

// Rule is the password rule o reads under.
func (o Options) Rule() creds.Rule {
	return creds.Rule{Dir: o.Dir, Function: o.Function, AllowEnv: o.AllowEnv}
}

// FromConfig renders profile of cfg ("" for the only one) with the
// digests of l: plan.Build, then FromPlan. Errors are those of each step,
// all of a step's problems at once; nothing is rendered when any step
// fails.
func FromConfig(cfg *v1alpha1.Config, profile string, l *lock.Lock, o Options) ([]Object, error) {
	p, err := plan.Build(cfg, profile, l)
	if err != nil {
		return nil, err
	}
	return FromPlan(p, cfg, l, o)
}

// FromPlan renders p, the plan of one profile of cfg with l (plan.Build):
// the plan's password sources read under o.Rule() (unless o.NoPasswords:
// then only checked as o.CheckPasswords and o.Function say), the trust
// files of its admission policies read confined and bounded (trustfile.Key,
// trustfile.TrustedRoot), then Render. Kubernetes validity is the tests' job
// (internal/testing/kubecheck and the real API server in e2e/). Errors are those
// of each step, all of a step's problems at once; nothing is rendered
// when any step fails.
func FromPlan(p *plan.Plan, cfg *v1alpha1.Config, l *lock.Lock, o Options) ([]Object, error) {
	pw, trust, err := ReadFiles(p, cfg, o)
	if err != nil {
		return nil, err
	}
	return Render(Input{Plan: p, Config: cfg, Lock: l, Passwords: pw, Trust: trust})
}

// ReadFiles is the reading step of FromPlan: the passwords of
// p.PasswordSources (Input.Passwords) and the trust files of
// p.AdmissionFiles (Input.Trust), read as FromPlan says. The password
// errors are creds'; a trust file's names the field that writes it
// ("profiles.gpu.policy: environments.driver.verify.keys[0]: ...").
func ReadFiles(p *plan.Plan, cfg *v1alpha1.Config, o Options) (passwords, trust map[string][]byte, err error) {
	pw, err := readPasswords(p.PasswordSources(), o)
	if err != nil {
		return nil, nil, err
	}
	trust = map[string][]byte{}
	keys := keysOf(cfg)
	for _, f := range p.AdmissionFiles(cfg) {
		k := trustfile.Key
		if !slices.Contains(keys, f) {
			k = trustfile.TrustedRoot
		}
		b, err := confined.ReadFile(o.Dir, f, k)
		if err != nil {
			return nil, nil, fmt.Errorf("profiles.%s.policy: %s: %w", p.Profiles[0], fieldOf(cfg, f), err)
		}
		trust[f] = b
	}
	return pw, trust, nil
}

// readPasswords reads sources as o says, or gives each a placeholder with
// o.NoPasswords (checked with o.CheckPasswords; the function's env rule
// still applies with o.Function).
func readPasswords(sources []creds.Source, o Options) (map[string][]byte, error) {
	if !o.NoPasswords {
		return o.Rule().Read(sources, o.Getenv)
	}
	var err error
	switch {
	case o.CheckPasswords:
		err = o.Rule().Check(sources, o.Getenv)
	case o.Function:
		err = o.Rule().Allowed(sources, o.Getenv)
	}
	if err != nil {
		return nil, err
	}
	pw := map[string][]byte{}
	for _, s := range sources {
		pw[s.Source] = []byte("placeholder")
	}
	return pw, nil
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
