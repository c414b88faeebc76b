package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/diskbudget"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/verifypolicy"
	"github.com/stowage/stowage/internal/workload"
)

func newVet(getenv env) *cobra.Command {
	var (
		o      loadOptions
		ro     registryOptions
		remote bool
		onSite bool
		format string
	)
	o.deadline = &ro.runTimeout
	c := &cobra.Command{
		Use:   "vet [DIR]",
		Short: "Check the config in DIR (default .) and that the lock covers every image of every profile",
		Long: `Load and validate the config, then render every profile (or --profile) against
the lock without writing anything. Passwords are not read: vet needs no secrets,
but it refuses what render would: an env: variable unset or empty, a file:
source outside DIR, missing, not a regular file or empty (stat, not read).

With --remote, also check with one HEAD each that every digest the rendered
manifests pin still exists in its registry, and name each one that does not.
Passwords of the config's credentials are read then.

With --site, check on the site registry instead (each profile's site, and the
site the KRM function rewrites pinned workloads to): every reference the
rendered output names (DaemonSets, images.list, the OpenPAI lists, the
workloads the function pins) must exist at its site repository with its
pinned digest, and so must every child of a pinned index the lock records
(each node pulls its own platform); each one missing is named, exit 1. The
site registry is contacted with the credentials the rendered pull Secrets
carry to it, else the Docker config. --remote and --site are separate
questions asked on the two sides of an air gap (the source registries are
out of reach on the site, the site from the connected side), so neither
implies the other; give both where both are reachable.

Each profile's disk budget: per node pool (the nodes a nodeSelector of its
pullers picks), the bytes its images take by the lock's sizes, against the
pool's nodeDisk when the config declares one. A warning on stderr says when
they do not fit below the kubelet's image GC high threshold (or may not:
the lock has no size for some); -v prints every pool, -o json lists them
all (diskBudget). docs/new-nodes.md, "Will it fit?".` + kustomizationHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("-o %q: want text or json", format)}
			}
			rep := &vetReport{Profiles: []string{}, ExternalSecrets: []vetSecret{}, Images: []vetImage{}, Unpinned: []vetUnpinned{}, Errors: []vetError{}, DiskBudget: []v1alpha1.DiskPool{}}
			if format == "json" {
				defer func() { err = rep.write(cmd.OutOrStdout(), err) }()
			}
			if err := checkDirArg(cmd, args); err != nil {
				return err
			}
			src, err := loadSource(cmd.Context(), cmd.ErrOrStderr(), dirArg(args), o)
			if err != nil {
				return err
			}
			v := vetRun{profile: o.profile, remote: remote, site: onSite, text: format == "text", ro: &ro, rep: rep, getenv: getenv}
			if src.Kustomization != nil {
				return vetKustomization(cmd, src, v)
			}
			return vetConfigDir(cmd, src, v)
		},
	}
	c.Flags().BoolVar(&remote, "remote", false, "also check that every pinned digest still exists in its registry")
	c.Flags().BoolVar(&onSite, "site", false, "also check that the site registry holds every pinned reference the rendered output names, index children included")
	c.Flags().StringVarP(&format, "output", "o", "text", "text, or json: {ok, profiles, objects, pinnedDigests, site, externalSecrets, errors} on stdout, also when vet fails")
	ro.addFlags(c.Flags())
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "vet only this profile")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	o.addRootFlag(c.Flags())
	return c
}

// vetRun is what vetKustomization needs of vet's flags.
type vetRun struct {
	profile string
	remote  bool
	site    bool
	text    bool
	ro      *registryOptions
	rep     *vetReport
	getenv  env
}

// vetConfigDir vets a config directory: every profile (or v.profile)
// planned once against the lock and rendered with placeholder passwords,
// each source checked as render would read it; with v.site, the site
// registry's copies; with v.remote, every pinned digest in its registry.
func vetConfigDir(cmd *cobra.Command, src *source.Source, v vetRun) error {
	cfg := src.Config
	profiles := cfg.ProfileNames()
	if v.profile != "" {
		profiles = []string{v.profile}
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
	if v.remote {
		// Registry flags are checked before anything is rendered, with
		// the credentials of every profile's images.
		if all, err = plans.All(); err != nil {
			return err
		}
		if r, done, err = v.ro.resolver(cmd.ErrOrStderr(), src.Passwords(), all.Images, v.getenv); err != nil {
			return err
		}
	}
	n := 0
	var external []string
	var vetted []*plan.Plan
	v.rep.Profiles = profiles
	for _, name := range profiles {
		p, err := plans.Profile(name)
		var objs []render.Object
		if err == nil {
			objs, err = render.FromPlan(p, cfg, l, render.Options{Dir: src.Dir, NoPasswords: true, CheckPasswords: true, Getenv: v.getenv})
			n += len(objs)
		}
		if err != nil {
			return fmt.Errorf("profile %q: %w", name, err)
		}
		vetted = append(vetted, p)
		external = externalSecrets(p, external, v.rep)
		// Who may use each image offline, from the DaemonSets just
		// rendered: the profile is rendered once.
		offlineUse(p, daemonSets(objs), v.rep)
		v.diskBudget(cmd, name, p, l)
	}
	v.rep.Objects = n
	if err := vetVerified(cfg, l, vetted); err != nil {
		return err
	}
	siteNote := ""
	if v.site {
		ms, imgs, sites, err := siteManifests(cfg, vetted, l, nil)
		if err != nil {
			return err
		}
		if err := vetSite(cmd.Context(), cmd.ErrOrStderr(), v.ro, src.Passwords(), v.getenv, ms, imgs, sites, v.rep); err != nil {
			return err
		}
		siteNote = fmt.Sprintf(", %d manifest(s) on the site registry", len(ms))
	}
	if !v.remote {
		v.printOK(cmd.OutOrStdout(), fmt.Sprintf("ok: %d profile(s), %d object(s)%s\n", len(profiles), n, siteNote), external)
		return nil
	}
	// The digests the rendered manifests pin: the plan's pins of the
	// profile vetted, or of every profile.
	if v.profile != "" {
		all = vetted[0]
	}
	pins, err := verifyPins(cmd.Context(), r, done, all, v.rep)
	if err != nil {
		return err
	}
	v.printOK(cmd.OutOrStdout(), fmt.Sprintf("ok: %d profile(s), %d object(s), %d pinned digest(s) exist%s\n", len(profiles), n, pins, siteNote), external)
	return nil
}

// vetVerified refuses, offline, a lock whose entries a required verify
// policy of their image does not trust (no verifiedBy, or a signer the
// policy no longer names: verifypolicy.Unverified, lock --check's rule),
// so that a config and lock that would pin digests nobody verified do not
// vet as agreeing. The error names each entry and says to run lock.
func vetVerified(cfg *v1alpha1.Config, l *lock.Lock, plans []*plan.Plan) error {
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
// many were found. It returns how many were checked; the error names
// each digest missing or unchecked.
func verifyPins(ctx context.Context, r *registry.Resolver, done func(), p *plan.Plan, rep *vetReport) (int, error) {
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
		return 0, fmt.Errorf("pinned digests missing or unchecked: %w", err)
	}
	return len(pins), nil
}

// printOK prints vet's verdict line, then the pull Secrets to create and
// who may use each image offline, in text output only.
func (v vetRun) printOK(w io.Writer, verdict string, external []string) {
	if !v.text {
		return
	}
	fmt.Fprint(w, verdict)
	printExternalSecrets(w, external)
	printOfflineUse(w, v.rep)
}

// vetKustomization vets a kustomization that runs stowage as a KRM
// function: the function itself runs, in process, on the items kustomize
// would hand it (kustomization.Load), with the exec declaration's
// --allow-env names, reading no password; its error results fail vet as
// they would fail kustomize build. With --remote, every digest the
// function pins (pre-pulled and pin-only) is checked in its registry.
//
// The exec declaration must be stowage's own (kustomization.OwnExec), as
// `cmp generate` requires before it runs the function.
func vetKustomization(cmd *cobra.Command, src *source.Source, v vetRun) error {
	b := src.Kustomization
	exe, _ := os.Executable()
	if _, err := kustomization.OwnExec(b.FunctionConfig, b.FunctionFile, exe); err != nil {
		return err
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		return err
	}
	l := lf.Lock
	objects, rendered, err := runFunction(cmd.Context(), cmd.ErrOrStderr(), src, v.getenv, v.rep)
	if err != nil {
		return err
	}
	profiles, err := src.Profiles(v.profile)
	if err != nil {
		return err
	}
	v.rep.Profiles = append(v.rep.Profiles, profiles...)
	v.rep.Objects = objects
	plans := src.Plans(l)
	var external []string
	var vetted []*plan.Plan
	for _, prof := range profiles {
		p, err := plans.Profile(prof)
		if err != nil {
			return err
		}
		vetted = append(vetted, p)
		external = externalSecrets(p, external, v.rep)
		offlineUse(p, rendered[prof], v.rep)
		v.diskBudget(cmd, prof, p, l)
	}
	pinned := ""
	if n := len(src.Workloads); n > 0 {
		pinned = fmt.Sprintf(", %d workload image(s) pinned", n)
	}
	if n := len(v.rep.Unpinned); n > 0 {
		pinned += fmt.Sprintf(", %d string(s) read as image references left unpinned (warnings above)", n)
	}
	if v.site {
		ms, imgs, sites, err := siteManifests(src.Config, vetted, l, src.Workloads)
		if err != nil {
			return err
		}
		if err := vetSite(cmd.Context(), cmd.ErrOrStderr(), v.ro, src.Passwords(), v.getenv, ms, imgs, sites, v.rep); err != nil {
			return err
		}
		pinned += fmt.Sprintf(", %d manifest(s) on the site registry", len(ms))
	}
	if !v.remote {
		v.printOK(cmd.OutOrStdout(), fmt.Sprintf("ok: %d profile(s), %d object(s)%s\n", len(profiles), objects, pinned), external)
		return nil
	}
	all, err := plans.All()
	if err != nil {
		return err
	}
	r, done, err := v.ro.resolver(cmd.ErrOrStderr(), src.Passwords(), all.Images, v.getenv)
	if err != nil {
		return err
	}
	pins, err := verifyPins(cmd.Context(), r, done, all, v.rep)
	if err != nil {
		return err
	}
	v.printOK(cmd.OutOrStdout(), fmt.Sprintf("ok: %d profile(s), %d object(s)%s, %d pinned digest(s) exist\n", len(profiles), objects, pinned, pins), external)
	return nil
}

// runFunction runs the KRM function in process on the items kustomize
// would hand it (src's build), with the exec declaration's --allow-env
// names, reading no password (fn.Processor.CheckOnly), and returns how
// many objects it adds and the DaemonSets it rendered, by profile. The
// function's warnings about the items (the functionConfig's are the
// loader's to print) go to stderr as `stowage: file:line: warning: …`
// lines, and every string left reading as an image reference without a
// digest (workload.EachLeftover) is listed in rep.Unpinned. Errors: a
// ResourceList over the declaration's --max-input-bytes (kustomize build
// would fail), and the function's error results as a
// *source.FunctionError.
func runFunction(ctx context.Context, stderr io.Writer, src *source.Source, getenv env, rep *vetReport) (int, map[string][]*appsv1.DaemonSet, error) {
	b := src.Kustomization
	size, err := fnInputSize(b)
	if err != nil {
		return 0, nil, err
	}
	if size > src.MaxInput {
		return 0, nil, fmt.Errorf("kustomization %s: the ResourceList kustomize would pass to the function holds %d bytes, more than the %d the function reads, so kustomize build would fail: %s, or split the kustomization",
			b.Dir, size, src.MaxInput, src.InputBound())
	}
	rl := &framework.ResourceList{FunctionConfig: b.FunctionConfig.Copy()}
	for _, it := range b.Items {
		rl.Items = append(rl.Items, it.Copy())
	}
	p := &fn.Processor{Dir: src.Dir, Getenv: getenv, AllowEnv: src.AllowEnv, CheckOnly: true, ConfigOptions: schemaOptions(ctx)}
	if err := p.Process(rl); err != nil {
		return 0, nil, source.NewFunctionError(p, b, rl.Results)
	}
	var items framework.Results
	for _, r := range rl.Results {
		if r.ResourceRef == nil || !fn.IsFunctionConfig(b.FunctionConfig) || r.ResourceRef.Kind != b.FunctionConfig.GetKind() || r.ResourceRef.Name != b.FunctionConfig.GetName() {
			items = append(items, r)
		}
	}
	for _, l := range p.Locate(b.FunctionConfig, items) {
		if l.Severity == framework.Warning {
			fmt.Fprintf(stderr, "stowage: %s\n", escape.Text(l.String()))
		}
	}
	workload.EachLeftover(rl.Items[:len(b.Items)], nil, func(item *kyaml.RNode, field, ref string) {
		rep.Unpinned = append(rep.Unpinned, vetUnpinned{Object: item.GetKind() + " " + item.GetName(), Field: field, Reference: ref})
	})
	dss, err := renderedDaemonSets(rl.Items)
	if err != nil {
		return 0, nil, err
	}
	return len(rl.Items) - len(b.Items), dss, nil
}

// renderedDaemonSets returns the DaemonSets among items that a profile
// rendered (labelled render.LabelProfile), by profile.
func renderedDaemonSets(items []*kyaml.RNode) (map[string][]*appsv1.DaemonSet, error) {
	out := map[string][]*appsv1.DaemonSet{}
	for _, it := range items {
		prof := it.GetLabels()[render.LabelProfile]
		if it.GetKind() != "DaemonSet" || prof == "" {
			continue
		}
		text, err := it.String()
		if err != nil {
			return nil, err
		}
		ds := &appsv1.DaemonSet{}
		if err := sigsyaml.Unmarshal([]byte(text), ds); err != nil {
			return nil, fmt.Errorf("DaemonSet %s/%s the function rendered: %w", it.GetNamespace(), it.GetName(), err)
		}
		out[prof] = append(out[prof], ds)
	}
	return out, nil
}

// externalSecrets appends to lines, for the plan p of one profile, each
// pull Secret the DaemonSets name but stowage does not render
// (render.ExternalSecrets), as "profile P: Secret NAME (REGISTRY, USED BY)
// in NS, NS", and records them in rep.
func externalSecrets(p *plan.Plan, lines []string, rep *vetReport) []string {
	for _, e := range render.ExternalSecrets(p) {
		rep.ExternalSecrets = append(rep.ExternalSecrets, vetSecret{Profile: p.Profiles[0], Name: e.Name, Registry: e.Registry, UsedBy: e.UsedBy, Namespaces: e.Namespaces})
		lines = append(lines, fmt.Sprintf("profile %s: Secret %s (%s; %s) in %s", p.Profiles[0], e.Name, e.Registry,
			strings.Join(e.UsedBy, ", "), strings.Join(e.Namespaces, ", ")))
	}
	return lines
}

// offlineUse adds to rep, for the plan p of one profile, who may use each
// pre-pulled image offline (plan.Access over dss, the profile's rendered
// DaemonSets).
func offlineUse(p *plan.Plan, dss []*appsv1.DaemonSet, rep *vetReport) {
	for _, a := range plan.Access(p, dss) {
		rep.Images = append(rep.Images, vetImage{Profile: p.Profiles[0], Reference: a.Reference, OfflineUse: a})
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

// printOfflineUse says, per image, who may use its pre-pulled copy
// offline, and the kubelet's rule.
func printOfflineUse(w io.Writer, rep *vetReport) {
	if len(rep.Images) == 0 {
		return
	}
	fmt.Fprintf(w, "offline use of the pre-pulled images (%s):\n", plan.KubeletRule)
	for _, im := range rep.Images {
		fmt.Fprintf(w, "  profile %s: %s: %s\n", escape.Line(im.Profile), escape.Line(im.Reference), escape.Line(im.OfflineUse.Summary))
	}
}

// printExternalSecrets says which Secrets the user must create, after
// vet's verdict.
func printExternalSecrets(w io.Writer, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "stowage names these pull Secrets but does not render them; create each, a kubernetes.io/dockerconfigjson Secret with the registry's credentials, in every namespace listed (tenants' pods must present the same credentials to the kubelet):")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", escape.Line(l))
	}
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

// vetReport is vet's -o json output: the verdict, what was checked, the
// Secrets the user must create, and every error with its place.
type vetReport struct {
	OK       bool     `json:"ok"`
	Profiles []string `json:"profiles"`
	Objects  int      `json:"objects"`
	// PinnedDigests is the number of digests --remote found, on failure
	// too (those it did not find are errors); absent without --remote.
	PinnedDigests *int `json:"pinnedDigests,omitempty"`
	// Site is the site check (--site); absent without --site.
	Site            *vetSiteReport `json:"site,omitempty"`
	ExternalSecrets []vetSecret    `json:"externalSecrets"`
	// Images say, per profile and pre-pulled image, who may use the copy
	// on a node offline (plan.Access).
	Images []vetImage `json:"images"`
	// Unpinned are the strings of a kustomization's items that read as
	// image references and that nothing pins (workload.EachLeftover): the
	// site would pull them by tag. Each is a warning too.
	Unpinned []vetUnpinned `json:"unpinned"`
	Errors   []vetError    `json:"errors"`
	// DiskBudget is every node pool's disk budget, per profile
	// (internal/diskbudget).
	DiskBudget []v1alpha1.DiskPool `json:"diskBudget"`
}

// diskBudget adds profile's node pools to the report and writes their
// lines to stderr: warnings when a declared disk cannot hold them, every
// pool with -v.
func (v vetRun) diskBudget(cmd *cobra.Command, profile string, p *plan.Plan, l *lock.Lock) {
	pools := diskbudget.Vet(p, l)
	for i := range pools {
		pools[i].Profile = profile
	}
	v.rep.DiskBudget = append(v.rep.DiskBudget, pools...)
	verbose := cmd.Flag("verbose") != nil && cmd.Flag("verbose").Value.String() == "true"
	diskbudget.WriteVet(cmd.ErrOrStderr(), profile, pools, verbose && v.text)
}

// vetUnpinned is one string of an item left reading as an image reference
// without a digest.
type vetUnpinned struct {
	// Object is "Kind name".
	Object    string `json:"object"`
	Field     string `json:"field"`
	Reference string `json:"reference"`
}

// vetSecret is a pull Secret stowage names but does not render.
type vetSecret struct {
	Profile    string   `json:"profile"`
	Name       string   `json:"name"`
	Registry   string   `json:"registry"`
	UsedBy     []string `json:"usedBy"`
	Namespaces []string `json:"namespaces"`
}

// vetImage is one pre-pulled image of a profile and who may use it
// offline.
type vetImage struct {
	Profile    string           `json:"profile"`
	Reference  string           `json:"reference"`
	OfflineUse plan.ImageAccess `json:"offlineUse"`
}

// vetError is one problem: the config file, line, column and field when
// the loader located it, and the message (the text vet prints on stderr).
type vetError struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// write prints the report as JSON with vet's outcome err, and returns err
// unchanged so that the exit code and stderr stay as they are; a usage
// error prints no report.
func (r *vetReport) write(w io.Writer, err error) error {
	if isUsage(err) {
		return err
	}
	r.OK = err == nil
	if err != nil {
		r.Errors = reportErrors(err)
	}
	if werr := writeReport(w, r); werr != nil && err == nil {
		return werr
	}
	return err
}
