package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/pkgcache"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/spelling"
)

// MaxPullerName is the longest puller name: a DaemonSet's pods are named
// "<name>-<5 random characters>", and stowage may add a node-group suffix,
// so the puller name keeps below the 63-character label limit.
const MaxPullerName = 50

// Password source prefixes of Auth.Password.
const (
	PasswordFromEnv  = "env:"
	PasswordFromFile = "file:"
)

// envName is compiled on first use, not at start-up.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// v is a shorthand to build CUE paths from strings and indexes.
func path(elems ...any) cue.Path {
	sels := make([]cue.Selector, len(elems))
	for i, e := range elems {
		switch e := e.(type) {
		case string:
			sels[i] = cue.Str(e)
		case int:
			sels[i] = cue.Index(e)
		default:
			panic(fmt.Sprintf("path element %T", e))
		}
	}
	return cue.MakePath(sels...)
}

func extend(p cue.Path, elems ...any) cue.Path {
	return cue.MakePath(append(p.Selectors(), path(elems...).Selectors()...)...)
}

// checkRaw checks values whose Go type cannot say what the files may hold:
// refreshHours as an integer or a string of digits, and quantities.
func checkRaw(v cue.Value, loc *locator) Errors {
	var errs Errors
	profiles, _ := v.LookupPath(cue.ParsePath("profiles")).Fields()
	for profiles != nil && profiles.Next() {
		pp := path("profiles", profiles.Selector().Unquoted())
		// Elements are looked up one by one: List fails when any puller
		// has an error, and the others must still be checked.
		pullers := profiles.Value().LookupPath(cue.ParsePath("pullers"))
		for i := 0; pullers.LookupPath(cue.MakePath(cue.Index(i))).Exists(); i++ {
			rh := pullers.LookupPath(cue.MakePath(cue.Index(i), cue.Str("refreshHours")))
			if !rh.Exists() {
				continue
			}
			p := extend(pp, "pullers", i, "refreshHours")
			if s, err := rh.String(); err == nil {
				switch n, err := strconv.Atoi(s); {
				case err == nil && n >= 1 && strconv.Itoa(n) != s:
					errs = append(errs, loc.at(p, "refreshHours %q: write the number without a sign or leading zeros (%q)", s, strconv.Itoa(n)))
				case err != nil || n < 1:
					errs = append(errs, loc.at(p, "refreshHours %q is not a whole number of hours (write 2 or \"2\")", s))
				}
				continue
			}
			// A value that is neither a string nor an int is the schema's
			// to report.
			if n, err := rh.Int64(); err == nil && n < 1 {
				errs = append(errs, loc.at(p, "refreshHours must be at least 1 hour"))
			}
		}
	}
	return errs
}

// validate applies the rules that need Kubernetes, registry or OpenPAI
// knowledge, locating each problem in the files.
func validate(c *v1alpha1.Config, loc *locator, allowNoProfiles bool) Errors {
	var errs Errors
	add := func(p cue.Path, format string, args ...any) {
		errs = append(errs, loc.at(p, format, args...))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Images)) {
		im := c.Images[k]
		p := path("images", k)
		checkName(add, p, k)
		checkOneReference(add, p, "reference", im.Reference, im.ByNodeLabel)
		checkByNodeLabel(add, p, im.ByNodeLabel, nil, im.Platforms)
		checkPlatforms(add, p, im.Platforms)
		checkAuth(add, c, extend(p, "auth"), im.Auth, fmt.Sprintf("image %q", firstNonEmpty(im.Reference, k)), firstNonEmpty(im.References()...))
		checkVerify(add, extend(p, "verify"), im.Verify)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Environments)) {
		env := c.Environments[k]
		p := path("environments", k)
		if strings.TrimSpace(k) == "" {
			add(p, "an environment needs a name")
		}
		checkName(add, p, k)
		checkOneReference(add, p, "image", env.Image, env.ByNodeLabel)
		checkByNodeLabel(add, p, env.ByNodeLabel, env.NodeSelector, env.Platforms)
		checkPlatforms(add, p, env.Platforms)
		checkAuth(add, c, extend(p, "auth"), env.Auth, fmt.Sprintf("environment %q", k), firstNonEmpty(env.References()...))
		checkPlacement(add, p, env.NodeSelector, env.Tolerations)
		checkVerify(add, extend(p, "verify"), env.Verify)
	}
	checkHelper(add, path("helper"), c.Helper)
	checkResources(add, path("resources"), c.Resources)
	checkRequestsWithinLimits(add, path("resources"), nil, c.Resources, nil)
	checkSite(add, path("site"), c.Site)
	checkVerify(add, path("verify"), c.Verify)
	for i, ip := range c.ImagePlaces {
		checkImagePlace(add, path("imagePlaces", i), ip)
	}
	if len(c.Profiles) == 0 && !allowNoProfiles {
		add(path("profiles"), "no profile is defined")
	}
	for _, pn := range slices.Sorted(maps.Keys(c.Profiles)) {
		errs = append(errs, validateProfile(c, pn, loc)...)
	}
	return errs
}

// validateProfile checks profile pn of c: its name, namespace, helper,
// site, resources, each of its pullers (profileCheck.puller), its OpenPAI
// selection and its package cache rows. Each error is located by loc.
func validateProfile(c *v1alpha1.Config, pn string, loc *locator) Errors {
	var errs Errors
	add := func(p cue.Path, format string, args ...any) {
		errs = append(errs, loc.at(p, format, args...))
	}
	prof := c.Profiles[pn]
	pp := path("profiles", pn)
	// The name labels every object the profile renders (stowage.dev/profile).
	if msgs := validation.IsValidLabelValue(pn); pn == "" || len(msgs) > 0 {
		if pn == "" {
			msgs = []string{"it is empty"}
		}
		add(pp, "profile name %q must be a valid label value, at most 63 letters, digits, '-', '_' or '.' (it labels every object the profile renders): %s",
			pn, strings.Join(msgs, "; "))
	}
	checkLabel(add, extend(pp, "namespace"), "namespace", prof.Namespace)
	checkHelper(add, extend(pp, "helper"), prof.Helper)
	if checkSite(add, extend(pp, "site"), prof.Site) {
		checkSiteCollisions(add, c, pn, pp)
	}
	checkResources(add, extend(pp, "resources"), prof.Resources)
	checkRequestsWithinLimits(add, pp, nil, prof.Resources, nil)
	checkVerify(add, extend(pp, "verify"), prof.Verify)
	checkAdmission(add, extend(pp, "policy"), prof.Policy)
	checkNodeDisk(add, extend(pp, "nodeDisk"), prof.NodeDisk)

	pc := &profileCheck{add: add, c: c, pn: pn, prof: &prof, pp: pp, seen: map[string]int{}, records: map[string]int{}}
	for i, pl := range prof.Pullers {
		pc.puller(i, pl)
	}

	if op := prof.OpenPAI; op != nil {
		op := extend(pp, "openpai")
		errs = append(errs, validateOpenPAI(prof.OpenPAI, op, loc)...)
	}
	checkPackageCache(add, loc, pp, prof.PackageCache)
	return errs
}

// profileCheck is what checking the pullers of one profile carries from
// puller to puller: where errors go (add), the config, the profile's name,
// value and path, and the pullers and records ConfigMaps seen so far.
type profileCheck struct {
	add  adder
	c    *v1alpha1.Config
	pn   string
	prof *v1alpha1.Profile
	pp   cue.Path
	// seen maps "namespace/name" to the first puller of that name.
	seen map[string]int
	// records maps "namespace/records ConfigMap name" to its puller.
	records map[string]int
	// startupKeys and startupConds map a startup taint key and a
	// startup node condition type to the first puller gating on it.
	startupKeys, startupConds map[string]int
	// startupNames maps the name of a startup gate's cluster-scoped
	// objects (v1alpha1.StartupName) to the first puller gated under it.
	startupNames map[string]int
	// disks maps a nodeSelector (as JSON) to the first puller with it
	// that declares a nodeDisk.
	disks map[string]int
}

// puller checks pullers[i] (pl) of the profile: its name and namespace,
// its tenants (valid, none twice), that it is not defined twice, that it
// lists images and that they are defined, its placement, PriorityClass
// and records ConfigMap names (no two pullers of a namespace sharing one),
// and its resources against the profile's.
func (pc *profileCheck) puller(i int, pl v1alpha1.Puller) {
	add, c := pc.add, pc.c
	p := extend(pc.pp, "pullers", i)
	if msgs := validation.IsDNS1123Label(pl.Name); len(msgs) > 0 || len(pl.Name) > MaxPullerName {
		if len(msgs) == 0 {
			msgs = []string{fmt.Sprintf("it has %d characters", len(pl.Name))}
		}
		add(extend(p, "name"), "puller name %q must be a lowercase RFC 1123 label of at most %d characters (it names a DaemonSet): %s",
			pl.Name, MaxPullerName, strings.Join(msgs, "; "))
	}
	checkLabel(add, extend(p, "namespace"), "namespace", pl.Namespace)
	tenants := map[string]int{}
	for j, ns := range pl.Tenants {
		checkLabel(add, extend(p, "tenants", j), "tenant namespace", ns)
		if k, dup := tenants[ns]; dup {
			add(extend(p, "tenants", j), "tenant namespace %q is listed twice (tenants[%d] and tenants[%d])", ns, k, j)
		}
		tenants[ns] = j
	}
	id := pl.Namespace + "/" + pl.Name
	j, dupPuller := pc.seen[id]
	if dupPuller {
		add(extend(p, "name"), "puller %q in namespace %q is defined twice (pullers[%d] and pullers[%d])", pl.Name, pl.Namespace, j, i)
	}
	pc.seen[id] = i
	if len(pl.Environments)+len(pl.Images)+len(pl.OpenPAI) == 0 {
		add(p, "puller %q has no images: list environments, images or openpai roles", pl.Name)
	}
	for j, e := range pl.Environments {
		env, ok := c.Environments[e]
		if !ok {
			add(extend(p, "environments", j), "environment %q is not defined%s", e, suggest(e, slices.Sorted(maps.Keys(c.Environments))))
		}
		checkPullerLabel(add, p, pl.NodeSelector, fmt.Sprintf("environment %q", e), env.ByNodeLabel)
	}
	for j, e := range pl.Images {
		im, ok := c.Images[e]
		if !ok {
			add(extend(p, "images", j), "image %q is not in the images catalogue%s", e, suggest(e, slices.Sorted(maps.Keys(c.Images))))
		}
		checkPullerLabel(add, p, pl.NodeSelector, fmt.Sprintf("image %q", e), im.ByNodeLabel)
	}
	if len(pl.OpenPAI) > 0 && pc.prof.OpenPAI == nil {
		add(extend(p, "openpai"), "puller %q pre-pulls OpenPAI images but profile %q has no openpai selection", pl.Name, pc.pn)
	}
	checkPlacement(add, p, pl.NodeSelector, pl.Tolerations)
	if pl.PriorityClassName != "" {
		if msgs := validation.IsDNS1123Subdomain(pl.PriorityClassName); len(msgs) > 0 {
			add(extend(p, "priorityClassName"), "%q is not a valid PriorityClass name: %s", pl.PriorityClassName, strings.Join(msgs, "; "))
		}
	}
	if pl.RecordsName != "" {
		if msgs := validation.IsDNS1123Subdomain(pl.RecordsName); len(msgs) > 0 {
			add(extend(p, "recordsName"), "%q is not a valid ConfigMap name: %s", pl.RecordsName, strings.Join(msgs, "; "))
		}
	}
	// Two pullers of a namespace writing one records ConfigMap would
	// overwrite each other's images.list.
	rec, recField := pl.Name+"-records", extend(p, "name")
	if pl.RecordsName != "" {
		rec, recField = pl.RecordsName, extend(p, "recordsName")
	}
	if j, dup := pc.records[pl.Namespace+"/"+rec]; dup && !dupPuller {
		add(recField, "records ConfigMap %q in namespace %q is also pullers[%d]'s; give each puller its own recordsName", rec, pl.Namespace, j)
	} else if !dup {
		pc.records[pl.Namespace+"/"+rec] = i
	}
	checkResources(add, extend(p, "resources"), pl.Resources)
	checkRequestsWithinLimits(add, pc.pp, &p, pc.prof.Resources, pl.Resources)
	pc.startup(i, p, pl)
	// The images one node of the puller pulls: a byNodeLabel entry is one
	// image on each node. Render splits each DaemonSet into at most lanes,
	// so a smaller DaemonSet (one byNodeLabel value's) gets fewer lanes.
	if n := len(pl.Environments) + len(pl.Images); len(pl.OpenPAI) == 0 && n > 0 && pl.Lanes > n {
		add(extend(p, "lanes"), "lanes %d is more than the puller's %d images: a lane without an image would be an empty DaemonSet", pl.Lanes, n)
	}
	if pl.Lanes < 0 {
		add(extend(p, "lanes"), "lanes %d must be at least 1", pl.Lanes)
	}
	pc.nodeDisk(i, p, pl)
}

// nodeDisk checks pullers[i]'s nodeDisk (checkNodeDisk) and that no
// earlier puller with the same nodeSelector, the same node pool
// (internal/diskbudget), declares a different one.
func (pc *profileCheck) nodeDisk(i int, p cue.Path, pl v1alpha1.Puller) {
	if pl.NodeDisk == nil {
		return
	}
	at := extend(p, "nodeDisk")
	checkNodeDisk(pc.add, at, pl.NodeDisk)
	if pc.disks == nil {
		pc.disks = map[string]int{}
	}
	sel, _ := json.Marshal(pl.NodeSelector) // sorted keys: one spelling per selector
	if j, ok := pc.disks[string(sel)]; ok {
		if d := pc.prof.Pullers[j].NodeDisk; *d != *pl.NodeDisk {
			pc.add(at, "nodeDisk differs from pullers[%d]'s, which has the same nodeSelector: the pullers of one node pool share its disk", j)
		}
		return
	}
	pc.disks[string(sel)] = i
}

// MaxDiskBytes is the largest nodeDisk.size Load accepts: 1 EiB, so that
// the budget's sums and products of bytes stay within int64.
const MaxDiskBytes = 1 << 60

// DiskSize returns the bytes of a nodeDisk size: a Kubernetes quantity
// (resource.ParseQuantity), rounded up to a whole byte. Errors: not a
// quantity, zero or negative, or more than MaxDiskBytes.
func DiskSize(q v1alpha1.Quantity) (int64, error) {
	v, err := resource.ParseQuantity(string(q))
	if err != nil {
		return 0, fmt.Errorf("%q is not a Kubernetes quantity of bytes (for example 200Gi or 500G)", string(q))
	}
	if v.Sign() <= 0 {
		return 0, fmt.Errorf("%q is not a disk size: it must be more than zero bytes", string(q))
	}
	// Quantity.Value wraps past int64; compare first.
	if v.Cmp(*resource.NewQuantity(MaxDiskBytes, resource.BinarySI)) > 0 {
		return 0, fmt.Errorf("%q is more than 1Ei, the largest disk size stowage accepts", string(q))
	}
	return v.Value(), nil
}

// checkNodeDisk checks a nodeDisk at p: its size (DiskSize) and its
// threshold percent, 1 to 100 (CUE bounds it when written; a Config built
// in Go is checked here too).
func checkNodeDisk(add adder, p cue.Path, d *v1alpha1.NodeDisk) {
	if d == nil {
		return
	}
	if _, err := DiskSize(d.Size); err != nil {
		add(extend(p, "size"), "%v", err)
	}
	if n := d.ImageGCHighThresholdPercent; n < 0 || n > 100 {
		add(extend(p, "imageGCHighThresholdPercent"), "%d is not a percent from 1 to 100", n)
	}
}

// NodeReadinessTaintPrefix starts every taint key a NodeReadinessRule may
// manage (the Node Readiness Controller's CRD, readiness.node.x-k8s.io
// v1alpha1, refuses any other key).
const NodeReadinessTaintPrefix = "readiness.k8s.io/"

// startup checks pullers[i]'s startup gate (pl.Startup, at p): the taint's
// key (a qualified name), value (a label value) and effect, a key no
// other puller of the profile lifts, the helper as the main container (a
// pause image cannot lift anything), and for a NodeReadinessRule a key
// under NodeReadinessTaintPrefix and a condition type that is a qualified
// name no other puller sets.
func (pc *profileCheck) startup(i int, p cue.Path, pl v1alpha1.Puller) {
	s := pl.Startup
	if s == nil {
		return
	}
	add := pc.add
	sp := extend(p, "startup")
	tp := extend(sp, "taint")
	if msgs := validation.IsQualifiedName(s.Taint.Key); len(msgs) > 0 {
		add(extend(tp, "key"), "startup taint key %q is not a valid taint key (a qualified name such as stowage.dev/images): %s",
			s.Taint.Key, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(s.Taint.Value); len(msgs) > 0 {
		add(extend(tp, "value"), "startup taint value %q is not a valid label value: %s", s.Taint.Value, strings.Join(msgs, "; "))
	}
	switch s.Taint.Effect {
	case "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		add(extend(tp, "effect"), "startup taint effect %q must be NoSchedule, PreferNoSchedule or NoExecute", s.Taint.Effect)
	}
	if pc.prof.Helper.Pause != "" {
		add(sp, "puller %q has a startup gate, but the profile's helper.pause makes a pause image its main container: only the helper can lift the gate; drop helper.pause or the startup gate",
			pl.Name)
	} else if pc.c.Helper.Pause != "" {
		add(sp, "puller %q has a startup gate, but the top-level helper.pause (profile %q's default) makes a pause image its main container: only the helper can lift the gate; drop helper.pause or the startup gate",
			pl.Name, pc.pn)
	}
	if pc.startupKeys == nil {
		pc.startupKeys, pc.startupConds, pc.startupNames = map[string]int{}, map[string]int{}, map[string]int{}
	}
	// The gate's ClusterRole, ClusterRoleBinding, admission policy, its
	// binding and NodeReadinessRule are named after namespace and puller
	// joined by '-': two pullers can get one name, and the second's
	// objects would replace the first's (its nodes would stay tainted).
	name := v1alpha1.StartupName(pl.Namespace, pl.Name)
	if j, dup := pc.startupNames[name]; dup {
		if q := pc.prof.Pullers[j]; q.Namespace != pl.Namespace || q.Name != pl.Name {
			add(extend(p, "name"), "the startup gate of puller %q in namespace %q and that of pullers[%d] (puller %q in namespace %q) would both name their cluster-scoped objects (ClusterRole, ClusterRoleBinding, ValidatingAdmissionPolicy and its binding, NodeReadinessRule) %q; rename one puller or move it to another namespace",
				pl.Name, pl.Namespace, j, q.Name, q.Namespace, name)
		}
	} else {
		pc.startupNames[name] = i
	}
	if j, dup := pc.startupKeys[s.Taint.Key]; dup {
		add(extend(tp, "key"), "startup taint %q is also pullers[%d]'s: each puller lifts a taint of its own (the first one done would lift the other's)", s.Taint.Key, j)
	} else {
		pc.startupKeys[s.Taint.Key] = i
	}
	switch s.Via {
	case "", v1alpha1.StartupViaTaint:
		if s.Condition != "" {
			add(extend(sp, "condition"), "condition applies only with via: %q", v1alpha1.StartupViaNodeReadinessRule)
		}
	case v1alpha1.StartupViaNodeReadinessRule:
		if !strings.HasPrefix(s.Taint.Key, NodeReadinessTaintPrefix) {
			add(extend(tp, "key"), "startup taint key %q must start with %q: the Node Readiness Controller manages no other taint",
				s.Taint.Key, NodeReadinessTaintPrefix)
		}
		cond := s.StartupCondition(pl.Name)
		cp := extend(sp, "condition")
		if msgs := validation.IsQualifiedName(cond); len(msgs) > 0 {
			add(cp, "node condition type %q must be a qualified name: %s", cond, strings.Join(msgs, "; "))
		}
		if j, dup := pc.startupConds[cond]; dup {
			add(cp, "node condition %q is also pullers[%d]'s: set condition to a type of its own", cond, j)
		} else {
			pc.startupConds[cond] = i
		}
	default:
		add(extend(sp, "via"), "startup via %q must be %q or %q", s.Via, v1alpha1.StartupViaTaint, v1alpha1.StartupViaNodeReadinessRule)
	}
}

// checkPackageCache checks the package cache rows of the profile at pp
// with pkgcache's rules, adding each row's error at its row, field and
// package (located by loc) and any other error at packageCache.
func checkPackageCache(add adder, loc *locator, pp cue.Path, rows []v1alpha1.PackageCacheRow) {
	if len(rows) == 0 {
		return
	}
	where := func(i int) string {
		at := loc.at(extend(pp, "packageCache", i), "")
		return fmt.Sprintf("%s (%s:%d)", at.Path, at.File, at.Line)
	}
	err := pkgcache.ValidateAt(pkgcache.RowsOf(rows), where)
	for _, e := range unjoin(err) {
		var re *pkgcache.RowError
		if errors.As(e, &re) {
			p := extend(pp, "packageCache", re.Index)
			if re.Field != "" {
				p = extend(p, re.Field)
				if re.Field == "packages" && re.PackageIndex >= 0 {
					p = extend(p, re.PackageIndex)
				}
			}
			add(p, "%s", re.Msg)
			continue
		}
		add(extend(pp, "packageCache"), "%v", e)
	}
}

func validateOpenPAI(o *v1alpha1.OpenPAI, p cue.Path, loc *locator) Errors {
	var errs Errors
	add := func(p cue.Path, format string, args ...any) {
		errs = append(errs, loc.at(p, format, args...))
	}
	reg := o.Registry
	if reg.Domain == "" || reg.Namespace == "" || reg.Tag == "" {
		add(extend(p, "registry"), "registry domain, namespace and tag must all be set")
	}
	_, err := openpai.Reduce(openpai.SelectionOf(o))
	for _, e := range unjoin(err) {
		var ue *openpai.UnknownError
		var re *openpai.RequiredError
		var ve *openpai.UnsupportedVersionError
		switch {
		case errors.As(e, &ue):
			add(extend(p, ue.Field, ue.Index), "%s", ue.Error())
		case errors.As(e, &re):
			add(extend(p, re.Field, re.Index), "%s", re.Error())
		case errors.As(e, &ve):
			add(extend(p, "version"), "%s", ve.Error())
		default:
			add(p, "%s", e.Error())
		}
	}
	if len(errs) == 0 {
		// The prefix and tag must make valid references.
		ref := openpai.Registry{Domain: reg.Domain, Namespace: reg.Namespace, Tag: reg.Tag}.Prefix() + "rest-server:" + reg.Tag
		if _, err := imageref.Parse(ref); err != nil {
			add(extend(p, "registry"), "OpenPAI images would be named like %q, which is not a valid reference: %v", ref, err)
		}
	}
	return errs
}

// unjoin flattens errors.Join trees into their leaves.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

type adder func(p cue.Path, format string, args ...any)

// checkName refuses an image or environment name that is not printable
// (checkPrintable): the name goes into container names, labels and every
// message about it.
func checkName(add adder, p cue.Path, name string) { checkPrintable(add, p, "name", name) }

// checkPrintable refuses s, the what written at p, when it holds a
// control, bidirectional or zero-width format character or bytes that are
// not UTF-8 (the characters escape.Line rewrites): names, keyless
// identities and issuers go into rendered objects and messages, where
// such characters hide or rewrite what a reader sees.
func checkPrintable(add adder, p cue.Path, what, s string) {
	if escape.Line(s) != s {
		add(p, "the %s holds a control, format or non-UTF-8 character; use printable characters", what)
	}
}

// checkOneReference demands exactly one of the reference field (named
// field: "reference" of an image, "image" of an environment) and
// byNodeLabel at p, and checks the reference written there.
func checkOneReference(add adder, p cue.Path, field, ref string, b *v1alpha1.ByNodeLabel) {
	switch {
	case ref != "" && b != nil:
		add(extend(p, "byNodeLabel"), "give either %s or byNodeLabel, not both", field)
	case ref == "" && b == nil:
		add(p, "%s or byNodeLabel is required", field)
	case ref != "":
		checkRef(add, extend(p, field), ref)
	}
}

// checkByNodeLabel checks a per node group choice at p.byNodeLabel (nil:
// nothing to check): the label is a Kubernetes label key and every value a
// label value (apimachinery util/validation), at least one value, every
// reference parses; the entry's own nodeSelector (sel) does not set the
// label too, and a single platform does not pin kubernetes.io/os or
// kubernetes.io/arch when the label is one of those, since both would
// decide the same node label.
func checkByNodeLabel(add adder, p cue.Path, b *v1alpha1.ByNodeLabel, sel map[string]string, platforms []string) {
	if b == nil {
		return
	}
	bp := extend(p, "byNodeLabel")
	// An empty label is CUE's to report (label: !="").
	if msgs := validation.IsQualifiedName(b.Label); b.Label != "" && len(msgs) > 0 {
		add(extend(bp, "label"), "byNodeLabel label %q is not a valid label key: %s", b.Label, strings.Join(msgs, "; "))
	}
	if len(b.References) == 0 {
		add(extend(bp, "references"), "byNodeLabel needs at least one label value and its reference")
	}
	for _, v := range b.Values() {
		vp := extend(bp, "references", v)
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			add(vp, "label value %q is not a valid label value: %s", v, strings.Join(msgs, "; "))
			continue
		}
		checkRef(add, vp, b.References[v])
	}
	if v, ok := sel[b.Label]; ok {
		add(extend(p, "nodeSelector", b.Label), "nodeSelector sets %s=%q, the label byNodeLabel chooses the reference by; leave it to byNodeLabel", b.Label, v)
	}
	if len(platforms) == 1 && (b.Label == "kubernetes.io/os" || b.Label == "kubernetes.io/arch") {
		add(extend(p, "platforms"), "a single platform places the image by %s, the label byNodeLabel chooses the reference by; give the platform per reference or none", b.Label)
	}
}

// checkPullerLabel refuses a puller nodeSelector (sel, of the puller at p)
// that sets the label of the byNodeLabel choice b of what (`environment
// "driver"`) to a value other than one of b's: that value's DaemonSet
// would need both values on one node. nil b: nothing to check.
func checkPullerLabel(add adder, p cue.Path, sel map[string]string, what string, b *v1alpha1.ByNodeLabel) {
	if b == nil {
		return
	}
	pv, ok := sel[b.Label]
	if !ok {
		return
	}
	var other []string
	for _, v := range b.Values() {
		if v != pv {
			other = append(other, strconv.Quote(v))
		}
	}
	if len(other) > 0 {
		add(extend(p, "nodeSelector", b.Label), "nodeSelector %s=%q conflicts with %s, whose byNodeLabel pre-pulls a reference on the nodes labelled %s=%s each; leave the label out of the puller's nodeSelector",
			b.Label, pv, what, b.Label, strings.Join(other, ", "))
	}
}

func checkRef(add adder, p cue.Path, ref string) {
	if _, err := imageref.Parse(ref); err != nil {
		add(p, "%v", err)
	}
}

// checkHelper checks the references h sets (before defaults apply).
func checkHelper(add adder, p cue.Path, h v1alpha1.Helper) {
	if h.Image != "" {
		checkRef(add, extend(p, "image"), h.Image)
	}
	if h.Pause != "" {
		checkRef(add, extend(p, "pause"), h.Pause)
	}
}

// checkSite checks the prefixes s sets (before defaults apply) and reports
// whether they are all valid.
func checkSite(add adder, p cue.Path, s *v1alpha1.Site) bool {
	if s == nil {
		return true
	}
	ok := true
	if s.Registry != "" {
		if err := (site.Mapping{Default: s.Registry}).Validate(); err != nil {
			add(extend(p, "registry"), "%v", err)
			ok = false
		}
	}
	for _, from := range slices.Sorted(maps.Keys(s.Registries)) {
		if err := (site.Mapping{Default: s.Registries[from], Registries: map[string]string{from: s.Registries[from]}}).Validate(); err != nil {
			add(extend(p, "registries", from), "%v", err)
			ok = false
		}
	}
	return ok
}

// checkSiteCollisions checks profile pn's effective site (its own fields
// over the top-level ones): it needs a default prefix, and no two source
// repositories of the profile's images may map to one site repository.
// Errors are located at the field that decides: the profile's own site
// field when it sets it, else the top-level one.
func checkSiteCollisions(add adder, c *v1alpha1.Config, pn string, pp cue.Path) {
	prof := c.Profiles[pn]
	eff := effectiveSite(c.Site, prof.Site)
	if eff == nil {
		return
	}
	at := func(field string) cue.Path {
		if prof.Site != nil && (field == "registry" && prof.Site.Registry != "" || field == "registries" && prof.Site.Registries != nil) {
			return extend(pp, "site", field)
		}
		if c.Site != nil {
			return path("site", field)
		}
		return extend(pp, "site")
	}
	if eff.Registry == "" {
		add(at("registry"), "profile %q: site.registry is required with a site: the default prefix (host[:port][/path]) for registries not in site.registries", pn)
		return
	}
	if site.Of(eff).Validate() != nil {
		return // a bad top-level prefix, reported at its field
	}
	var written []string
	for _, pl := range prof.Pullers {
		for _, e := range pl.Environments {
			written = append(written, c.Environments[e].References()...)
		}
		for _, k := range pl.Images {
			written = append(written, c.Images[k].References()...)
		}
	}
	if len(prof.Pullers) > 0 {
		written = append(written, firstNonEmpty(prof.Helper.Image, c.Helper.Image, v1alpha1.DefaultHelperImage))
		if pause := firstNonEmpty(prof.Helper.Pause, c.Helper.Pause); pause != "" {
			written = append(written, pause)
		}
	}
	if prof.OpenPAI != nil {
		if plan, err := openpai.Reduce(openpai.SelectionOf(prof.OpenPAI)); err == nil {
			for _, role := range slices.Sorted(maps.Keys(plan.Images)) {
				written = append(written, plan.Images[role]...)
			}
		}
	}
	var repos []name.Repository
	for _, w := range written {
		if ref, err := imageref.Parse(w); err == nil {
			repos = append(repos, ref.Repository)
		}
	}
	if err := site.Of(eff).Check(repos); err != nil {
		add(at("registries"), "profile %q: %v", pn, err)
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func checkPlatforms(add adder, p cue.Path, platforms []string) {
	seen := map[string]bool{}
	for i, s := range platforms {
		pl, err := v1.ParsePlatform(s)
		if err != nil || pl.OS == "" || pl.Architecture == "" || strings.Count(s, "/") < 1 {
			add(extend(p, "platforms", i), "platform %q must be os/arch[/variant], for example linux/arm64", s)
			continue
		}
		if seen[s] {
			add(extend(p, "platforms", i), "platform %q is listed twice", s)
		}
		seen[s] = true
	}
}

func checkLabel(add adder, p cue.Path, what, v string) {
	if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
		add(p, "%s %q must be a lowercase RFC 1123 label: %s", what, v, strings.Join(msgs, "; "))
	}
}

// checkPlacement applies Kubernetes' label and toleration rules
// (apimachinery util/validation; core/v1 validation of tolerations).
func checkPlacement(add adder, p cue.Path, sel map[string]string, tols []v1alpha1.Toleration) {
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			add(extend(p, "nodeSelector", k), "node selector key %q is not a valid label key: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(sel[k]); len(msgs) > 0 {
			add(extend(p, "nodeSelector", k), "node selector value %q is not a valid label value: %s", sel[k], strings.Join(msgs, "; "))
		}
	}
	for i, t := range tols {
		tp := extend(p, "tolerations", i)
		if t.Key != "" {
			if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
				add(extend(tp, "key"), "toleration key %q is not a valid label key: %s", t.Key, strings.Join(msgs, "; "))
			}
		}
		if t.Key == "" && t.Operator != "Exists" {
			add(tp, "a toleration without key must use operator Exists")
		}
		if t.Operator == "Exists" && t.Value != "" {
			add(extend(tp, "value"), "a toleration with operator Exists has no value")
		}
		if t.Value != "" {
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				add(extend(tp, "value"), "toleration value %q is not a valid label value: %s", t.Value, strings.Join(msgs, "; "))
			}
		}
		if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
			add(extend(tp, "tolerationSeconds"), "tolerationSeconds applies only to effect NoExecute")
		}
	}
}

func checkResources(add adder, p cue.Path, r *v1alpha1.Resources) {
	if r == nil {
		return
	}
	for _, x := range []struct {
		field string
		l     v1alpha1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, q := range []struct {
			name string
			v    v1alpha1.Quantity
		}{{"cpu", x.l.CPU}, {"memory", x.l.Memory}} {
			if q.v == "" {
				continue
			}
			switch v, err := resource.ParseQuantity(string(q.v)); {
			case err != nil:
				add(extend(p, x.field, q.name), "%q is not a Kubernetes quantity (for example 5m or 16Mi)", string(q.v))
			case v.Sign() < 0:
				add(extend(p, x.field, q.name), "%q is negative; a container's %s must be zero or more", string(q.v), x.field)
			}
		}
	}
}

// MergeResources returns what a puller's containers are given by the
// config: the profile's resources, overridden field by field by the
// puller's. Fields that neither sets are "" (render fills in its defaults).
func MergeResources(profile, puller *v1alpha1.Resources) v1alpha1.Resources {
	var out v1alpha1.Resources
	for _, r := range []*v1alpha1.Resources{profile, puller} {
		if r == nil {
			continue
		}
		for _, x := range []struct{ dst, src *v1alpha1.ResourceList }{{&out.Requests, &r.Requests}, {&out.Limits, &r.Limits}} {
			if x.src.CPU != "" {
				x.dst.CPU = x.src.CPU
			}
			if x.src.Memory != "" {
				x.dst.Memory = x.src.Memory
			}
		}
	}
	return out
}

// checkRequestsWithinLimits refuses a request above the limit when the
// config sets both, in the profile (pullerPath nil) or in the profile and
// a puller together (reported only when the puller sets one of the two,
// at the request's own field). Kubernetes refuses such a pod.
func checkRequestsWithinLimits(add adder, profilePath cue.Path, pullerPath *cue.Path, profile, puller *v1alpha1.Resources) {
	merged := MergeResources(profile, puller)
	for _, name := range []string{"cpu", "memory"} {
		get := func(r *v1alpha1.Resources, field string) v1alpha1.Quantity {
			if r == nil {
				return ""
			}
			l := r.Requests
			if field == "limits" {
				l = r.Limits
			}
			if name == "cpu" {
				return l.CPU
			}
			return l.Memory
		}
		req, lim := get(&merged, "requests"), get(&merged, "limits")
		rq, err1 := resource.ParseQuantity(string(req))
		lq, err2 := resource.ParseQuantity(string(lim))
		if req == "" || lim == "" || err1 != nil || err2 != nil || rq.Cmp(lq) <= 0 {
			continue
		}
		at := extend(profilePath, "resources", "requests", name)
		if pullerPath != nil {
			if get(puller, "requests") == "" && get(puller, "limits") == "" {
				continue // the profile's own conflict, reported once
			}
			if get(puller, "requests") != "" {
				at = extend(*pullerPath, "resources", "requests", name)
			} else {
				at = extend(*pullerPath, "resources", "limits", name)
			}
		}
		add(at, "the %s request %s is above the %s limit %s; Kubernetes refuses a container that requests more than its limit", name, req, name, lim)
	}
}

// checkAuth enforces: either secret, or username and a password source;
// usernames without ':' (the docker config "auth" field is
// base64(username:password), so a ':' would split it wrongly); a literal
// password only with AllowLiteralPasswords, and never echoed. who names
// the image or environment in messages, ref is its image reference.
func checkAuth(add adder, c *v1alpha1.Config, p cue.Path, a *v1alpha1.Auth, who, ref string) {
	if a == nil {
		return
	}
	switch {
	case a.Secret != "" && (a.Username != "" || a.Password != ""):
		add(p, "%s: give either auth.secret or auth.username with auth.password, not both", who)
	case a.Secret != "":
		if msgs := validation.IsDNS1123Subdomain(a.Secret); len(msgs) > 0 {
			add(extend(p, "secret"), "%s: %q is not a valid Secret name: %s", who, a.Secret, strings.Join(msgs, "; "))
		}
	case a.Username == "" || a.Password == "":
		add(p, "%s: auth needs a secret name, or both username and password", who)
	default:
		if strings.Contains(a.Username, ":") {
			add(extend(p, "username"), "%s: a username for registry %s cannot contain ':' (the registry's basic auth splits on it)", who, registryOf(ref))
		}
		switch src := a.Password; {
		case strings.HasPrefix(src, PasswordFromEnv):
			if v := strings.TrimPrefix(src, PasswordFromEnv); !envName().MatchString(v) {
				add(extend(p, "password"), "%s: %q is not an environment variable name", who, v)
			}
		case strings.HasPrefix(src, PasswordFromFile):
			if strings.TrimPrefix(src, PasswordFromFile) == "" {
				add(extend(p, "password"), "%s: file: needs a path", who)
			}
		case !c.AllowLiteralPasswords:
			add(extend(p, "password"), "%s: literal passwords are refused in a GitOps repo; use \"env:VARIABLE\", \"file:path\" or an existing Secret (auth.secret), or pass --allow-literal-passwords", who)
		}
	}
}

// registryOf names the registry of ref for messages: host[:port], with
// Docker Hub as "docker.io".
func registryOf(ref string) string {
	r, err := imageref.Parse(ref)
	if err != nil {
		return "(of an invalid reference)"
	}
	host, _, _ := strings.Cut(imageref.RepositoryName(r.Repository), "/")
	return host
}

// suggest returns `; did you mean "x"?` for the closest of names
// (spelling.Nearest), or "".
func suggest(s string, names []string) string {
	best := spelling.Nearest(s, names)
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// checkVerify checks a verify policy: something to verify with; identities
// with a trusted root and a trusted root with identities; each key path
// once; identities and issuers printable (checkPrintable); each identity
// with exactly one of identity and identityRegexp and one of issuer and
// issuerRegexp, the regular expressions valid RE2. The files are read (and
// confined to the config directory) when lock uses them.
func checkVerify(add adder, p cue.Path, v *v1alpha1.Verify) {
	if v == nil {
		return
	}
	if len(v.Keys) == 0 && len(v.Identities) == 0 {
		add(p, "verify needs keys or identities to verify with")
	}
	switch {
	case len(v.Identities) > 0 && v.TrustedRoot == "":
		add(extend(p, "identities"), "identities need a trustedRoot (a sigstore trusted_root.json in a folder of the config directory, such as trust/trusted_root.json) to be checked against")
	case len(v.Identities) == 0 && v.TrustedRoot != "":
		add(extend(p, "trustedRoot"), "a trustedRoot is only used by identities; give identities or remove it")
	}
	first := map[string]int{}
	for i, k := range v.Keys {
		if j, ok := first[k]; ok {
			add(extend(p, "keys", i), "key %q is listed twice (keys[%d] too); list each key once", k, j)
			continue
		}
		first[k] = i
	}
	for i, id := range v.Identities {
		ip := extend(p, "identities", i)
		for _, f := range []struct{ name, value string }{
			{"identity", id.Identity}, {"identityRegexp", id.IdentityRegexp},
			{"issuer", id.Issuer}, {"issuerRegexp", id.IssuerRegexp},
		} {
			if f.value != "" {
				checkPrintable(add, extend(ip, f.name), f.name, f.value)
			}
		}
		checkExactOrRegexp(add, ip, "identity", id.Identity, id.IdentityRegexp)
		checkExactOrRegexp(add, ip, "issuer", id.Issuer, id.IssuerRegexp)
	}
}

// checkExactOrRegexp checks that exactly one of the field f (exact) and
// f+"Regexp" is set, the latter a valid RE2 expression.
func checkExactOrRegexp(add adder, p cue.Path, f, exact, re string) {
	switch {
	case exact != "" && re != "":
		add(extend(p, f+"Regexp"), "give either %s or %sRegexp, not both", f, f)
	case exact == "" && re == "":
		add(p, "an identity needs %s or %sRegexp", f, f)
	case re != "":
		if _, err := regexp.Compile(re); err != nil {
			add(extend(p, f+"Regexp"), "%q is not a regular expression: %v", re, err)
		}
	}
}

// checkImagePlace checks an image place: a path without empty keys and a
// pattern that compiles (RE2) with exactly one capturing group.
func checkImagePlace(add adder, p cue.Path, ip v1alpha1.ImagePlace) {
	if slices.Contains(strings.Split(ip.Path, "/"), "") {
		add(extend(p, "path"), "%q has an empty key: write keys separated by single slashes, as data/images", ip.Path)
	}
	if ip.Pattern == "" {
		return
	}
	re, err := regexp.Compile(ip.Pattern)
	switch {
	case err != nil:
		add(extend(p, "pattern"), "%q is not a regular expression: %v", ip.Pattern, err)
	case re.NumSubexp() != 1:
		add(extend(p, "pattern"), "%q has %d capturing groups; give exactly one, around the image reference, as --image=(\\S+)", ip.Pattern, re.NumSubexp())
	}
}

// checkAdmission checks a profile's policy field: each kind once, a name
// that is a DNS label of at most 40 characters (suffixes are appended),
// and no audit mode with crio.
func checkAdmission(add adder, p cue.Path, a *v1alpha1.AdmissionPolicy) {
	if a == nil {
		return
	}
	seen := map[string]bool{}
	for i, k := range a.Kinds {
		if seen[k] {
			add(extend(p, "kinds"), "kind %q is listed twice (kinds[%d])", k, i)
		}
		seen[k] = true
	}
	if a.Name != "" {
		if msgs := validation.IsDNS1123Label(a.Name); len(msgs) > 0 || len(a.Name) > 40 {
			if len(a.Name) > 40 {
				msgs = append(msgs, "it has more than 40 characters (suffixes are appended)")
			}
			add(extend(p, "name"), "policy name %q must be a DNS label of at most 40 characters: %s", a.Name, strings.Join(msgs, "; "))
		}
	}
	if a.Mode == v1alpha1.AdmissionAudit && seen[v1alpha1.AdmissionCRIO] {
		add(extend(p, "mode"), "mode audit with kind crio: CRI-O's policy.json has no audit mode; use mode enforce, or leave crio out")
	}
}
