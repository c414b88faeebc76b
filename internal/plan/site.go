package plan

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/site"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
)

// Site is the one rule that decides which site registry applies, shared by
// render, the KRM function (its pre-pulled images and the workloads it
// pins), lock --via-site, mirror, vet, status and `openpai services`:
//
//   - for a profile, its effective site: the profile's own site fields over
//     the top-level site's, field by field (schema.Load applies that default,
//     so v1alpha1.Profile.Site holds it);
//   - for a config without profiles (a functionConfig that only pins), the
//     top-level site;
//   - for several profiles (profiles names them; none names every profile of
//     cfg), the site they all have, which must be the same one: profiles
//     that name different sites, or some a site and some none, are an
//     ambiguity, never resolved by picking one.
//
// It returns nil when no site applies (references are then used as
// written). Errors: a profile cfg lacks (v1alpha1.Config.Profile's error; ""
// is the only profile), a top-level site without a default prefix for a
// config without profiles, and a *SiteError naming the profiles of each
// site when they disagree.
func Site(cfg *v1alpha1.Config, profiles ...string) (*v1alpha1.Site, error) {
	if len(profiles) == 0 {
		if len(cfg.Profiles) == 0 {
			s := cfg.Site
			if s == nil {
				return nil, nil
			}
			if s.Registry == "" {
				return nil, fmt.Errorf("site.registry is required with a site: the default prefix (host[:port][/path]) for registries not in site.registries")
			}
			return s, nil
		}
		profiles = cfg.ProfileNames()
	}
	var groups []SiteGroup
	var sites []*v1alpha1.Site
	for _, p := range profiles {
		name, prof, err := cfg.Profile(p)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(sites, func(s *v1alpha1.Site) bool { return sameSite(s, prof.Site) })
		if i < 0 {
			sites = append(sites, prof.Site)
			groups = append(groups, SiteGroup{Site: siteText(prof.Site)})
			i = len(sites) - 1
		}
		if !slices.Contains(groups[i].Profiles, name) {
			groups[i].Profiles = append(groups[i].Profiles, name)
		}
	}
	if len(sites) > 1 {
		for i := range groups {
			slices.Sort(groups[i].Profiles)
		}
		slices.SortFunc(groups, func(a, b SiteGroup) int { return strings.Compare(a.Profiles[0], b.Profiles[0]) })
		return nil, &SiteError{Groups: groups}
	}
	return sites[0], nil
}

// SiteGroup is a site registry and the profiles whose effective site it is.
type SiteGroup struct {
	// Site is the site as text: its default prefix, then each
	// site.registries entry as REGISTRY=PREFIX (sorted), comma-separated;
	// "no site registry" for none.
	Site string
	// Profiles are the profiles' names, sorted.
	Profiles []string
}

// SiteError is an ambiguous site: the profiles asked about name different
// site registries (or some one and some none). Groups are sorted by their
// first profile.
type SiteError struct {
	Groups []SiteGroup
}

// Error names every profile with its site: `the profiles name different
// site registries: profile "a": reg.a:5000/mirror; profiles "b", "c": no
// site registry`.
func (e *SiteError) Error() string {
	parts := make([]string, 0, len(e.Groups))
	for _, g := range e.Groups {
		q := make([]string, len(g.Profiles))
		for i, p := range g.Profiles {
			q[i] = fmt.Sprintf("%q", p)
		}
		word := "profile"
		if len(q) > 1 {
			word = "profiles"
		}
		parts = append(parts, fmt.Sprintf("%s %s: %s", word, strings.Join(q, ", "), g.Site))
	}
	return "the profiles name different site registries: " + strings.Join(parts, "; ")
}

// sameSite reports whether a and b map every reference alike (nil is no
// site).
func sameSite(a, b *v1alpha1.Site) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Registry == b.Registry && maps.Equal(a.Registries, b.Registries)
}

func siteText(s *v1alpha1.Site) string {
	if s == nil {
		return "no site registry"
	}
	parts := []string{s.Registry}
	for _, from := range slices.Sorted(maps.Keys(s.Registries)) {
		parts = append(parts, from+"="+s.Registries[from])
	}
	return strings.Join(parts, ", ")
}

// SiteManifest is one manifest a site registry must hold so that a node
// pulls a use of the plan with no other registry reachable.
type SiteManifest struct {
	// Image is the plan's image the manifest belongs to.
	Image *Image
	// Reference is the reference the rendered output names, pinned:
	// "<site repository>[:tag]@sha256:…" (an index child's is its
	// index's).
	Reference string
	// Repository is the site repository, parsed.
	Repository name.Repository
	// Digest is the manifest's digest, "sha256:…": the pin, or one child
	// of a pinned index.
	Digest string
	// Platform is the child's platform as the lock records it
	// ("linux/arm64/v8"); "" for the pin itself.
	Platform string
}

// SiteManifests lists what site registry s must hold for every pinned use
// of p: each pinned digest at the use's site repository (site.Mapping's
// rule, as render names it), and for a pin that is the lock entry's index,
// every child the lock records (each node pulls its own platform); for a
// plan of Build, also the images of the OpenPAI lists that no puller
// pre-pulls but the lock pins (OpenPAIList). The
// list is sorted by reference, then platform, each manifest once; uses
// without a digest are left out (render refuses them, naming each).
// Errors: s is nil, or a reference does not map (*site.Error).
func (p *Plan) SiteManifests(s *v1alpha1.Site) ([]SiteManifest, error) {
	if s == nil {
		return nil, errors.New("no site registry applies")
	}
	m := site.Of(s)
	seen := map[string]bool{}
	var out []SiteManifest
	add := func(sm SiteManifest) {
		id := sm.Repository.Name() + "@" + sm.Digest
		if !seen[id] {
			seen[id] = true
			out = append(out, sm)
		}
	}
	for _, img := range p.Images {
		for _, u := range img.Uses {
			d := u.Pin.Digest
			if d == "" {
				continue
			}
			repo, err := m.Repository(u.Ref.Repository)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", u.UsedBy(), err)
			}
			at, err := SiteReference(s, u.Ref)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", u.UsedBy(), err)
			}
			ref := at + "@" + d
			add(SiteManifest{Image: img, Reference: ref, Repository: repo, Digest: d})
			if e := img.Entry; e != nil && e.Kind == lock.KindIndex && e.Digest == d {
				for _, c := range e.Platforms {
					add(SiteManifest{Image: img, Reference: ref, Repository: repo, Digest: c.Digest, Platform: c.Platform})
				}
			}
		}
	}
	// The OpenPAI lists also name the images of roles no puller
	// pre-pulls, pinned from the lock (OpenPAIList).
	if p.OpenPAI != nil {
		for _, role := range slices.Sorted(maps.Keys(p.OpenPAI.Images)) {
			for _, w := range p.OpenPAI.Images[role] {
				ref, err := imageref.Parse(w)
				if err != nil {
					return nil, fmt.Errorf("OpenPAI image %q: %w", w, err)
				}
				if p.Image(ref.Key()) != nil {
					continue
				}
				e, ok := p.lock.Lookup(ref.Key())
				if !ok {
					continue
				}
				img := &Image{Key: ref.Key(), Ref: ref, Entry: &e,
					Uses: []*Use{{Profile: p.Profiles[0], Kind: KindOpenPAI, Name: string(role), Ref: ref, Pin: PinOf(ref, nil, p.lock)}}}
				one := &Plan{Images: []*Image{img}}
				ms, err := one.SiteManifests(s)
				if err != nil {
					return nil, err
				}
				for _, m := range ms {
					add(m)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b SiteManifest) int {
		return cmp.Or(strings.Compare(a.Reference, b.Reference), strings.Compare(a.Platform, b.Platform))
	})
	return out, nil
}

// SiteMapping returns the mapping (site.Of) of the site registry that
// applies to the whole of cfg, by Site's rule with no profile named: the
// one every profile has, or a config without profiles' top-level site.
// It is where `stowage lock --via-site` reads every image. Errors: Site's
// (a *SiteError when the profiles disagree), or that no site applies.
func SiteMapping(cfg *v1alpha1.Config) (site.Mapping, error) {
	s, err := Site(cfg)
	if err != nil {
		return site.Mapping{}, err
	}
	if s == nil {
		return site.Mapping{}, errors.New("the config names no site registry (its site field, top-level or in a profile)")
	}
	return site.Of(s), nil
}
