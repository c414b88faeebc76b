package source

import (
	"fmt"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

// Plans are the image plans of a source's profiles against one lock,
// each built once (plan.Build) however often a run asks for it: the
// render, the pull Secrets it names, who may use a copy, the site's
// manifests and the digests to verify all read the same plan.
type Plans struct {
	cfg       *v1alpha1.Config
	lock      *lock.Lock
	workloads []plan.Workload
	built     map[string]built
	all       *built
}

// built is one plan.Build's outcome.
type built struct {
	p   *plan.Plan
	err error
}

// Plans returns the plans of s's profiles against l (nil: only the digests
// written in the config pin), none built yet.
func (s *Source) Plans(l *lock.Lock) *Plans {
	return &Plans{cfg: s.Config, lock: l, workloads: s.Workloads, built: map[string]built{}}
}

// Profile returns the plan of profile ("" for the only one): plan.Build's
// plan and error, the same on every call.
func (ps *Plans) Profile(profile string) (*plan.Plan, error) {
	b, ok := ps.built[profile]
	if !ok {
		b.p, b.err = plan.Build(ps.cfg, profile, ps.lock)
		ps.built[profile] = b
	}
	return b.p, b.err
}

// All returns plan.All of the source: every profile's images (Profile's
// plans) and the workloads the function pins, one Image per lock key.
// Errors: plan.All's, in its order (the workloads' first, then a
// profile's, prefixed with its name).
func (ps *Plans) All() (*plan.Plan, error) {
	if ps.all != nil {
		return ps.all.p, ps.all.err
	}
	b := &built{}
	ps.all = b
	if len(ps.workloads) > 0 {
		// The workloads' errors first, as plan.All says them.
		if _, b.err = plan.Union(ps.cfg, ps.lock, nil, ps.workloads...); b.err != nil {
			return nil, b.err
		}
	}
	var plans []*plan.Plan
	for _, name := range ps.cfg.ProfileNames() {
		p, err := ps.Profile(name)
		if err != nil {
			b.err = fmt.Errorf("profile %q: %w", name, err)
			return nil, b.err
		}
		plans = append(plans, p)
	}
	b.p, b.err = plan.Union(ps.cfg, ps.lock, plans, ps.workloads...)
	return b.p, b.err
}

// LockInputs is what lock and bump start from, once s is loaded: every
// image of s (Plans(nil).All, with the workloads the function pins) and
// the lock as ReadLock(repair) reads it (empty when the file does not
// exist). Errors: NeedLock's, All's and ReadLock's, in that order.
func (s *Source) LockInputs(repair func(dropped error)) ([]*plan.Image, *LockFile, error) {
	if err := s.NeedLock(); err != nil {
		return nil, nil, err
	}
	all, err := s.Plans(nil).All()
	if err != nil {
		return nil, nil, err
	}
	lf, err := s.ReadLock(repair)
	if err != nil {
		return nil, nil, err
	}
	return all.Images, lf, nil
}
