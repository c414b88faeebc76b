// Package plan turns a validated config, a profile and the lock into the
// profile's image plan: every use of every image (the reference as written,
// its lock key, platforms, auth, the puller and the environment, images key,
// OpenPAI role, helper or pause that uses it) and the digest each use pins,
// with the reason. It is the only place that decides which images a profile
// has and which digest it pins: render, lock, bump, vet and the KRM function
// all read a Plan. It is pure: no file, network or environment access.
package plan

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/site"
	"slices"
	"strings"

	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
)

// Kind says what in a puller uses an image.
type Kind int

const (
	// KindEnvironment is an entry of the puller's environments; Use.Name is the
	// environment's name.
	KindEnvironment Kind = iota
	// KindImage is an entry of the puller's images; Use.Name is the images key.
	KindImage
	// KindOpenPAI is an image of the reduced OpenPAI set on a node role of the
	// puller; Use.Name is the puller's role ("master", "worker"). The
	// images of OpenPAI's role "all" come with each role.
	KindOpenPAI
	// KindHelper is the profile's helper.image, the first init container of
	// every DaemonSet of the puller.
	KindHelper
	// KindPause is the profile's helper.pause, the main container.
	KindPause
	// KindWorkload is an image of a workload that the KRM function pins
	// but no puller pre-pulls (pin mode, a Workload); Use.Name is the
	// workload and its field, Profile, Namespace and Puller are empty.
	KindWorkload
)

// Use is one use of an image by a puller of a profile.
type Use struct {
	// Profile, Namespace and Puller name the puller.
	Profile, Namespace, Puller string
	// Kind and Name say what in the puller uses the image (see Kind).
	Kind Kind
	Name string
	// Ref is the reference as this use writes it, parsed.
	Ref imageref.Ref
	// Platforms are the platforms the use asks for, as written
	// (v1alpha1.Image.Platforms); empty for the whole image.
	Platforms []string
	// Auth is the use's registry credential from the config, or nil.
	Auth *v1alpha1.Auth
	// PasswordAt is where Auth.Password is written
	// (v1alpha1.Config.PasswordAt), for errors; zero when unknown.
	PasswordAt v1alpha1.Position
	// File is the file a KindWorkload use's workload is read from
	// (Workload.File), for errors; "" when unknown and for other kinds.
	File string
	// EveryNode is set on a KindOpenPAI use whose image OpenPAI runs on
	// every node (its role "all" list holds it), not only on Name's role.
	EveryNode bool
	// NodeSelector and Tolerations are an environment's own placement,
	// with {NodeLabel: NodeLabelValue} added to the selector for a per node
	// group choice; an image's selector is that alone; empty for the other
	// kinds.
	NodeSelector map[string]string
	Tolerations  []v1alpha1.Toleration
	// NodeLabel and NodeLabelValue are the node label and its value whose
	// nodes this use's reference is chosen for (the environment's or
	// image's byNodeLabel, v1alpha1.ByNodeLabel); both empty for a use of
	// one reference on every node.
	NodeLabel, NodeLabelValue string
	// Artifact is set on a KindImage use of a catalogue image marked
	// artifact (v1alpha1.Image.Artifact): render mounts it as an image
	// volume of the pre-pull pod instead of running it.
	Artifact bool
	// Site is the reference the site registry serves this use under
	// (SiteReference: the site repository with Ref's tag, no digest), or
	// empty when the profile has no site. Render emits Site pinned to
	// Pin.Digest instead of Ref; the lock stays keyed by Ref.
	Site string
	// Pin is the digest this use pins, and why.
	Pin Pin
	// Credential is the pull Secret the use's image is pulled with: from
	// its own auth, for the registry the node pulls from (PullRef); nil
	// when it has no auth (the helper and pause images never have one).
	// Render pulls the uses of each distinct Credential, and those with
	// none, in pre-pull pods of their own.
	Credential *Credential
}

// Why says where a pinned digest comes from.
type Why int

const (
	// Unpinned means no digest was chosen (no lock was given, or the lock has no
	// usable entry: see Pin.Errs).
	Unpinned Why = iota
	// PinWritten is a digest written in the config's reference
	// ("repo:tag@sha256:…"): a user's pin, never moved.
	PinWritten
	// PinIndex is the lock entry's multi-arch index: each node pulls its own
	// platform. The default, and what several requested platforms pin (each
	// checked to be a child).
	PinIndex
	// PinManifest is the lock entry's single manifest.
	PinManifest
	// PinChild is the child of the index for the single requested platform
	// (Pin.Platform).
	PinChild
)

// String names w in messages: "written", "index", "manifest", "child".
func (w Why) String() string {
	switch w {
	case PinWritten:
		return "written"
	case PinIndex:
		return "index"
	case PinManifest:
		return "manifest"
	case PinChild:
		return "child"
	default:
		return "unpinned"
	}
}

// Pin is the digest a use pins.
type Pin struct {
	// Digest is "sha256:…", or empty when Why is Unpinned.
	Digest string
	// Why says where Digest comes from.
	Why Why
	// Platform is the requested platform of a Child pin, as written.
	Platform string
	// Errs say why the pin is missing or wrong, one error per problem: a
	// lock without an entry for the key (one error wrapping
	// lock.ErrMissing), or a requested platform the entry lacks (the
	// errors of lock.DigestFor). A Written pin has none.
	Errs []error
}

// Pinned is the use's reference as written, or its Site reference when
// the profile has a site, with its pinned digest after '@'
// ("busybox:1.31.1@sha256:…"); with no digest, "sha256:missing" stands in
// for it.
func (u *Use) Pinned() string {
	d := u.Pin.Digest
	if d == "" {
		d = "sha256:missing"
	}
	if u.Site != "" {
		return u.Site + "@" + d
	}
	return u.Ref.Pin(d)
}

// Key is the use's lock key (imageref.Ref.Key).
func (u *Use) Key() string { return u.Ref.Key() }

// PullerName is "namespace/puller", the puller's identity in messages; ""
// for a KindWorkload use, which no puller has.
func (u *Use) PullerName() string {
	if u.Kind == KindWorkload {
		return ""
	}
	return u.Namespace + "/" + u.Puller
}

// Item names what in the puller uses the image, for tables and PR text:
// `environment "jupyter"`, `image "tool"`, "OpenPAI images", "helper image",
// "pause image"; for a KindWorkload use, the workload and field:
// "Deployment submarine/web spec.template.spec.containers[0].image".
//
// A use chosen by a node label names its value too: `environment "driver"
// for feature.node.kubernetes.io/kernel-version.full=5.15.0-91-generic`.
func (u *Use) Item() string {
	var group string
	if u.NodeLabel != "" {
		group = fmt.Sprintf(" for %s=%s", u.NodeLabel, u.NodeLabelValue)
	}
	switch u.Kind {
	case KindWorkload:
		return u.Name
	case KindEnvironment:
		return fmt.Sprintf("environment %q%s", u.Name, group)
	case KindImage:
		return fmt.Sprintf("image %q%s", u.Name, group)
	case KindOpenPAI:
		return "OpenPAI images"
	case KindHelper:
		return "helper image"
	default:
		return "pause image"
	}
}

// UsedBy names the use in render's error messages: `environment "jupyter"`,
// `image "tool"`, "OpenPAI master role", `profile "p" helper.image`,
// `profile "p" helper.pause`.
func (u *Use) UsedBy() string {
	switch u.Kind {
	case KindOpenPAI:
		return fmt.Sprintf("OpenPAI %s role", u.Name)
	case KindHelper:
		return fmt.Sprintf("profile %q helper.image", u.Profile)
	case KindPause:
		return fmt.Sprintf("profile %q helper.pause", u.Profile)
	default:
		return u.Item()
	}
}

// Puller is the plan of one puller of the profile.
type Puller struct {
	// Puller is the config's puller.
	Puller *v1alpha1.Puller
	// Uses are its images in config order: environments, images, then the
	// OpenPAI images of each role (the role's own, then role "all"'s, each
	// list sorted).
	Uses []*Use
	// Helper and Pause are the puller's uses of the profile's helper and
	// pause images; Pause is nil when the profile sets no helper.pause (the
	// helper is then the main container too).
	Helper, Pause *Use
}

// Image is one lock entry's worth of the plan: every use, in any spelling,
// of one normalised reference.
type Image struct {
	// Key is the lock key, imageref.Ref.Key of every use's Ref.
	Key string
	// Ref is the spelling the lock records: when some spelling pins a
	// digest, the smallest pinned spelling (a pin applies to every spelling
	// of its key); otherwise the smallest spelling in byte order.
	Ref imageref.Ref
	// Platforms is the union of the uses' platforms, sorted.
	Platforms []string
	// Auth is the credential to resolve the image with: the first
	// username/password auth among Uses; nil when there is none (an auth
	// naming an existing Secret cannot be used outside the cluster).
	Auth *v1alpha1.Auth
	// Uses are sorted by profile, namespace, puller and Item.
	Uses []*Use
	// Entry is the lock's entry for Key, or nil (no lock, or no entry).
	Entry *lock.Entry
}

// UsedBy describes the uses in one line for messages: `environment
// "jupyter" in tenant-a/notebook-images, …` (a workload's: "Pod web
// spec.containers[0].image in ../base/web.yaml" when its file is known), at
// most three, then "N more".
func (img *Image) UsedBy() string {
	var parts []string
	for _, u := range img.Uses {
		s := u.Item()
		if p := u.PullerName(); p != "" {
			s += " in " + p
		} else if u.File != "" {
			s += " in " + u.File
		}
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("%d more", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

// Pins are the distinct digests the uses pin, sorted; unpinned uses add
// none.
func (img *Image) Pins() []string {
	var out []string
	for _, u := range img.Uses {
		if d := u.Pin.Digest; d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// Plan is the image plan of one profile (Build) or of every profile (All).
type Plan struct {
	// Profiles are the profiles the plan covers, sorted.
	Profiles []string
	// Profile is the planned profile's config (Build only).
	Profile *v1alpha1.Profile
	// Pullers are the pullers of the profile in config order (Build only).
	Pullers []Puller
	// OpenPAI is the profile's reduced OpenPAI selection, nil when it has
	// none (Build only).
	OpenPAI *openpai.Reduction
	// Site is the site registry that applies to the profile (Site's rule),
	// nil for none (Build only).
	Site *v1alpha1.Site
	// lock is the lock Build pinned with (nil for none), for the OpenPAI
	// images no use pins (OpenPAIList, SiteManifests).
	lock *lock.Lock
	// Images are one per lock key, sorted by key: exactly what a lock for
	// the plan holds.
	Images []*Image
}

// Build returns the image plan of profile ("" picks the only profile; the
// error of v1alpha1.Config.Profile otherwise). With a lock, every use is
// pinned: a digest written in its reference; else the lock entry's digest
// for no platform or several (each checked against the entry), the
// matching child for one (lock.DigestFor). Pin problems are recorded
// in each use's Pin.Errs, not returned. With l nil only written
// digests are pinned (what lock and bump start from).
//
// Errors: the profile is unknown, its OpenPAI selection does not reduce, or
// a reference does not parse (naming the environment, image or role).
func Build(cfg *v1alpha1.Config, profile string, l *lock.Lock) (*Plan, error) {
	name, prof, err := cfg.Profile(profile)
	if err != nil {
		return nil, err
	}
	p := &Plan{Profiles: []string{name}, Profile: prof, lock: l}
	if p.Site, err = Site(cfg, name); err != nil {
		return nil, err
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if prof.OpenPAI != nil {
		if p.OpenPAI, err = openpai.Reduce(openpai.SelectionOf(prof.OpenPAI)); err != nil {
			fail("profile %q openpai: %w", name, err)
		}
	}
	parse := func(u *Use, written string) *Use {
		ref, err := imageref.Parse(written)
		if err != nil {
			fail("%s: %w", u.UsedBy(), err)
			return nil
		}
		u.Profile, u.Ref = name, ref
		return u
	}
	helper := parse(&Use{Kind: KindHelper}, prof.Helper.Image)
	var pause *Use // none: the helper waits as the main container
	if prof.Helper.Pause != "" {
		pause = parse(&Use{Kind: KindPause}, prof.Helper.Pause)
	}
	var all []*Use
	for i := range prof.Pullers {
		sp := &prof.Pullers[i]
		pp := Puller{Puller: sp}
		add := func(u *Use) {
			if u != nil {
				u.Namespace, u.Puller = sp.Namespace, sp.Name
				pp.Uses = append(pp.Uses, u)
			}
		}
		for _, e := range sp.Environments {
			env := cfg.Environments[e]
			for _, c := range choices(env.Image, env.ByNodeLabel, env.NodeSelector) {
				add(parse(&Use{Kind: KindEnvironment, Name: e, Platforms: env.Platforms, Auth: env.Auth, PasswordAt: cfg.PasswordAt("environments", e),
					NodeSelector: c.selector, Tolerations: env.Tolerations, NodeLabel: c.label, NodeLabelValue: c.value}, c.ref))
			}
		}
		for _, k := range sp.Images {
			im := cfg.Images[k]
			for _, c := range choices(im.Reference, im.ByNodeLabel, nil) {
				add(parse(&Use{Kind: KindImage, Name: k, Platforms: im.Platforms, Auth: im.Auth, PasswordAt: cfg.PasswordAt("images", k),
					Artifact: im.Artifact, NodeSelector: c.selector, NodeLabel: c.label, NodeLabelValue: c.value}, c.ref))
			}
		}
		if p.OpenPAI != nil {
			for _, role := range sp.OpenPAI {
				for _, r := range []openpai.Role{openpai.Role(role), openpai.RoleAll} {
					for _, s := range p.OpenPAI.Images[r] {
						ref, err := imageref.Parse(s)
						if err != nil {
							fail("OpenPAI image %q: %w", s, err)
							continue
						}
						add(&Use{Profile: name, Kind: KindOpenPAI, Name: role, Ref: ref,
							EveryNode: slices.Contains(p.OpenPAI.Images[openpai.RoleAll], s)})
					}
				}
			}
		}
		for _, err := range authConflicts(pp.Uses) {
			fail("puller %s/%s: %w", sp.Namespace, sp.Name, err)
		}
		for _, err := range artifactConflicts(pp.Uses) {
			fail("puller %s/%s: %w", sp.Namespace, sp.Name, err)
		}
		all = append(all, pp.Uses...)
		for _, u := range []*Use{helper, pause} {
			if u != nil {
				c := *u
				c.Namespace, c.Puller = sp.Namespace, sp.Name
				all = append(all, &c)
				if u == helper {
					pp.Helper = &c
				} else {
					pp.Pause = &c
				}
			}
		}
		p.Pullers = append(p.Pullers, pp)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, u := range all {
		u.Pin = pin(u, l)
		if p.Site != nil {
			if u.Site, err = SiteReference(p.Site, u.Ref); err != nil {
				fail("%s: %w", u.UsedBy(), err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, pp := range p.Pullers {
		for _, u := range pp.Uses {
			u.Credential = credential(u, pp.Puller, prof.Secrets)
		}
	}
	p.Images, _ = images(all, l)
	return p, nil
}

// choice is one reference of an environment or image, with the node
// selector of the nodes that pre-pull it and the byNodeLabel label and
// value it is chosen for ("" for the one reference of every node).
type choice struct {
	ref, label, value string
	selector          map[string]string
}

// choices lists the references of an entry: ref alone with the entry's own
// selector sel, or one per byNodeLabel value in sorted order, each with sel
// plus {label: value}. schema's loader refuses a sel that sets the label.
func choices(ref string, b *v1alpha1.ByNodeLabel, sel map[string]string) []choice {
	if b == nil {
		return []choice{{ref: ref, selector: sel}}
	}
	var out []choice
	for _, v := range b.Values() {
		s := make(map[string]string, len(sel)+1)
		for k, x := range sel {
			s[k] = x
		}
		s[b.Label] = v
		out = append(out, choice{ref: b.References[v], label: b.Label, value: v, selector: s})
	}
	return out
}

// conflicts pairs each use of uses with the first use of the same image
// (one lock key, in any spelling) and returns what conflict says of each
// pair (nil when the two agree).
func conflicts(uses []*Use, conflict func(first, u *Use) error) []error {
	first := map[string]*Use{}
	var errs []error
	for _, u := range uses {
		f, ok := first[u.Key()]
		if !ok {
			first[u.Key()] = u
			continue
		}
		if err := conflict(f, u); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// authConflicts refuses two uses of one puller that name the same image
// with different auth: the puller pulls the image once, in one container,
// with one set of credentials, so one of them would be dropped silently.
// The errors name the image, both uses and both spellings, never an auth
// value; nil when there is none.
func authConflicts(uses []*Use) []error {
	return conflicts(uses, func(f, u *Use) error {
		if sameAuth(f.Auth, u.Auth) {
			return nil
		}
		return fmt.Errorf("%s (%s) and %s (%s) are the same image %s with different auth; the puller pulls it once with one credential: give both the same auth, or list the image once",
			f.UsedBy(), f.Ref.Written, u.UsedBy(), u.Ref.Written, u.Key())
	})
}

// artifactConflicts refuses two uses of one puller that name the same
// image where one is an artifact and the other is not: the puller pulls
// the image once, either as an image volume or as a container, so one of
// the two would be dropped silently. nil when there is none.
func artifactConflicts(uses []*Use) []error {
	return conflicts(uses, func(f, u *Use) error {
		if f.Artifact == u.Artifact {
			return nil
		}
		art, img := f, u
		if u.Artifact {
			art, img = u, f
		}
		return fmt.Errorf("%s (%s) is an artifact and %s (%s) runs the same image %s as a container; the puller pulls it once: mark both artifact, or list the image once",
			art.UsedBy(), art.Ref.Written, img.UsedBy(), img.Ref.Written, u.Key())
	})
}

// sameAuth reports whether a and b are the same credential (nil and an
// empty Auth are the same).
func sameAuth(a, b *v1alpha1.Auth) bool {
	var x, y v1alpha1.Auth
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	return x == y
}

// SiteReference returns ref as the site registry s serves it, without a
// digest: the site repository (site.Mapping.Repository, the one rule
// mirror shares) and ref's tag when it has one ("latest" when it was
// written with neither tag nor digest). With s nil it returns ref as
// written, digest removed. Errors are the mapping's (*site.Error).
func SiteReference(s *v1alpha1.Site, ref imageref.Ref) (string, error) {
	if s == nil {
		base, _, _ := strings.Cut(ref.Written, "@")
		return base, nil
	}
	repo, err := site.Of(s).Repository(ref.Repository)
	if err != nil {
		return "", err
	}
	out := repo.Name()
	if ref.Tag != "" {
		out += ":" + ref.Tag
	}
	return out, nil
}

// Workload is an image written in a workload that the KRM function pins
// in place (pin mode) without pre-pulling it: a Deployment's container
// image, say. Such an image needs a lock entry like any other.
type Workload struct {
	// Object names the workload: "Deployment submarine/web".
	Object string
	// Field is the image's field path in it:
	// "spec.template.spec.containers[0].image".
	Field string
	// Image is the reference as written there.
	Image string
	// File is the file the workload is read from, relative to the
	// kustomization's directory ("../base/web.yaml"); "" when unknown.
	File string
}

// All returns the plan of every profile of cfg plus the workloads' images
// (KindWorkload uses, each with the Site reference of cfg's site for
// them, Site's rule: the workloads of a KRM function's kustomization, whose
// config is its one rendered profile or none): Images over all of them,
// one per lock key, each
// with the uses of every profile (Pullers and OpenPAI are left empty). It
// is what a complete lock holds: what `lock` and `bump` resolve and `vet
// --remote` checks. Errors: those of Build, prefixed with the profile; a
// workload image that does not parse (naming the object and field); and a
// key whose spellings pin two different digests (naming both spellings),
// which no single lock entry can serve.
func All(cfg *v1alpha1.Config, l *lock.Lock, workloads ...Workload) (*Plan, error) {
	ws, err := workloadUses(cfg, l, workloads)
	if err != nil {
		return nil, err
	}
	var plans []*Plan
	for _, name := range cfg.ProfileNames() {
		p, err := Build(cfg, name, l)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
		plans = append(plans, p)
	}
	return union(plans, ws, l)
}

// Union is All over profile plans a caller has built already (Build of
// profiles of cfg with l, in any order), so that a run builds each
// profile's plan once: the same plan All returns when plans are every
// profile's, with the workloads' images. Errors: All's, but those of
// Build, which the caller has seen.
func Union(cfg *v1alpha1.Config, l *lock.Lock, plans []*Plan, workloads ...Workload) (*Plan, error) {
	ws, err := workloadUses(cfg, l, workloads)
	if err != nil {
		return nil, err
	}
	plans = slices.Clone(plans)
	slices.SortFunc(plans, func(a, b *Plan) int { return strings.Compare(a.Profiles[0], b.Profiles[0]) })
	return union(plans, ws, l)
}

// workloadUses are the KindWorkload uses of workloads, pinned with l, each
// with the Site reference of cfg's site (Site's rule). Errors: the site's,
// and every workload image that does not parse or map (naming the object
// and field), all at once.
func workloadUses(cfg *v1alpha1.Config, l *lock.Lock, workloads []Workload) ([]*Use, error) {
	var all []*Use
	var errs []error
	var ws *v1alpha1.Site
	if len(workloads) > 0 {
		var err error
		if ws, err = Site(cfg); err != nil {
			return nil, fmt.Errorf("the site of the workloads the function pins: %w", err)
		}
	}
	for _, w := range workloads {
		ref, err := imageref.Parse(w.Image)
		if err != nil {
			at := ""
			if w.File != "" {
				at = w.File + ": "
			}
			errs = append(errs, fmt.Errorf("%s%s %s: %w", at, w.Object, w.Field, err))
			continue
		}
		u := &Use{Kind: KindWorkload, Name: w.Object + " " + w.Field, Ref: ref, File: w.File}
		u.Pin = pin(u, l)
		if ws != nil {
			if u.Site, err = SiteReference(ws, ref); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", u.UsedBy(), err))
				continue
			}
		}
		all = append(all, u)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return all, nil
}

// union is the plan of plans (one profile each, sorted by name) and the
// workload uses ws: one Image per lock key over all their uses. Errors:
// keys whose spellings pin different digests.
func union(plans []*Plan, ws []*Use, l *lock.Lock) (*Plan, error) {
	out := &Plan{}
	all := ws
	for _, p := range plans {
		out.Profiles = append(out.Profiles, p.Profiles[0])
		for _, img := range p.Images {
			all = append(all, img.Uses...)
		}
	}
	imgs, conflicts := images(all, l)
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(conflicts, "\n"))
	}
	out.Images = imgs
	return out, nil
}

// PasswordSources lists, sorted by source, the password sources of the
// credentials the profile's Secrets hold, each with the uses that need it
// (`environment "jupyter-gpu"`, `image "x"`): what must be read before it
// renders. It is empty when the profile's secrets mode is "reference" (no
// Secret is rendered then), and for a plan of All.
func (p *Plan) PasswordSources() []creds.Source {
	if p.Profile == nil || p.Profile.Secrets != v1alpha1.SecretsRender {
		return nil
	}
	users := map[string][]string{}
	at := map[string][]v1alpha1.Position{}
	for _, pp := range p.Pullers {
		for _, u := range pp.Uses {
			if a := u.Auth; a != nil && a.Password != "" && !slices.Contains(users[a.Password], u.UsedBy()) {
				users[a.Password] = append(users[a.Password], u.UsedBy())
				if !u.PasswordAt.IsZero() && !slices.Contains(at[a.Password], u.PasswordAt) {
					at[a.Password] = append(at[a.Password], u.PasswordAt)
				}
			}
		}
	}
	out := make([]creds.Source, 0, len(users))
	for s, us := range users {
		slices.Sort(us)
		slices.SortFunc(at[s], v1alpha1.Position.Compare)
		out = append(out, creds.Source{Source: s, UsedBy: us, At: at[s]})
	}
	slices.SortFunc(out, func(a, b creds.Source) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// AuthSources lists, sorted by source, the password sources of images'
// registry credentials (Image.Auth), each with the images that use it
// (as written): what a registry client may have to read for them (lock,
// bump, vet --remote, mirror). PasswordSources is the other list: what
// a profile's Secrets hold.
func AuthSources(images []*Image) []creds.Source {
	users := map[string][]string{}
	for _, img := range images {
		if img.Auth != nil && img.Auth.Password != "" && !slices.Contains(users[img.Auth.Password], img.Ref.Written) {
			users[img.Auth.Password] = append(users[img.Auth.Password], img.Ref.Written)
		}
	}
	out := make([]creds.Source, 0, len(users))
	for src, us := range users {
		slices.Sort(us)
		out = append(out, creds.Source{Source: src, UsedBy: us})
	}
	slices.SortFunc(out, func(a, b creds.Source) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// Uses are every use of the plan, in Images order.
func (p *Plan) Uses() []*Use {
	var out []*Use
	for _, img := range p.Images {
		out = append(out, img.Uses...)
	}
	return out
}

// Image returns the plan's image with lock key key, or nil.
func (p *Plan) Image(key string) *Image {
	i, ok := slices.BinarySearchFunc(p.Images, key, func(img *Image, k string) int { return strings.Compare(img.Key, k) })
	if !ok {
		return nil
	}
	return p.Images[i]
}

// pin chooses the digest u pins with lock l (nil: only written digests).
func pin(u *Use, l *lock.Lock) Pin {
	return PinOf(u.Ref, u.Platforms, l)
}

// PinOf is the pin rule for one reference asking for platforms: the digest
// written in ref; else, with a lock, the entry's digest (index or
// manifest) for no platform or several (each checked to be a child), the
// matching child for one (lock.DigestFor). Without a lock (nil) only
// a written digest is pinned. Build pins every use with it; the KRM
// function's pin mode pins workload images with it.
func PinOf(ref imageref.Ref, platforms []string, l *lock.Lock) Pin {
	if d := ref.Digest; d != "" {
		return Pin{Digest: d, Why: PinWritten}
	}
	if l == nil {
		return Pin{}
	}
	e, ok := l.Lookup(ref.Key())
	if !ok {
		return Pin{Errs: []error{fmt.Errorf("image %s (lock key %s): %w", ref.Written, ref.Key(), lock.ErrMissing)}}
	}
	why := PinManifest
	if e.Kind == lock.KindIndex {
		why = PinIndex
	}
	switch len(platforms) {
	case 0:
		return Pin{Digest: e.Digest, Why: why}
	case 1:
		d, err := lock.DigestFor(e, platforms[0])
		if err != nil {
			return Pin{Errs: []error{err}}
		}
		if e.Kind != lock.KindIndex {
			// A single manifest of that platform: the image itself.
			return Pin{Digest: d, Why: PinManifest, Platform: platforms[0]}
		}
		return Pin{Digest: d, Why: PinChild, Platform: platforms[0]}
	default:
		p := Pin{Digest: e.Digest, Why: why}
		for _, pl := range platforms {
			if _, err := lock.DigestFor(e, pl); err != nil {
				p.Errs = append(p.Errs, err)
			}
		}
		return p
	}
}

// images groups uses by lock key into Images sorted by key, and lists the
// keys whose spellings pin different digests.
func images(uses []*Use, l *lock.Lock) ([]*Image, []string) {
	byKey := map[string][]*Use{}
	for _, u := range uses {
		byKey[u.Key()] = append(byKey[u.Key()], u)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var (
		out       []*Image
		conflicts []string
	)
	for _, k := range keys {
		us := slices.Clone(byKey[k])
		slices.SortStableFunc(us, compareUses)
		img := &Image{Key: k, Uses: us}
		spellings := map[string]imageref.Ref{}
		pins := map[string]string{} // digest -> smallest spelling pinning it
		for _, u := range us {
			spellings[u.Ref.Written] = u.Ref
			img.Platforms = append(img.Platforms, u.Platforms...)
			if a := u.Auth; img.Auth == nil && a != nil && a.Username != "" && a.Password != "" {
				img.Auth = a
			}
		}
		written := make([]string, 0, len(spellings))
		for s := range spellings {
			written = append(written, s)
		}
		slices.Sort(written)
		img.Ref = spellings[written[0]]
		for _, s := range written {
			if d := spellings[s].Digest; d != "" {
				if _, ok := pins[d]; !ok {
					pins[d] = s
				}
			}
		}
		switch len(pins) {
		case 0:
		case 1:
			for _, s := range pins {
				img.Ref = spellings[s]
			}
		default:
			var ss []string
			for _, s := range pins {
				ss = append(ss, fmt.Sprintf("%q", s))
			}
			slices.Sort(ss)
			conflicts = append(conflicts, fmt.Sprintf("image %s is pinned to %d different digests: %s; pin one digest (or none) for every spelling", k, len(pins), strings.Join(ss, ", ")))
		}
		slices.Sort(img.Platforms)
		img.Platforms = slices.Compact(img.Platforms)
		if len(img.Platforms) == 0 {
			img.Platforms = nil
		}
		if e, ok := l.Lookup(k); ok {
			img.Entry = &e
		}
		out = append(out, img)
	}
	return out, conflicts
}

// compareUses orders uses by profile, namespace, puller and Item.
func compareUses(a, b *Use) int {
	return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Namespace, b.Namespace),
		strings.Compare(a.Puller, b.Puller), strings.Compare(a.Item(), b.Item()))
}
