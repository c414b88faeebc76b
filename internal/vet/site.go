package vet

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/words"
)

// siteManifests lists what the site registry must hold for the rendered
// output of profiles, their plans (each checked against its own site,
// plan.Site's rule) and of the workloads the KRM function pins (against
// the site the function rewrites them to): plan.Plan.SiteManifests of
// each, merged, one manifest once. It also returns the plan images (for
// credentials) and the site prefixes, sorted. Errors: a profile or the
// function names no site registry, or nothing is rendered or pinned.
func siteManifests(cfg *v1alpha1.Config, profiles []*plan.Plan, l *lock.Lock, workloads []plan.Workload) ([]plan.SiteManifest, []*plan.Image, []string, error) {
	var (
		out    []plan.SiteManifest
		images []*plan.Image
		sites  []string
	)
	add := func(p *plan.Plan, s *v1alpha1.Site) error {
		ms, err := p.SiteManifests(s)
		if err != nil {
			return err
		}
		out = append(out, ms...)
		images = append(images, p.Images...)
		if !slices.Contains(sites, s.Registry) {
			sites = append(sites, s.Registry)
		}
		return nil
	}
	for _, p := range profiles {
		if p.Site == nil {
			return nil, nil, nil, fmt.Errorf("--site: profile %q names no site registry (its site field, or the top-level one), so there is no site to check", p.Profiles[0])
		}
		if err := add(p, p.Site); err != nil {
			return nil, nil, nil, fmt.Errorf("profile %q: %w", p.Profiles[0], err)
		}
	}
	if len(workloads) > 0 {
		s, err := plan.Site(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		if s == nil {
			return nil, nil, nil, fmt.Errorf("--site: the functionConfig names no site registry (its site field), so the workloads it pins have no site to check")
		}
		p, err := plan.All(&v1alpha1.Config{}, l, workloads...)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := add(p, s); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(profiles) == 0 && len(workloads) == 0 {
		return nil, nil, nil, fmt.Errorf("--site: nothing is rendered or pinned, so there is nothing to check at a site")
	}
	// One manifest once, whoever names it.
	slices.SortStableFunc(out, func(a, b plan.SiteManifest) int {
		return strings.Compare(a.Repository.Name()+"@"+a.Digest, b.Repository.Name()+"@"+b.Digest)
	})
	out = slices.CompactFunc(out, func(a, b plan.SiteManifest) bool {
		return a.Repository.Name() == b.Repository.Name() && a.Digest == b.Digest
	})
	slices.SortFunc(out, func(a, b plan.SiteManifest) int {
		if c := strings.Compare(a.Reference, b.Reference); c != 0 {
			return c
		}
		return strings.Compare(a.Platform, b.Platform)
	})
	slices.Sort(sites)
	return out, images, sites, nil
}

// checkSite checks that the site registry holds every manifest the
// vetted plans' rendered output and src's workloads need
// (registry.Resolver.VerifySite), through o.Connect, and fills rep.Site.
// The error names each manifest not found.
func checkSite(ctx context.Context, src *source.Source, l *lock.Lock, vetted []*plan.Plan, o Options, rep *v1alpha1.VetReport) error {
	ms, images, sites, err := siteManifests(src.Config, vetted, l, src.Workloads)
	if err != nil {
		return err
	}
	r, done, err := o.Connect(images)
	if err != nil {
		return err
	}
	failed, err := r.VerifySite(ctx, ms)
	done()
	sr := &v1alpha1.VetSiteReport{Registries: sites, Manifests: len(ms), Missing: []v1alpha1.VetSiteMissing{}}
	for _, f := range failed {
		m := f.Manifest
		sr.Missing = append(sr.Missing, v1alpha1.VetSiteMissing{Reference: m.Reference, Digest: m.Digest, Platform: m.Platform,
			Image: m.Image.Key, UsedBy: m.Image.UsedBy(), NotFound: f.Missing, Message: f.Err.Error()})
	}
	rep.Site = sr
	if err != nil {
		return fmt.Errorf("the site registry (%s) lacks or could not confirm %d of %s the rendered output needs: %w",
			strings.Join(sites, ", "), len(failed), words.Count(len(ms), "manifest"), err)
	}
	return nil
}
