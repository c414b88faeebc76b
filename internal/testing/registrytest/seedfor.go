package registrytest

import (
	"sort"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
)

// Seed is what one test registry must hold, and how stowage must be told to
// use it, for `stowage lock` to lock a config from stand-ins while the lock
// keeps the images' real names: each registry the config names is mirrored
// at Host/MirrorPath(registry).
type Seed struct {
	// Refs are the references to seed, as written, one per lock key;
	// references with a written digest are left out (no stand-in matches
	// them).
	Refs []string
	// Mirrors maps each registry of the config (as pkg/name normalises it)
	// to "Host/MirrorPath(registry)".
	Mirrors map[string]string
}

// SeedFor is the Seed of cfg and the images the KRM function pins in
// workloads, for a registry at host ("127.0.0.1:5000").
func SeedFor(cfg *v1alpha1.Config, host string, workloads ...plan.Workload) (Seed, error) {
	all, err := plan.All(cfg, nil, workloads...)
	if err != nil {
		return Seed{}, err
	}
	p := Seed{Mirrors: map[string]string{}}
	for _, img := range all.Images {
		reg := img.Ref.Registry()
		p.Mirrors[reg] = host + "/" + MirrorPath(reg)
		if img.Ref.Digest == "" {
			p.Refs = append(p.Refs, img.Ref.Written)
		}
	}
	return p, nil
}

// Flags are the --mirror flags of the plan, sorted.
func (p Seed) Flags() []string {
	var regs []string
	for r := range p.Mirrors {
		regs = append(regs, r)
	}
	sort.Strings(regs)
	var out []string
	for _, r := range regs {
		out = append(out, "--mirror", r+"="+p.Mirrors[r])
	}
	return out
}

// Options are the plan's mirrors as resolver options, for seeding.
func (p Seed) Options() []registry.Option {
	var out []registry.Option
	for from, to := range p.Mirrors {
		out = append(out, registry.WithMirror(from, to))
	}
	return out
}
