package mirror

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Bounds on the search for blobs held elsewhere at a destination registry.
const (
	// MaxCatalogPages bounds the pages of a registry's catalog read once
	// per run (go-containerregistry's pages of 1,000 repositories).
	MaxCatalogPages = 10
	// MaxMountCandidates bounds the other repositories asked (one HEAD
	// each) whether they hold a blob no repository of the run holds.
	MaxMountCandidates = 2
)

// elsewhere finds, for blobs no destination repository of the run holds,
// another repository of the same registry that does, so that they are
// mounted from there and no byte moves: a copy of the same images under
// another prefix of the site (a previous `stowage mirror --to
// SITE/OTHER`), told by the registry's own answers. The registry's
// catalog (GET /v2/_catalog, read once per registry and run, at most
// MaxCatalogPages pages) names its repositories; the candidates for a
// blob are those, other than the run's, whose path ends with the source
// path of an image needing it ("team/app" for "site/a/team/app"), nearest
// first (sorted by name), at most MaxMountCandidates, each asked with one
// HEAD. A registry that does not serve its catalog (most hosted ones
// refuse it), or a HEAD that fails, gives no candidate: the blob is
// uploaded as before. want maps each blob to the repositories that need it
// and an image of each (for its source path); the answer maps a blob to
// the repository holding it.
func (m *Mirror) elsewhere(ctx context.Context, want map[v1.Hash][]mount) map[v1.Hash]name.Repository {
	if len(want) == 0 {
		return nil
	}
	if _, ok := m.dst.(*registrySink); !ok {
		return nil
	}
	run := map[string]bool{}
	registries := map[string]name.Registry{}
	for _, ms := range want {
		for _, mt := range ms {
			run[mt.repo.Name()] = true
			registries[mt.repo.RegistryStr()] = mt.repo.Registry
		}
	}
	catalogs := map[string][]string{}
	var mu sync.Mutex
	var regs []name.Registry
	for _, reg := range registries {
		regs = append(regs, reg)
	}
	each(m.jobs, len(regs), func(i int) {
		repos := m.catalog(ctx, regs[i])
		mu.Lock()
		catalogs[regs[i].RegistryStr()] = repos
		mu.Unlock()
	})
	type ask struct {
		h     v1.Hash
		cands []name.Repository
	}
	var asks []ask
	for h, ms := range want {
		seen := map[string]bool{}
		var cands []name.Repository
		for _, mt := range ms {
			suffix := mt.img.Source.RepositoryStr()
			for _, path := range catalogs[mt.repo.RegistryStr()] {
				full := mt.repo.Registry.Repo(path)
				if run[full.Name()] || seen[full.Name()] || (path != suffix && !strings.HasSuffix(path, "/"+suffix)) {
					continue
				}
				seen[full.Name()] = true
				cands = append(cands, full)
			}
		}
		if len(cands) == 0 {
			continue
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i].Name() < cands[j].Name() })
		asks = append(asks, ask{h, cands[:min(len(cands), MaxMountCandidates)]})
	}
	found := map[v1.Hash]name.Repository{}
	each(m.jobs, len(asks), func(i int) {
		for _, c := range asks[i].cands {
			if ok, err := m.dst.hasBlob(ctx, c, asks[i].h); err == nil && ok {
				mu.Lock()
				found[asks[i].h] = c
				mu.Unlock()
				return
			}
		}
	})
	return found
}

// catalog lists the repositories of reg (paths, without the host), nil
// when the registry does not serve its catalog.
func (m *Mirror) catalog(ctx context.Context, reg name.Registry) []string {
	_, _, p, err := m.o.resolver.Destination(reg.Repo("catalog"))
	if err != nil {
		return nil
	}
	c, err := p.Catalogger(ctx, reg)
	if err != nil {
		return nil
	}
	var repos []string
	for page := 0; page < MaxCatalogPages && c.HasNext(); page++ {
		got, err := c.Next(ctx)
		if err != nil {
			return repos
		}
		repos = append(repos, got.Repos...)
	}
	return repos
}
