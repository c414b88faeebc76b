package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/sigverify"
	"github.com/stowage/stowage/internal/site"
	configsource "github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/verifypolicy"
	"github.com/stowage/stowage/internal/words"
)

// LayoutPrefix marks an OCI image layout (a bundle) in `mirror --to` and
// `--from`.
const LayoutPrefix = "oci:"

// Request is one `stowage mirror` run as its flags ask for it.
type Request struct {
	// Dir is the config directory (DIR); with From, where password
	// files are read from. DirGiven is set when the command line gave it.
	Dir      string
	DirGiven bool
	// Profiles are the profiles whose images to copy (--profile; all
	// when empty).
	Profiles []string
	// To is the destination as given: HOST[:PORT][/PREFIX], oci:PATH for
	// a bundle, or "" for the site render names.
	To string
	// From is the bundle a push reads, oci:PATH (--from); "" for the
	// images' own registries.
	From string
	// Have is the site lock of what the site holds (--have), "-" for
	// Stdin; "" for none.
	Have string
	// Trust is the site's own trust file a push from a bundle verifies
	// under (--trust, $STOWAGE_SITE_TRUST), "-" for Stdin; "" for the
	// bundle's own trust material.
	Trust string
	// Artifacts are the --artifact references.
	Artifacts []string
	// NoAttachments leaves attachments out; NoVerify leaves out the
	// verification under the verify policies.
	NoAttachments, NoVerify bool
	// Stdin is what "-" reads; Warn receives the warnings and notes,
	// for stderr.
	Stdin io.Reader
	Warn  io.Writer
}

// toBundle reports whether the destination is a bundle.
func (r *Request) toBundle() bool { return strings.HasPrefix(r.To, LayoutPrefix) }

// fromPath is the directory of the From bundle.
func (r *Request) fromPath() string { return strings.TrimPrefix(r.From, LayoutPrefix) }

// Validate refuses the flags that contradict each other, each an
// *OptionError naming them.
func (r *Request) Validate() error {
	from := r.From != ""
	switch {
	case from && !strings.HasPrefix(r.From, LayoutPrefix):
		return usage(fmt.Errorf("--from %q: want oci:PATH (a registry source is the image's own registry, or --mirror)", r.From))
	case from && r.toBundle():
		return usage(errors.New("--from oci: and --to oci: together copy nothing a file copy would not; give a registry to --to"))
	case from && (r.DirGiven || len(r.Profiles) > 0):
		return usage(errors.New("--from oci: takes the images from the bundle; give no DIR and no --profile"))
	case r.Trust != "" && !from:
		return usage(errors.New("--trust is the site's trust for a push from a bundle: give it with --from oci:PATH"))
	case r.Trust != "" && r.NoVerify:
		return usage(errors.New("--no-verify and a site trust (--trust or " + SiteTrustEnv + ") contradict each other"))
	case r.Trust == confined.Stdin && r.Have == confined.Stdin:
		return usage(errors.New("--trust - and --have - both read standard input; give one of them a file"))
	case from && len(r.Artifacts) > 0:
		return usage(errors.New("--from oci: pushes the artifacts the bundle holds; give --artifact when the bundle is written (--to oci:)"))
	}
	return nil
}

// Prepare is the job req asks for: a From bundle's images under its
// policies (FromBundle, BundlePolicies), else those of the source load
// returns (FromSource); less what the Have site lock pins (LeaveOut); with
// the policies NoAttachments and NoVerify leave (Prune).
func Prepare(req Request, load func() (*configsource.Source, error)) (*Job, error) {
	var j *Job
	var err error
	if req.From != "" {
		if j, err = FromBundle(req); err == nil {
			err = j.BundlePolicies(req)
		}
	} else {
		var src *configsource.Source
		if src, err = load(); err == nil {
			j, err = FromSource(src, req)
		}
	}
	if err != nil {
		return nil, err
	}
	if req.Have != "" {
		data, err := confined.ReadFlag(req.Stdin, req.Have, confined.Lock)
		if err != nil {
			return nil, fmt.Errorf("--have: %w", err)
		}
		if err := j.LeaveOut(data, req.Have); err != nil {
			return nil, err
		}
	}
	if err := j.Prune(req); err != nil {
		return nil, err
	}
	return j, nil
}

// Job is what one mirror run copies and verifies: the images, their
// lock, where they go and the policies they are verified under. FromBundle
// and FromSource make one; Options turns it into New's options.
type Job struct {
	// Images are the images to copy; Lock the lock bytes a bundle
	// written records.
	Images []Image
	Lock   []byte
	// Have are the images the site lock (LeaveOut) pins.
	Have []Image
	// Roles are the lock keys of each OpenPAI role's images (the role
	// "all" images with each), for bytes per role; empty without OpenPAI.
	Roles map[openpai.Role]map[string]bool
	// AuthImages give the password sources their users, for messages;
	// Passwords is the rule their passwords are read under.
	AuthImages []*plan.Image
	Passwords  creds.Rule
	// Policies are the verify policies of the images by lock key, and
	// Trust the trust material they make (what a bundle records).
	Policies map[string][]*sigverify.Policy
	Trust    *Trust
	// TrustUsed names the trust a push from a bundle verifies under,
	// for the reports; nil without From.
	TrustUsed *v1alpha1.MirrorTrust
	// Destination is the destination as the messages name it (Options
	// sets it).
	Destination string

	// site is the site registry of the profiles copied (plan.Site), the
	// destination when To is not given; nil when none applies or siteErr
	// says why none can be chosen.
	site    *site.Mapping
	siteErr error
	bundle  bool
}

// usage is an error in a flag's value: an *OptionError, which the CLI
// words as a usage error.
func usage(err error) error { return &OptionError{Err: err} }

// FromBundle is the job of a push from the bundle req.From: its images
// and lock, each bound to the site repository the lock gives it
// (BindBundle). BundlePolicies adds what they are verified under.
func FromBundle(req Request) (*Job, error) {
	j := &Job{Passwords: creds.Rule{Dir: req.Dir}, bundle: req.toBundle()}
	var err error
	if j.Images, j.Lock, err = BundleImages(req.fromPath()); err != nil {
		return nil, err
	}
	// Where each image goes is the lock's, with or without a site
	// trust, NoVerify included.
	if err := BindBundle(req.fromPath(), j.Images, j.Lock); err != nil {
		return nil, err
	}
	return j, nil
}

// BundlePolicies sets the policies a push from the bundle verifies under:
// the site trust req.Trust names (ReadSiteTrust, SitePolicies), else the
// bundle's own trust material with a warning on req.Warn that nothing
// authenticates it; none with NoVerify.
func (j *Job) BundlePolicies(req Request) error {
	if req.NoVerify {
		// Asked not to verify: no trust is read (a site trust is a
		// usage error with --no-verify).
		return nil
	}
	var st *SiteTrust
	j.TrustUsed = &v1alpha1.MirrorTrust{Source: "bundle"}
	if req.Trust != "" {
		var err error
		if st, err = ReadSiteTrust(req.Stdin, req.Trust); err != nil {
			return err
		}
		j.TrustUsed = &v1alpha1.MirrorTrust{Source: "site", File: st.Path, Digest: st.Digest, Authenticated: true}
	}
	pols, t, err := SitePolicies(req.fromPath(), j.Images, j.Lock, st)
	if err != nil {
		return err
	}
	if st == nil {
		fmt.Fprintf(req.Warn, "stowage: warning: no site trust (--trust FILE or %s): the site's copy is verified with the keys and policies the bundle itself carries, which nothing authenticates (whoever wrote the bundle chose them)\n", SiteTrustEnv)
	}
	if len(pols) == 0 {
		pols = nil
	}
	if st != nil {
		// The reports name the files verified with: the site's.
		t = TrustOf(pols)
	}
	j.Policies, j.Trust = pols, t
	return nil
}

// FromSource is the job of the config or kustomization src in req.Dir:
// the images of the selected profiles with the digests the lock pins
// (Select over each profile's plan, then the workloads the KRM function
// pins), the --artifact images, and the verify policies of every image.
// Errors: the config's, and every image the lock does not pin, all named.
func FromSource(src *configsource.Source, req Request) (*Job, error) {
	j := &Job{bundle: req.toBundle()}
	if src.Kustomization != nil {
		if err := src.NeedLock(); err != nil {
			return nil, err
		}
		if len(req.Profiles) > 0 {
			return nil, usage(errors.New("--profile is for a config directory; a kustomization's images are its functionConfig's and the workloads the function pins"))
		}
	}
	j.Passwords = src.Passwords()
	cfg := src.Config
	lf, err := src.ReadLock(nil)
	if err != nil {
		return nil, err
	}
	if !lf.Exists {
		return nil, fmt.Errorf("%s does not exist: run `stowage lock %s` first; the mirror copies what the lock pins", lf.Path, req.Dir)
	}
	j.Lock = lf.Data
	profiles := req.Profiles
	if len(profiles) == 0 {
		profiles = cfg.ProfileNames()
	}
	// The site of the profiles copied (plan.Site's rule); needed only
	// without --to, so its error waits until then.
	switch s, err := plan.Site(cfg, req.Profiles...); {
	case err != nil:
		j.siteErr = err
	case s != nil:
		m := site.Of(s)
		j.site = &m
	}
	groups, err := groupsOf(src, lf.Lock, profiles)
	if err != nil {
		return nil, err
	}
	sel, err := Select(groups)
	if unpinned := (*UnpinnedError)(nil); errors.As(err, &unpinned) {
		return nil, fmt.Errorf("the lock does not pin every image; run `stowage lock %s`:\n  %s", req.Dir, strings.Join(unpinned.Problems, "\n  "))
	} else if err != nil {
		return nil, err
	}
	j.Images, j.Roles, j.AuthImages = sel.Images, sel.Roles, sel.AuthImages
	var artifacts []Image
	for _, a := range req.Artifacts {
		img, err := ArtifactImage(a, j.site)
		if err != nil {
			return nil, err
		}
		artifacts = append(artifacts, img)
	}
	j.Images = append(j.Images, artifacts...)
	if j.bundle {
		// A bundle's lock pins its artifacts too: a push from it binds
		// every image to its lock (BindBundle).
		if j.Lock, err = LockWithArtifacts(j.Lock, artifacts); err != nil {
			return nil, err
		}
	}
	if j.Images == nil {
		return j, nil
	}
	// The verify policies of every image copied (verifypolicy.Of).
	var all []*plan.Image
	for _, images := range groups {
		all = append(all, images...)
	}
	if j.Policies, err = verifypolicy.Load(cfg, all); err != nil {
		return nil, err
	}
	j.Trust = TrustOf(j.Policies)
	return j, nil
}

// groupsOf are the plan images mirror copies: each profile's (its plan
// built once), then those only the KRM function pins, alone, at the site
// the function rewrites them to.
func groupsOf(src *configsource.Source, l *lock.Lock, profiles []string) ([][]*plan.Image, error) {
	var groups [][]*plan.Image
	plans := src.Plans(l)
	for _, pname := range profiles {
		p, err := plans.Profile(pname)
		if err != nil {
			return nil, err
		}
		groups = append(groups, p.Images)
	}
	if len(src.Workloads) > 0 {
		ws, err := plan.Site(src.Config)
		if err != nil {
			return nil, err
		}
		p, err := plan.All(&v1alpha1.Config{Site: ws}, l, src.Workloads...)
		if err != nil {
			return nil, err
		}
		groups = append(groups, p.Images)
	}
	return groups, nil
}

// ArtifactImage is the mirror image of an --artifact reference s: an OCI
// artifact such as the one stowage push writes, copied like an image
// (manifest, config and layers, digest for digest) from its repository to
// the site repository sites maps it to (the images' rule; none when sites
// is nil: then --to decides). The reference must name its digest, so that
// what the site gets is exactly what was pushed; its tag, if any, is
// written there too. Errors name the flag's value; a reference that does
// not parse or has no digest is an *OptionError.
func ArtifactImage(s string, sites *site.Mapping) (Image, error) {
	ref, err := imageref.Parse(s)
	if err != nil {
		return Image{}, usage(fmt.Errorf("--artifact: %w", err))
	}
	if ref.Digest == "" {
		return Image{}, usage(fmt.Errorf("--artifact %q: want REGISTRY/REPOSITORY[:TAG]@sha256:…, the reference with its digest that stowage push prints", s))
	}
	h, err := v1.NewHash(ref.Digest)
	if err != nil {
		return Image{}, usage(fmt.Errorf("--artifact %q: digest: %v", s, err))
	}
	img := Image{Name: ref.Key(), Written: s, Source: ref.Repository, Tag: ref.Tag, Digest: h}
	if sites != nil {
		repo, err := sites.Repository(ref.Repository)
		if err != nil {
			return Image{}, fmt.Errorf("--artifact %q: %w", s, err)
		}
		img.Site = repo.Name()
	}
	return img, nil
}

// LeaveOut drops the images the site lock data (--have, named name)
// already pins (the package's LeaveOut), keeping them as j.Have. A file
// that is no ImageLock is refused without quoting it.
func (j *Job) LeaveOut(data []byte, name string) error {
	// A file that is not an ImageLock at all (a password file, a
	// kubeconfig given by mistake) is refused without a word of it: the
	// parser's messages quote keys and lines.
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	if yaml.Unmarshal(data, &head) != nil || head.Kind != lock.ObjectKind || head.APIVersion != lock.APIVersion {
		return fmt.Errorf("--have %s: not a stowage lock (want apiVersion %s, kind %s: the stowage.lock.yaml of what the site holds)", name, lock.APIVersion, lock.ObjectKind)
	}
	have, err := lock.Parse(data, name)
	if err != nil {
		return fmt.Errorf("--have: %w", err)
	}
	j.Images, j.Have = LeaveOut(j.Images, have)
	return nil
}

// Prune reconciles NoAttachments and NoVerify with the policies: with
// NoVerify there are none. Without attachments the site's copy of an
// image under a required policy cannot verify, so that is refused up
// front (an *OptionError naming the images); under optional ones
// verification is left out with a note on req.Warn.
func (j *Job) Prune(req Request) error {
	if !req.NoAttachments || req.NoVerify {
		if req.NoVerify {
			j.Policies, j.Trust = nil, nil
		}
		return nil
	}
	var required, optional []string
	for _, image := range slices.Sorted(maps.Keys(j.Policies)) {
		required1, at := false, []string{}
		for _, pol := range j.Policies[image] {
			required1 = required1 || pol.Required
			at = append(at, pol.At)
		}
		if required1 {
			required = append(required, image+" ("+strings.Join(at, ", ")+")")
		} else {
			optional = append(optional, image)
		}
	}
	if len(required) > 0 {
		return usage(fmt.Errorf("--no-attachments leaves the signatures out, so the destination's copy of these images, under a required verify policy, cannot verify: %s; carry them (leave out --no-attachments), or add --no-verify to copy without verifying", strings.Join(required, ", ")))
	}
	if len(optional) > 0 {
		fmt.Fprintf(req.Warn, "stowage: note: --no-attachments: the signatures of %s under optional verify policies are not carried, nor verified at the destination\n", words.Count(len(optional), "image"))
	}
	j.Policies, j.Trust = nil, nil
	return nil
}

// Options are New's options for where the images go and how they are
// checked: an OCI layout (To oci:PATH, with the images the site holds and
// the trust material), the To registry (a bundle's images that name their
// site repository there too; the config's at PREFIX/<registry>/
// <repository>), or without To the site repository render names for each
// image; then From's layout, attachments unless NoAttachments, and the
// verification under the policies into a registry. It sets j.Destination.
// Errors (*OptionError): no To where no site applies.
func (j *Job) Options(req Request) ([]Option, error) {
	var opts []Option
	j.Destination = req.To
	switch {
	case j.bundle:
		opts = append(opts, WithToLayout(strings.TrimPrefix(req.To, LayoutPrefix), j.Lock), WithHave(j.Have))
		if j.Trust != nil {
			opts = append(opts, WithTrust(j.Trust))
		}
	case req.To != "" && req.From != "":
		// A bundle's images that name their site repository (where
		// render points) must be put there by To too; the others go
		// where it maps them.
		opts = append(opts, WithToSite(site.Mapping{Default: req.To}), WithToImageSites())
	case req.To != "":
		// From the config, To is the destination asked for (a staging
		// or test registry, say): PREFIX/<registry>/<repository>.
		for i := range j.Images {
			j.Images[i].Site = ""
		}
		opts = append(opts, WithToSite(site.Mapping{Default: req.To}))
	case j.siteErr != nil:
		return nil, usage(fmt.Errorf("--to is not given and %w: choose the profiles with --profile, or give --to", j.siteErr))
	default:
		// Every image to the site repository render names for it: the
		// plan's, or the one the bundle recorded; the images the plan
		// gives none (workloads the function only pins) where the
		// profiles' site maps them.
		if j.site == nil {
			if err := everyImageHasSite(j.Images, req.From != ""); err != nil {
				return nil, err
			}
		}
		opts = append(opts, WithToImageSites())
		switch {
		case req.From != "":
			j.Destination = "the site repositories the bundle records"
		case j.site != nil:
			opts = append(opts, WithToSite(*j.site))
			j.Destination = j.site.Default
		default:
			j.Destination = "the config's site registries"
		}
	}
	if req.From != "" {
		opts = append(opts, WithFromLayout(req.fromPath()))
	}
	if !j.bundle && len(j.Policies) > 0 {
		opts = append(opts, WithVerify(j.Policies))
	}
	if !req.NoAttachments {
		opts = append(opts, WithAttachments())
	}
	return opts, nil
}

// everyImageHasSite refuses a run without --to when an image names no
// site repository, naming every such image.
func everyImageHasSite(images []Image, bundle bool) error {
	var without []string
	for _, img := range images {
		if img.Site == "" {
			without = append(without, img.Name)
		}
	}
	if len(without) == 0 {
		return nil
	}
	sort.Strings(without)
	without = slices.Compact(without)
	why := "the config names no site registry (its site field) for"
	if bundle {
		why = "the bundle records no site repository (its config named no site registry) for"
	}
	return usage(fmt.Errorf("--to is required: %s %s; give HOST[:PORT][/PREFIX] or oci:PATH", why, strings.Join(without, ", ")))
}

// DryRun is the report of plan p without copying: with req.From and
// policies, the signatures the bundle carries are verified first, read
// from the bundle itself, offline, under the trust used. The error is
// every image that failed to plan or verify (Errors, sorted), or what
// stopped the check.
func (j *Job) DryRun(ctx context.Context, req Request, p *Transfer) (*v1alpha1.MirrorPlanReport, error) {
	var sigs []Signature
	var sigErrs Errors
	if req.From != "" && len(j.Policies) > 0 {
		var err error
		if sigs, sigErrs, err = VerifyBundle(ctx, req.fromPath(), j.Images, j.Policies); err != nil {
			return nil, err
		}
	}
	rep := j.PlanReport(p)
	rep.BundleSignatures = signatures(sigs)
	if errs := append(slices.Clone(p.Errors), sigErrs...); len(errs) > 0 {
		errs.Sorted()
		return rep, errs
	}
	return rep, nil
}

// PlanReport is the report of plan p: every image planned (failed ones
// only among Errors), the attachments, what is verified after the copy,
// the trust material and the bytes per OpenPAI role.
func (j *Job) PlanReport(p *Transfer) *v1alpha1.MirrorPlanReport {
	rep := &v1alpha1.MirrorPlanReport{Destination: j.Destination, SiteTrust: j.TrustUsed, Blobs: p.Blobs, Bytes: p.Bytes, Mounts: p.Mounts,
		Manifests: p.Manifests, Images: []v1alpha1.MirrorImage{}, OmittedBlobs: p.OmittedBlobs, OmittedBytes: p.OmittedBytes,
		AttachmentBlobs: p.AttachmentBlobs, AttachmentBytes: p.AttachmentBytes, Bundle: j.bundle}
	failed := map[string]bool{}
	for _, e := range p.Errors {
		rep.Errors = append(rep.Errors, e.Error())
		failed[e.Key] = true
	}
	for _, pi := range p.Images {
		if failed[pi.Name] {
			continue
		}
		if a := pi.Attachment; a != nil {
			rep.Attachments = append(rep.Attachments, v1alpha1.MirrorAttachment{Image: pi.Name, Subject: a.Subject.String(), Kind: a.Kind,
				Digest: pi.Digest.String(), Tag: pi.Tag, Destination: pi.Destination, Present: pi.Present, Blobs: pi.Blobs, Bytes: pi.Bytes})
			continue
		}
		if len(pi.Policies) > 0 {
			rep.Verify = append(rep.Verify, v1alpha1.MirrorVerify{Image: pi.Name, Digest: pi.Digest.String(), Destination: pi.Destination, Policies: pi.Policies})
		}
		rep.Images = append(rep.Images, v1alpha1.MirrorImage{Name: pi.Name, Reference: pi.Written, Digest: pi.Digest.String(), Tag: pi.Tag,
			Destination: pi.Destination, Present: pi.Present, Manifests: pi.Manifests, Blobs: pi.Blobs, Bytes: pi.Bytes})
		if pi.Present {
			rep.Present++
		} else {
			rep.Missing++
		}
	}
	if rep.TrustFiles = TrustFiles(j.Trust); j.Trust != nil {
		rep.TrustImages = len(j.Trust.Images)
	}
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker} {
		if keys := j.Roles[r]; len(keys) > 0 {
			n, b := p.UniqueBytes(keys)
			rep.Roles = append(rep.Roles, v1alpha1.MirrorRoleBytes{Role: string(r), Blobs: n, Bytes: b})
		}
	}
	return rep
}

// Report is the report of a run of plan p: rep is Run's report (nil when
// the run did not start) and err the run's error.
func (j *Job) Report(p *Transfer, rep *Report, err error) *v1alpha1.MirrorReport {
	out := &v1alpha1.MirrorReport{OK: err == nil, Plan: *j.PlanReport(p), Errors: []string{}, Attachments: p.Attachments}
	if rep != nil {
		out.Signatures = signatures(rep.Signatures)
		out.Copied, out.Present, out.Verified, out.Bytes = rep.Copied, rep.Present, rep.Copied+rep.Present, rep.Bytes
		out.AttachmentsCopied, out.AttachmentsPresent = rep.AttachmentsCopied, rep.AttachmentsPresent
	}
	var failed Errors
	switch {
	case errors.As(err, &failed):
		for _, e := range failed {
			out.Errors = append(out.Errors, e.Error())
		}
	case err != nil:
		out.Errors = append(out.Errors, err.Error())
	}
	return out
}

// signatures are the report's lines of sigs.
func signatures(sigs []Signature) []v1alpha1.MirrorSignature {
	var out []v1alpha1.MirrorSignature
	for _, s := range sigs {
		ss := v1alpha1.MirrorSignature{Image: s.Name, Written: s.Written, Reference: s.Reference, Digest: s.Digest.String(), Policy: s.Policy,
			Mode: v1alpha1.VerifyOptional, Verified: s.Signer != nil}
		if s.Required {
			ss.Mode = v1alpha1.VerifyRequired
		}
		if s.Signer != nil {
			ss.Signer = &lock.Signer{Key: s.Signer.Key, Identity: s.Signer.Identity, Issuer: s.Signer.Issuer, Signature: s.Signer.Signature}
		}
		if s.Err != nil {
			ss.Error = s.Err.Error()
		}
		out = append(out, ss)
	}
	return out
}

// TrustOf is the trust material of pols: each image's policies as the
// config wrote them, with the files they read; nil for no policies.
func TrustOf(pols map[string][]*sigverify.Policy) *Trust {
	if len(pols) == 0 {
		return nil
	}
	t := &Trust{}
	for _, k := range slices.Sorted(maps.Keys(pols)) {
		for _, p := range pols[k] {
			t.Add(k, TrustPolicy{At: p.At, Verify: p.Spec, Content: p.Files})
		}
	}
	return t
}

// TrustFiles lists t's files once each, sorted by policy and path.
func TrustFiles(t *Trust) []v1alpha1.MirrorTrustFile {
	if t == nil {
		return nil
	}
	var out []v1alpha1.MirrorTrustFile
	seen := map[v1alpha1.MirrorTrustFile]bool{}
	for _, p := range t.Policies {
		for _, path := range slices.Sorted(maps.Keys(p.Files)) {
			f := v1alpha1.MirrorTrustFile{Policy: p.At, Path: path, Digest: p.Files[path]}
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Policy != out[j].Policy {
			return out[i].Policy < out[j].Policy
		}
		return out[i].Path < out[j].Path
	})
	return out
}
