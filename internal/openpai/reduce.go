package openpai

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Selection is what a user asks of OpenPAI: the features to keep working,
// extra services to keep, services to drop, and the registry of OpenPAI's
// own images.
type Selection struct {
	// Version is the OpenPAI release, e.g. "v1.5.0" (see SupportedVersions).
	Version string
	// Features are names from Features(); their root services are kept.
	Features []string
	// Keep lists extra services to keep, with their prerequisites.
	Keep []string
	// Drop lists services that must not be started. Dropping a service that
	// the selection does not need anyway is accepted and changes nothing.
	Drop []string
	// Registry is the OpenPAI image registry; empty fields take the
	// defaults of Registry.WithDefaults.
	Registry Registry
}

// Reduction is the reduced OpenPAI service list for one Selection.
type Reduction struct {
	// Version is the OpenPAI release the reduction is for.
	Version string
	// Registry is the registry used for OpenPAI images, defaults applied.
	Registry Registry
	// Kept are the services to start, sorted; Dropped are the other k8s
	// services of the version, sorted. Together they are all of them.
	Kept, Dropped []string
	// StartOrder is Kept ordered so that every service comes after its
	// prerequisites: Kahn's algorithm taking the smallest ready name first.
	StartOrder []string
	// PaictlArgs are the arguments of deployment/serviceCmd.py that start
	// exactly Kept: ["service", "start", "-n", StartOrder...]. paictl does not
	// add prerequisites by itself, which is why Kept is closed over them.
	PaictlArgs []string
	// Images maps each of ImageRoles() to the concrete references the Kept
	// services pull on nodes of that role: sorted, without duplicates, with
	// Registry applied. Service.JobImages count for RoleWorker.
	Images map[Role][]string
	// FullImages is Images for every k8s service of the version: what a
	// plain "paictl service start" can pull.
	FullImages map[Role][]string
	// KeptBy says why each service of Kept is kept, keyed by service name.
	KeptBy map[string]Reason
}

// Reason is why a service is kept: the shortest prerequisite chain from a
// root of the selection to it, and what made that root a root.
type Reason struct {
	// Feature is the feature whose roots include Chain[0], or "" when the
	// selection's keep list names Chain[0].
	Feature string
	// Chain runs from the root to the service itself, each service a
	// declared prerequisite of the one before it; a root's chain is just
	// itself. Ties between equally short chains resolve in name order.
	Chain []string
}

// String is "feature job-submission: rest-server -> postgresql", or
// "keep: pylon" for a root the keep list names.
func (r Reason) String() string {
	by := "keep"
	if r.Feature != "" {
		by = "feature " + r.Feature
	}
	return by + ": " + strings.Join(r.Chain, " -> ")
}

// Reduce computes the smallest service set for sel: the roots of
// sel.Features plus sel.Keep, closed over Service.Prerequisites. It then
// checks sel.Drop against that set.
//
// Every problem is reported at once, as an errors.Join of:
//   - *UnsupportedVersionError when sel.Version has no graph (names are
//     then not checked, there is nothing to check them against);
//   - *EmptySelectionError when sel has no features and no kept services;
//   - *UnknownError for each unknown feature or service name (first
//     occurrence of a name per field; repeating a valid name is fine);
//   - *RequiredError for each dropped service the kept set needs;
//   - *RegistryError for a bad registry field.
func Reduce(sel Selection) (*Reduction, error) {
	var errs []error
	g, err := Load(sel.Version)
	if err != nil {
		errs = append(errs, err)
	}
	if len(sel.Features) == 0 && len(sel.Keep) == 0 {
		errs = append(errs, &EmptySelectionError{Features: Features()})
	}
	reg := sel.Registry.WithDefaults(sel.Version)
	if g == nil {
		return nil, errors.Join(append(errs, reg.Validate())...)
	}
	r := &reducer{g: g, errs: errs, names: g.Names(), origin: map[string]string{}, reported: map[string]bool{}}
	for f := range g.Features {
		r.features = append(r.features, f)
	}
	sort.Strings(r.features)
	r.selectFeatures(sel.Features)
	r.keepServices(sel.Keep)
	roots := make([]string, 0, len(r.origin))
	for root := range r.origin {
		roots = append(roots, root)
	}
	sort.Strings(roots)
	kept := g.Closure(roots)
	r.checkDrops(sel.Drop, roots, kept)
	if err := reg.Validate(); err != nil {
		r.errs = append(r.errs, err)
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return r.reduction(reg, roots, kept), nil
}

// reducer is the state Reduce shares between its steps.
type reducer struct {
	g *Graph
	// errs are the problems found so far, in Reduce's order; reported
	// the field and name of each unknown or required name reported once.
	errs     []error
	reported map[string]bool
	// names are the graph's services and features its features, sorted.
	names, features []string
	// origin maps each root to the feature that brought it in, or ""
	// when Keep lists it; Keep wins, then the feature that sorts first.
	origin map[string]string
}

// selectFeatures adds the roots of the features listed (each once, in
// sorted order) and reports each unknown one once, with a suggestion, or
// the reason when it is a service.
func (r *reducer) selectFeatures(listed []string) {
	var selected []string
	for i, f := range listed {
		if _, ok := r.g.Features[f]; ok {
			selected = append(selected, f)
			continue
		}
		if r.reported["features\x00"+f] {
			continue
		}
		r.reported["features\x00"+f] = true
		e := &UnknownError{Kind: "feature", Field: "features", Index: i, Name: f, Version: r.g.Version,
			Suggestion: nearest(f, r.features)}
		if _, ok := r.g.Services[f]; ok {
			e.Reason = "it is a service; list it under keep"
			e.Suggestion = ""
		}
		r.errs = append(r.errs, e)
	}
	slices.Sort(selected)
	for _, f := range slices.Compact(selected) {
		for _, root := range r.g.Features[f] {
			if _, ok := r.origin[root]; !ok {
				r.origin[root] = f
			}
		}
	}
}

// keepServices makes each service of keep a root of its own and reports
// each unknown one.
func (r *reducer) keepServices(keep []string) {
	for i, k := range keep {
		if _, ok := r.g.Services[k]; !ok {
			r.unknownService("keep", i, k)
			continue
		}
		r.origin[k] = ""
	}
}

// unknownService reports n, not a service, at field's index i, once per
// field and name: with a suggestion, or the reason when it is yarn-only
// or a feature.
func (r *reducer) unknownService(field string, i int, n string) {
	if r.reported[field+"\x00"+n] {
		return
	}
	r.reported[field+"\x00"+n] = true
	e := &UnknownError{Kind: "service", Field: field, Index: i, Name: n, Version: r.g.Version,
		Suggestion: nearest(n, r.names)}
	switch {
	case slices.Contains(r.g.YarnOnly, n):
		e.Reason = "it is yarn-only (cluster-type yarn), paictl never starts it on k8s"
		e.Suggestion = ""
	case slices.Contains(r.features, n):
		e.Reason = "it is a feature; list it under features"
		e.Suggestion = ""
	}
	r.errs = append(r.errs, e)
}

// checkDrops reports each service of drop that is unknown, or that kept
// (the closure of roots) needs, with the shortest chain that needs it.
func (r *reducer) checkDrops(drop, roots, kept []string) {
	for i, d := range drop {
		if _, ok := r.g.Services[d]; !ok {
			r.unknownService("drop", i, d)
			continue
		}
		if !slices.Contains(kept, d) || r.reported["drop\x00"+d] {
			continue
		}
		r.reported["drop\x00"+d] = true
		chain := shortestChain(r.g, roots, d)
		r.errs = append(r.errs, &RequiredError{Field: "drop", Index: i, Name: d,
			RequiredBy: chain[0], Chain: chain, Feature: r.origin[chain[0]]})
	}
}

// reduction is the reduced install of kept, the closure of roots, with
// registry reg: what is dropped, the start order and paictl's arguments,
// the images of the reduced and the full install, and why each kept
// service is kept.
func (r *reducer) reduction(reg Registry, roots, kept []string) *Reduction {
	g := r.g
	var dropped []string
	for _, n := range r.names {
		if !slices.Contains(kept, n) {
			dropped = append(dropped, n)
		}
	}
	order := startOrder(g, kept)
	keptBy := make(map[string]Reason, len(kept))
	for _, k := range kept {
		chain := shortestChain(g, roots, k)
		keptBy[k] = Reason{Feature: r.origin[chain[0]], Chain: chain}
	}
	return &Reduction{
		Version:    g.Version,
		Registry:   reg,
		Kept:       kept,
		Dropped:    dropped,
		StartOrder: order,
		PaictlArgs: append([]string{"service", "start", "-n"}, order...),
		Images:     images(g, kept, reg),
		FullImages: images(g, r.names, reg),
		KeptBy:     keptBy,
	}
}

// shortestChain returns the shortest path from one of roots (sorted) to
// target over prerequisites, as [root, ..., target]. The search is a
// breadth-first search from all roots at once that visits prerequisites in
// sorted order, so ties resolve the same way on every run.
func shortestChain(g *Graph, roots []string, target string) []string {
	parent := map[string]string{}
	seen := map[string]bool{}
	queue := append([]string(nil), roots...)
	for _, r := range roots {
		seen[r] = true
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == target {
			chain := []string{n}
			for n != "" {
				p, ok := parent[n]
				if !ok {
					break
				}
				chain = append(chain, p)
				n = p
			}
			slices.Reverse(chain)
			return chain
		}
		prereqs := slices.Clone(g.Services[n].Prerequisites)
		sort.Strings(prereqs)
		for _, p := range prereqs {
			if !seen[p] {
				seen[p] = true
				parent[p] = n
				queue = append(queue, p)
			}
		}
	}
	// Not reachable: callers only ask for targets in the closure of roots.
	panic(fmt.Sprintf("openpai: %s not reachable from %v", target, roots))
}

// startOrder orders the services in set (all in g) so that each comes after
// its prerequisites, picking the smallest ready name at every step.
func startOrder(g *Graph, set []string) []string {
	in := map[string]bool{}
	for _, n := range set {
		in[n] = true
	}
	pending := map[string]int{}
	dependents := map[string][]string{}
	for _, n := range set {
		for _, p := range g.Services[n].Prerequisites {
			if in[p] {
				pending[n]++
				dependents[p] = append(dependents[p], n)
			}
		}
	}
	var ready, order []string
	for _, n := range set {
		if pending[n] == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		sort.Strings(ready)
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, d := range dependents[n] {
			pending[d]--
			if pending[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(order) != len(set) {
		panic("openpai: prerequisite cycle in the " + g.Version + " graph")
	}
	return order
}

// images returns, for each of ImageRoles(), the sorted distinct concrete
// references pulled by the services in set.
func images(g *Graph, set []string, reg Registry) map[Role][]string {
	out := map[Role][]string{}
	for _, r := range ImageRoles() {
		out[r] = []string{}
	}
	for _, u := range imageUses(g, set) {
		out[u.role] = append(out[u.role], reg.Expand(u.template))
	}
	for r, refs := range out {
		sort.Strings(refs)
		out[r] = slices.Compact(refs)
	}
	return out
}

// imageUse is one image template pulled on nodes of one role.
type imageUse struct {
	role     Role
	template string
}

// imageUses lists the image templates of the services in set per role,
// without duplicates, in a stable order: Images on each of the service's
// roles, JobImages on RoleWorker.
func imageUses(g *Graph, set []string) []imageUse {
	var out []imageUse
	seen := map[imageUse]bool{}
	add := func(u imageUse) {
		if u.role != RoleNone && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	for _, n := range set {
		s := g.Services[n]
		for _, r := range s.Roles {
			for _, t := range s.Images {
				add(imageUse{r, t})
			}
		}
		for _, t := range s.JobImages {
			add(imageUse{RoleWorker, t})
		}
	}
	return out
}
