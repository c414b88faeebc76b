// Package vet is `stowage vet`'s one flow, for a config directory and for
// a kustomization that runs stowage as a KRM function alike: every
// profile planned against the lock and rendered without passwords (by the
// function itself, in process, for a kustomization), the lock's
// signatures checked against the verify policies, and on request the
// site registry's copies (--site) and every pinned digest in its registry
// (--remote). What it finds goes into a v1alpha1.VetReport.
package vet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/diskbudget"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	engine "github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/verifypolicy"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// Options are what a vet run needs besides its source.
type Options struct {
	// Profile, when set, is the only profile vetted (a config directory
	// only; source.Source.Profiles refuses it for a kustomization).
	Profile string
	// Remote checks that every pinned digest exists in its registry;
	// Site that the site registry holds every pinned reference the
	// rendered output names, index children included.
	Remote, Site bool
	// Getenv reads the environment: env: password sources are checked
	// (not read) through it, and the function reads it as kustomize
	// would run it.
	Getenv func(string) (string, bool)
	// Executable is this binary's path, which a kustomization's exec
	// declaration must name (kustomization.OwnExec).
	Executable string
	// Schema are the options the function loads its functionConfig with.
	Schema []schema.Option
	// InputSize is the size of the ResourceList kustomize would hand the
	// function for a build.
	InputSize func(*kustomization.Build) (int64, error)
	// Connect returns a registry client that holds the credentials of
	// images, and a function that ends its progress output; called for
	// --remote and --site only.
	Connect func(images []*plan.Image) (*registry.Resolver, func(), error)
	// Warnings receives the function's warnings about a kustomization's
	// items, one "stowage: file:line: warning: …" line each, and the disk
	// budget's warnings (diskbudget.WriteVet).
	Warnings io.Writer
	// EveryPool writes every node pool's disk budget line to Warnings,
	// not only the pools that do not fit (vet -v with the text report).
	EveryPool bool
}

// Run vets src with o and fills rep (Profiles, Objects, ExternalSecrets,
// Images, Unpinned, Workloads, and PinnedDigests and Site when asked).
// Errors: the first problem found, as render, the function, the lock or
// the registries word it; rep holds what was learned until then.
func Run(ctx context.Context, src *source.Source, o Options, rep *v1alpha1.VetReport) error {
	cfg := src.Config
	if b := src.Kustomization; b != nil {
		// The exec declaration must be stowage's own, as `cmp generate`
		// requires before it runs the function.
		if _, err := kustomization.OwnExec(b.FunctionConfig, b.FunctionFile, o.Executable); err != nil {
			return err
		}
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		return err
	}
	l := lf.Lock
	plans := src.Plans(l)
	var (
		r    *registry.Resolver
		done func()
		all  *plan.Plan
	)
	if o.Remote {
		// Registry flags are checked before anything is rendered, with
		// the credentials of every profile's images.
		if all, err = plans.All(); err != nil {
			return err
		}
		if r, done, err = o.Connect(all.Images); err != nil {
			return err
		}
	}
	dss := map[string][]*appsv1.DaemonSet{}
	if src.Kustomization != nil {
		if rep.Objects, dss, err = runFunction(src, o, rep); err != nil {
			return err
		}
		rep.Workloads = len(src.Workloads)
	}
	profiles, err := src.Profiles(o.Profile)
	if err != nil {
		return err
	}
	rep.Profiles = append(rep.Profiles, profiles...)
	var vetted []*plan.Plan
	for _, name := range profiles {
		p, err := plans.Profile(name)
		if err == nil && src.Kustomization == nil {
			// The profile is rendered once, with placeholder passwords,
			// each source checked as render would read it.
			var pw, trust map[string][]byte
			var objs []render.Object
			if pw, trust, err = render.ReadNeeded(src.Dir, cfg, name, o.Getenv, render.Placeholders(true)); err == nil {
				objs, err = render.Render(render.Input{Config: cfg, Lock: l.Object(), Profile: name, Passwords: pw, Trust: trust})
			}
			rep.Objects += len(objs)
			dss[name] = daemonSets(objs)
		}
		if err != nil {
			return fmt.Errorf("profile %q: %w", name, err)
		}
		vetted = append(vetted, p)
		// The per-profile checks.
		externalSecrets(p, rep)
		offlineUse(p, dss[name], rep)
		pools := diskbudget.Vet(p, l)
		for i := range pools {
			pools[i].Profile = name
		}
		rep.DiskBudget = append(rep.DiskBudget, pools...)
		if o.Warnings != nil {
			diskbudget.WriteVet(o.Warnings, name, pools, o.EveryPool)
			startupWarnings(o.Warnings, name, p)
		}
	}
	if err := verified(cfg, l, vetted); err != nil {
		return err
	}
	if o.Site {
		if err := checkSite(ctx, src, l, vetted, o, rep); err != nil {
			return err
		}
	}
	if !o.Remote {
		return nil
	}
	// The digests the rendered manifests pin: the plan's pins of the
	// profile vetted, or of every profile and workload.
	if o.Profile != "" {
		all = vetted[0]
	}
	return verifyPins(ctx, r, done, all, rep)
}

// verified refuses, offline, a lock whose entries a required verify
// policy of their image does not trust (no verifiedBy, or a signer the
// policy no longer names: verifypolicy.Unverified, lock --check's rule),
// so that a config and lock that would pin digests nobody verified do not
// vet as agreeing. The error names each entry and says to run lock.
func verified(cfg *v1alpha1.Config, l *lock.Lock, plans []*plan.Plan) error {
	var images []*plan.Image
	for _, p := range plans {
		images = append(images, p.Images...)
	}
	unverified, err := verifypolicy.Unverified(cfg, l, images)
	if err != nil || len(unverified) == 0 {
		return err
	}
	var lines []string
	for _, s := range unverified {
		if line := escape.Line(s.String()); !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	return fmt.Errorf("the lock pins digests its required verify policies do not trust; run `stowage lock` (it verifies them again) and commit the result:\n  %s",
		strings.Join(lines, "\n  "))
}

// verifyPins checks with r that every digest p pins exists in its
// registry (registry.Resolver.Verify), calls done, and records in rep how
// many were found. The error names each digest missing or unchecked.
func verifyPins(ctx context.Context, r *registry.Resolver, done func(), p *plan.Plan, rep *v1alpha1.VetReport) error {
	var pins []registry.Pin
	for _, img := range p.Images {
		for _, d := range img.Pins() {
			pins = append(pins, registry.Pin{Image: img, Digest: d})
		}
	}
	err := r.Verify(ctx, pins)
	done()
	rep.PinnedDigests = foundPins(len(pins), err)
	if err != nil {
		return fmt.Errorf("pinned digests missing or unchecked: %w", err)
	}
	return nil
}

// foundPins is how many of n pinned digests Verify found, given its
// error: one *registry.ImageError per digest missing or unchecked; none
// found when the error is of another kind.
func foundPins(n int, err error) *int {
	var es registry.Errors
	switch {
	case err == nil:
	case errors.As(err, &es):
		n = max(n-len(es), 0)
	default:
		n = 0
	}
	return &n
}

// externalSecrets records in rep, for the plan p of one profile, each
// pull Secret the DaemonSets name but stowage does not render
// (render.ExternalSecrets).
func externalSecrets(p *plan.Plan, rep *v1alpha1.VetReport) {
	for _, e := range engine.ExternalSecrets(p) {
		rep.ExternalSecrets = append(rep.ExternalSecrets, v1alpha1.VetSecret{Profile: p.Profiles[0], Name: e.Name, Registry: e.Registry, UsedBy: e.UsedBy, Namespaces: e.Namespaces})
	}
}

// startupWarnings writes a warning to w for each puller of p, the plan
// of profile, whose startup taint has effect NoExecute: the kubelet then
// evicts every pod on the node that does not tolerate it, the DaemonSets
// of other components too, where NoSchedule only keeps new ones off
// (docs/new-nodes.md, "Use NoSchedule"). It returns how many it wrote.
func startupWarnings(w io.Writer, profile string, p *plan.Plan) int {
	n := 0
	for _, pp := range p.Pullers {
		st := pp.Puller.Startup
		if st == nil || st.Taint.Effect != "NoExecute" {
			continue
		}
		fmt.Fprintf(w, "stowage: warning: profile %s: puller %s: startup taint %s has effect NoExecute, which evicts the pods on a new node that do not tolerate it (other components' DaemonSets too); use NoSchedule\n",
			escape.Line(profile), escape.Line(pp.Puller.Name), escape.Line(st.Taint.Key))
		n++
	}
	return n
}

// offlineUse records in rep, for the plan p of one profile, who may use
// each pre-pulled image offline (plan.Access over dss, the profile's
// rendered DaemonSets).
func offlineUse(p *plan.Plan, dss []*appsv1.DaemonSet, rep *v1alpha1.VetReport) {
	for _, a := range plan.Access(p, dss) {
		rep.Images = append(rep.Images, v1alpha1.VetImage{Profile: p.Profiles[0], Reference: a.Reference, OfflineUse: a})
	}
}

// daemonSets returns the DaemonSets among objs.
func daemonSets(objs []render.Object) []*appsv1.DaemonSet {
	var dss []*appsv1.DaemonSet
	for _, o := range objs {
		if ds, ok := o.Object.(*appsv1.DaemonSet); ok {
			dss = append(dss, ds)
		}
	}
	return dss
}

// Finish records vet's outcome err in rep: OK, and the errors with their
// places (source.ReportErrors).
func Finish(rep *v1alpha1.VetReport, err error) {
	rep.OK = err == nil
	if err != nil {
		rep.Errors = source.ReportErrors(err)
	}
}
