package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/progress"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/verifypolicy"
)

// Defaults of mirror's time limits: a blob of several GB is one request.
const (
	mirrorRequestTimeout = 10 * time.Minute
	mirrorRunTimeout     = 12 * time.Hour
)

// ociPrefix marks an OCI image layout in --to and --from.
const ociPrefix = "oci:"

type mirrorOptions struct {
	profiles []string
	to, from string
	have     string
	dryRun   bool
	format   string
	load     loadOptions
	reg      registryOptions

	// artifacts are OCI artifacts carried with the images (--artifact).
	artifacts []string
	// noAttachments leaves the signatures, attestations, SBOMs and
	// referrers attached to the images out.
	noAttachments bool
	// noVerify leaves out the verification of the destination's copy
	// under the verify policies (and, into a bundle, their trust
	// material).
	noVerify bool
	// trust is the site's own trust file for --from (--trust, else
	// $STOWAGE_SITE_TRUST).
	trust string
	// maxManifests bounds the manifests read for one image
	// (--max-manifests).
	maxManifests int
}

func newMirror(getenv env) *cobra.Command {
	var o mirrorOptions
	o.load.deadline = &o.reg.runTimeout
	c := &cobra.Command{
		Use:   "mirror [DIR]",
		Short: "Copy every locked image of DIR's profiles to a site registry or an OCI-layout bundle, digest for digest",
		Long: `Copy the images the selected profiles use (default: every profile), as
DIR/stowage.lock.yaml pins them, to the site registry --to HOST[:PORT][/PREFIX]
(each repository goes to PREFIX/<source registry>/<repository>, tag and digest
kept) or into an OCI image layout bundle --to oci:PATH. An index pinned by the
lock goes with every child; a child pinned alone (one platform) goes alone;
the helper and pause images go too.

First the plan: every image is looked up at the destination (HEAD); for the
missing ones the manifests are read from the source and the unique blobs and
bytes to move are counted (a blob shared by several images once; a blob
already in another repository of the destination is mounted, not sent).
--dry-run prints the plan and exits. Then the missing blobs are streamed from
the source (--jobs at a time), manifests written after their blobs and
children, tags last, and every image verified at the destination. A rerun
moves only what is missing. A failing image is named with the registry's
answer; the others complete; the exit code is then 1.

Images under a verify policy (the config's verify fields) have their
signatures checked at the destination after the copy, offline, with the
policy's keys and trusted root: an image under a required policy that does
not verify there fails, naming its site reference, digest and why. Such an
image is pushed by digest and tagged only once it verified: one that fails
leaves no new tag, and a tag the site held keeps its digest. A bundle
records those policies with their keys and trusted roots by content digest
(a file changed in the bundle is refused). --from verifies the site's copy
under the site's own trust when the operator gives it (--trust FILE, or
$STOWAGE_SITE_TRUST: a SiteTrust file kept at the site, see
docs/signatures.md): a bundle whose trust material is missing, optional
where the site's is required, trusts a key, identity or trusted root the
site does not, or leaves an image under no policy, is refused before
anything is pushed, naming the image. Without a site trust it verifies with
what the bundle carries, which nothing authenticates, and says so on stderr
and in the report. --dry-run with --from makes these checks, verifies the
signatures the bundle carries (read from the bundle itself, offline) and
pushes nothing; it exits 1 on any failure. --no-attachments leaves the signatures out, so under a required
policy it needs --no-verify.

Without --to, every image goes to the site reference render names for it
(the config's site field, site.registries included).

--from oci:PATH pushes a bundle made with --to oci: (its images and lock are
the bundle's; DIR is not read): each image to the site repository the
bundle recorded for it when it was written (where render points), so no
--to is needed. Where each image goes is bound to the bundle's lock: an
image the lock lacks, at another digest, under another tag, or recorded
for a site repository the site rule does not give its lock reference,
and an attachment of an image the bundle does not carry, are refused
before anything is pushed, naming the image; so is a bundle without its
lock. Writing into an existing bundle adds to what it holds; an
image it holds at another digest is refused. --have SITE_LOCK leaves out
the images that lock already pins at the same digest, and of the others the
blobs the site holds (a delta bundle: index.json lists them, the push
mounts them at the site).

--artifact REFERENCE carries an OCI artifact with the images: the one
'stowage push' wrote (REGISTRY/REPOSITORY[:TAG]@sha256:…, as push prints
it), for a Flux OCIRepository at the site. It goes to its site repository
by the images' rule (the profiles' site, or --to), into a bundle and from
it, at the same digest: point the site's OCIRepository there with that
digest in ref.digest (--dry-run lists the destination).` + kustomizationHelp,
		Example: `  # what the site registry lacks, and how many bytes that is
  stowage mirror platform/prepull --to registry.site:5000 --dry-run

  # copy every locked image to the site the config names (its site field)
  stowage mirror platform/prepull

  # across an air gap: a bundle on the connected side, pushed on the site
  stowage mirror platform/prepull --to oci:/media/usb/bundle
  stowage mirror --from oci:/media/usb/bundle -o json

  # at the site, under the site's own trust: check first, then push
  stowage mirror --from oci:/media/usb/bundle --trust /etc/stowage/site-trust.yaml --dry-run
  stowage mirror --from oci:/media/usb/bundle --trust /etc/stowage/site-trust.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.format = formatAlias(o.format)
			if err := checkFormat("-o", o.format, "text", "json"); err != nil {
				return err
			}
			if o.from != "" && !strings.HasPrefix(o.from, ociPrefix) {
				return usageError{fmt.Errorf("--from %q: want oci:PATH (a registry source is the image's own registry, or --mirror)", o.from)}
			}
			if o.from != "" && strings.HasPrefix(o.to, ociPrefix) {
				return usageError{errors.New("--from oci: and --to oci: together copy nothing a file copy would not; give a registry to --to")}
			}
			if o.from != "" && (len(args) > 0 || len(o.profiles) > 0) {
				return usageError{errors.New("--from oci: takes the images from the bundle; give no DIR and no --profile")}
			}
			if o.trust != "" && o.from == "" {
				return usageError{errors.New("--trust is the site's trust for a push from a bundle: give it with --from oci:PATH")}
			}
			// The variable is the site's environment: it applies to a
			// push from a bundle and leaves every other mirror alone.
			if o.trust == "" && o.from != "" {
				o.trust, _ = getenv(mirror.SiteTrustEnv)
			}
			if o.trust != "" && o.noVerify {
				return usageError{errors.New("--no-verify and a site trust (--trust or " + mirror.SiteTrustEnv + ") contradict each other")}
			}
			if o.from != "" && len(o.artifacts) > 0 {
				return usageError{errors.New("--from oci: pushes the artifacts the bundle holds; give --artifact when the bundle is written (--to oci:)")}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.reg.runTimeout)
			defer cancel()
			return runMirror(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), dirArg(args), o, getenv)
		},
	}
	fs := c.Flags()
	fs.StringArrayVarP(&o.profiles, "profile", "p", nil, "profile whose images to copy (repeatable; default every profile)")
	fs.StringVar(&o.to, "to", "", "destination: the site registry HOST[:PORT][/PREFIX], or oci:PATH for a bundle (default: where render points: the config's site field, or the site repositories a --from bundle records)")
	fs.StringVar(&o.from, "from", "", "source bundle oci:PATH (made with --to oci:) instead of the images' registries")
	fs.StringVar(&o.have, "have", "", "a lock of what the site already holds: its images at the same digest are left out")
	fs.StringArrayVar(&o.artifacts, "artifact", nil, "an OCI artifact to carry with the images, REGISTRY/REPOSITORY[:TAG]@sha256:… as stowage push prints it (repeatable)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan and exit; with --from, the bundle is checked against the site trust and its signatures verified, read from the bundle (nothing pushed, exit 1 on any failure)")
	fs.StringVar(&o.trust, "trust", "", "with --from: the site's own trust file (kind SiteTrust: keys, trusted root, identities, mode), kept at the site; the bundle is checked against it and the site's copy verified under it (default $"+mirror.SiteTrustEnv+", read with --from only; without either, the bundle's own, unauthenticated trust is used, with a warning)")
	fs.IntVar(&o.maxManifests, "max-manifests", mirror.MaxManifestsPerImage, "most distinct manifests read for one image (an index, its children and theirs, each read once however many indexes list it); an image with more fails")
	fs.BoolVar(&o.noAttachments, "no-attachments", false, "leave out what is attached to the images (cosign signatures, attestations and SBOMs, OCI 1.1 referrers); refused when a required verify policy applies, unless --no-verify")
	fs.BoolVar(&o.noVerify, "no-verify", false, "do not verify the signatures of the destination's copy under the verify policies (nor record their trust material in a bundle)")
	fs.StringVarP(&o.format, "output", "o", "text", "text or json: the plan with --dry-run; {ok, plan, copied, present, verified, bytes, errors} after a run, also when it fails")
	fs.BoolVar(&o.load.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	o.load.addRootFlag(fs)
	// A blob is one request, and a mirror moves gigabytes: longer limits.
	o.reg.addFlagsWith(fs, registryDefaults{
		requestTimeout: mirrorRequestTimeout,
		runTimeout:     mirrorRunTimeout,
		timeoutUsage:   "time limit of one registry request, a whole blob included",
		jobsUsage:      "blobs, manifests and HEADs in flight at once",
	})
	return c
}

// mirrorInput is what a mirror run copies.
type mirrorInput struct {
	images []mirror.Image
	lock   []byte
	// site is the site registry of the profiles copied (plan.Site), the
	// destination when --to is not given; nil when none applies or
	// siteErr says why none can be chosen.
	site    *site.Mapping
	siteErr error
	// roles are the lock keys of each OpenPAI role's images (the role
	// "all" images with each), for bytes per role; empty without OpenPAI.
	roles map[openpai.Role]map[string]bool
	// authImages give the password sources their users, for messages.
	authImages []*plan.Image
	// pw is the rule their passwords are read under (the KRM function's
	// for a kustomization).
	pw creds.Rule
	// sp are the verify policies of the images: the config's, or the
	// trust material a --from bundle records.
	sp sitePolicies
	// trustUsed names the trust a --from push verifies under, for the
	// reports; nil without --from.
	trustUsed *trustUsed
}

func runMirror(ctx context.Context, stdout, stderr io.Writer, dir string, o mirrorOptions, getenv env) error {
	in, have, err := mirrorInputs(ctx, stderr, dir, o)
	if err != nil {
		return err
	}
	r, done, err := o.reg.resolver(io.Discard, in.pw, in.authImages, getenv)
	if err != nil {
		return err
	}
	done()
	opts := []mirror.Option{mirror.WithResolver(r), mirror.WithJobs(o.reg.jobs), mirror.WithMaxManifests(o.maxManifests)}
	if !o.noAttachments {
		opts = append(opts, mirror.WithAttachments())
	}
	dest, err := mirrorDestination(&o, &in, have)
	if err != nil {
		return err
	}
	opts = append(opts, dest...)
	if o.from != "" {
		opts = append(opts, mirror.WithFromLayout(strings.TrimPrefix(o.from, ociPrefix)))
	}
	if !strings.HasPrefix(o.to, ociPrefix) && len(in.sp.pols) > 0 {
		opts = append(opts, mirror.WithVerify(in.sp.pols))
	}
	bar := progress.NewMirror(stderr, o.reg.quiet || o.dryRun)
	if bar != nil {
		opts = append(opts, mirror.WithProgress(bar))
	}
	m, err := mirror.New(opts...)
	// Only an option's value is a usage error; --to oci: naming a
	// directory that is not a layout, or a --from bundle that does not
	// open, is bad input, exit 1.
	var oe *mirror.OptionError
	if errors.As(err, &oe) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	p, err := m.Plan(ctx, in.images)
	if err != nil {
		return err
	}
	if o.dryRun {
		var bundleSigs []mirror.Signature
		var sigErrs mirror.Errors
		if o.from != "" && len(in.sp.pols) > 0 {
			// Verified at the site before anything is pushed: the
			// signatures the bundle carries, under the trust used.
			if bundleSigs, sigErrs, err = mirror.VerifyBundle(ctx, strings.TrimPrefix(o.from, ociPrefix), in.images, in.sp.pols); err != nil {
				return err
			}
		}
		if err := writePlan(stdout, o.format, o.to, p, in.roles, in.sp.trust, in.trustUsed, bundleSigs); err != nil {
			return err
		}
		if errs := append(slices.Clone(p.Errors), sigErrs...); len(errs) > 0 {
			errs.Sorted()
			return errs
		}
		return nil
	}
	rep, err := m.Run(ctx, p)
	bar.Finish()
	if err != nil && ctx.Err() != nil {
		err = mirrorStopped{err}
	}
	if o.format == "json" {
		if werr := writeReport(stdout, runReportOf(o.to, p, in.roles, in.sp.trust, in.trustUsed, rep, err)); werr != nil && err == nil {
			return werr
		}
		return err
	}
	if rep != nil {
		printMirrorRun(stdout, stderr, o.to, p, rep)
		writeTrustUsed(stdout, in.trustUsed)
	}
	return err
}

// mirrorInputs is what runMirror copies: a --from bundle's images and
// trust material, or the config's (mirrorImages); less what the --have
// site lock pins (returned as have); with the policies --no-attachments
// and --no-verify leave.
func mirrorInputs(ctx context.Context, stderr io.Writer, dir string, o mirrorOptions) (in mirrorInput, have []mirror.Image, err error) {
	if o.from != "" {
		in.images, in.lock, err = mirror.BundleImages(strings.TrimPrefix(o.from, ociPrefix))
		if err == nil {
			// Where each image goes is the lock's, with or without a
			// site trust, --no-verify included.
			err = mirror.BindBundle(strings.TrimPrefix(o.from, ociPrefix), in.images, in.lock)
		}
		if err == nil {
			in.sp, in.trustUsed, err = bundlePolicies(stderr, strings.TrimPrefix(o.from, ociPrefix), in.images, in.lock, o)
		}
	} else {
		in, err = mirrorImages(ctx, stderr, dir, o)
	}
	if err != nil {
		return in, nil, err
	}
	if o.have != "" {
		if in.images, have, err = leaveOut(in.images, o.have); err != nil {
			return in, nil, err
		}
	}
	if o.from != "" {
		in.pw = creds.Rule{Dir: dir}
	}
	switch {
	case o.noAttachments:
		if err := in.sp.withoutAttachments(stderr, o.noVerify); err != nil {
			return in, nil, err
		}
	case o.noVerify:
		in.sp = sitePolicies{}
	}
	return in, have, nil
}

// mirrorDestination is the options of where the images go: an OCI layout
// (--to oci:PATH, with have and the trust material), the --to registry
// (a bundle's images that name their site repository there too; the
// config's at PREFIX/<registry>/<repository>), or without --to the site
// repository render names for each image. It sets o.to to what the
// messages call the destination. Errors: no --to where no site applies.
func mirrorDestination(o *mirrorOptions, in *mirrorInput, have []mirror.Image) ([]mirror.Option, error) {
	var opts []mirror.Option
	switch {
	case strings.HasPrefix(o.to, ociPrefix):
		opts = append(opts, mirror.WithToLayout(strings.TrimPrefix(o.to, ociPrefix), in.lock), mirror.WithHave(have))
		if in.sp.trust != nil {
			opts = append(opts, mirror.WithTrust(in.sp.trust))
		}
	case o.to != "" && o.from != "":
		// A bundle's images that name their site repository (where
		// render points) must be put there by --to too; the others go
		// where it maps them.
		opts = append(opts, mirror.WithToSite(site.Mapping{Default: o.to}), mirror.WithToImageSites())
	case o.to != "":
		// From the config, --to is the destination asked for (a staging
		// or test registry, say): PREFIX/<registry>/<repository>.
		for i := range in.images {
			in.images[i].Site = ""
		}
		opts = append(opts, mirror.WithToSite(site.Mapping{Default: o.to}))
	case in.siteErr != nil:
		return nil, usageError{fmt.Errorf("--to is not given and %w: choose the profiles with --profile, or give --to", in.siteErr)}
	default:
		// Every image to the site repository render names for it: the
		// plan's, or the one the bundle recorded; the images the plan
		// gives none (workloads the function only pins) where the
		// profiles' site maps them.
		if in.site == nil {
			if err := everyImageHasSite(in.images, o.from != ""); err != nil {
				return nil, err
			}
		}
		opts = append(opts, mirror.WithToImageSites())
		switch {
		case o.from != "":
			o.to = "the site repositories the bundle records"
		case in.site != nil:
			opts = append(opts, mirror.WithToSite(*in.site))
			o.to = in.site.Default
		default:
			o.to = "the config's site registries"
		}
	}
	return opts, nil
}

// printMirrorRun says, in text, what a run to dest did: the images and
// bytes, the attachments, the signatures verified, the blobs a delta
// bundle left out.
func printMirrorRun(stdout, stderr io.Writer, dest string, p *mirror.Transfer, rep *mirror.Report) {
	fmt.Fprintf(stdout, "%s: %d images copied, %d already there, %s of blobs moved (%d unique blobs planned, %d mounted); %d verified\n",
		dest, rep.Copied, rep.Present, humanBytes(rep.Bytes), p.Blobs, p.Mounts, rep.Copied+rep.Present)
	if p.Attachments > 0 {
		fmt.Fprintf(stdout, "attachments (signatures, attestations, SBOMs, referrers): %d copied, %d already there; %d verified\n",
			rep.AttachmentsCopied, rep.AttachmentsPresent, rep.AttachmentsCopied+rep.AttachmentsPresent)
	}
	writeSignatures(stdout, stderr, dest, rep)
	if p.OmittedBlobs > 0 {
		fmt.Fprintf(stdout, "%d blobs (%s) left out of the delta bundle: the site holds them (--have); the push mounts them there\n", p.OmittedBlobs, humanBytes(p.OmittedBytes))
	}
}

// mirrorImages lists the images of the selected profiles (all without
// --profile) with the digests the lock pins (mirror.Select over each
// profile's plan, then the workloads the KRM function pins), the
// --artifact images, and the verify policies of every image copied.
// Errors: the config's, and every image the lock does not pin, all
// named.
func mirrorImages(ctx context.Context, stderr io.Writer, dir string, o mirrorOptions) (in mirrorInput, err error) {
	src, err := loadSource(ctx, stderr, dir, o.load)
	if err != nil {
		return in, err
	}
	if src.Kustomization != nil {
		if err := src.NeedLock(); err != nil {
			return in, err
		}
		if len(o.profiles) > 0 {
			return in, usageError{errors.New("--profile is for a config directory; a kustomization's images are its functionConfig's and the workloads the function pins")}
		}
	}
	in.pw = src.Passwords()
	cfg := src.Config
	lf, err := src.ReadLock(nil)
	if err != nil {
		return in, err
	}
	if !lf.Exists {
		return in, fmt.Errorf("%s does not exist: run `stowage lock %s` first; the mirror copies what the lock pins", lf.Path, dir)
	}
	in.lock = lf.Data
	profiles := o.profiles
	if len(profiles) == 0 {
		profiles = cfg.ProfileNames()
	}
	// The site of the profiles copied (plan.Site's rule); needed only
	// without --to, so its error waits until then.
	switch s, err := plan.Site(cfg, o.profiles...); {
	case err != nil:
		in.siteErr = err
	case s != nil:
		m := site.Of(s)
		in.site = &m
	}
	groups, err := mirrorGroups(src, lf.Lock, profiles)
	if err != nil {
		return in, err
	}
	sel, err := mirror.Select(groups)
	if unpinned := (*mirror.UnpinnedError)(nil); errors.As(err, &unpinned) {
		return in, fmt.Errorf("the lock does not pin every image; run `stowage lock %s`:\n  %s", dir, strings.Join(unpinned.Problems, "\n  "))
	} else if err != nil {
		return in, err
	}
	in.images, in.roles, in.authImages = sel.Images, sel.Roles, sel.AuthImages
	var artifacts []mirror.Image
	for _, a := range o.artifacts {
		img, err := artifactImage(a, in.site)
		if err != nil {
			return in, err
		}
		artifacts = append(artifacts, img)
	}
	in.images = append(in.images, artifacts...)
	if strings.HasPrefix(o.to, ociPrefix) {
		// A bundle's lock pins its artifacts too: a push from it
		// binds every image to its lock (mirror.BindBundle).
		if in.lock, err = mirror.LockWithArtifacts(in.lock, artifacts); err != nil {
			return in, err
		}
	}
	if in.images == nil {
		return in, nil
	}
	// The verify policies of every image copied (verifypolicy.Of).
	var all []*plan.Image
	for _, images := range groups {
		all = append(all, images...)
	}
	pols, err := verifypolicy.Load(cfg, all)
	if err != nil {
		return in, err
	}
	in.sp = sitePolicies{pols: pols, trust: trustOf(pols)}
	return in, nil
}

// mirrorGroups are the plan images mirror copies: each profile's (its
// plan built once), then those only the KRM function pins, alone, at the
// site the function rewrites them to.
func mirrorGroups(src *source.Source, l *lock.Lock, profiles []string) ([][]*plan.Image, error) {
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

// artifactImage is the mirror image of an --artifact reference: an OCI
// artifact such as the one stowage push writes, copied like an image
// (manifest, config and layers, digest for digest) from its repository to
// the site repository s maps it to (the images' rule, plan.Site's site;
// none when s is nil: then --to decides). The reference must name its
// digest, so that what the site gets is exactly what was pushed; its tag,
// if any, is written there too. Errors are usage errors naming the flag's
// value.
func artifactImage(s string, sites *site.Mapping) (mirror.Image, error) {
	ref, err := imageref.Parse(s)
	if err != nil {
		return mirror.Image{}, usageError{fmt.Errorf("--artifact: %w", err)}
	}
	if ref.Digest == "" {
		return mirror.Image{}, usageError{fmt.Errorf("--artifact %q: want REGISTRY/REPOSITORY[:TAG]@sha256:…, the reference with its digest that stowage push prints", s)}
	}
	h, err := v1.NewHash(ref.Digest)
	if err != nil {
		return mirror.Image{}, usageError{fmt.Errorf("--artifact %q: digest: %v", s, err)}
	}
	img := mirror.Image{Name: ref.Key(), Written: s, Source: ref.Repository, Tag: ref.Tag, Digest: h}
	if sites != nil {
		repo, err := sites.Repository(ref.Repository)
		if err != nil {
			return mirror.Image{}, fmt.Errorf("--artifact %q: %w", s, err)
		}
		img.Site = repo.Name()
	}
	return img, nil
}

// everyImageHasSite refuses a run without --to when an image names no site
// repository, naming every such image.
func everyImageHasSite(images []mirror.Image, bundle bool) error {
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
	without = compactStrings(without)
	why := "the config names no site registry (its site field) for"
	if bundle {
		why = "the bundle records no site repository (its config named no site registry) for"
	}
	return usageError{fmt.Errorf("--to is required: %s %s; give HOST[:PORT][/PREFIX] or oci:PATH", why, strings.Join(without, ", "))}
}

func compactStrings(ss []string) []string {
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// leaveOut reads the site lock at path (--have), refusing a file that is
// no ImageLock without quoting it, and drops the images it already pins
// (mirror.LeaveOut), returning also what the site holds of their keys.
func leaveOut(images []mirror.Image, path string) ([]mirror.Image, []mirror.Image, error) {
	data, err := confined.ReadPath(path, confined.Lock)
	if err != nil {
		return nil, nil, fmt.Errorf("--have: %w", err)
	}
	// A file that is not an ImageLock at all (a password file, a
	// kubeconfig given by mistake) is refused without a word of it: the
	// parser's messages quote keys and lines.
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	if yaml.Unmarshal(data, &head) != nil || head.Kind != lock.ObjectKind || head.APIVersion != lock.APIVersion {
		return nil, nil, fmt.Errorf("--have %s: not a stowage lock (want apiVersion %s, kind %s: the stowage.lock.yaml of what the site holds)", path, lock.APIVersion, lock.ObjectKind)
	}
	have, err := lock.Parse(data, path)
	if err != nil {
		return nil, nil, fmt.Errorf("--have: %w", err)
	}
	copied, held := mirror.LeaveOut(images, have)
	return copied, held, nil
}

// planReport is the -o json shape of a mirror plan.
type planReport struct {
	Destination string      `json:"destination"`
	Images      []planImage `json:"images"`
	Present     int         `json:"present"`
	Missing     int         `json:"missing"`
	Blobs       int         `json:"blobs"`
	Bytes       int64       `json:"bytes"`
	Mounts      int         `json:"mounts"`
	Manifests   int         `json:"manifests"`
	// OmittedBlobs and OmittedBytes are what a delta bundle (--have)
	// leaves out because the site holds it.
	OmittedBlobs int             `json:"omittedBlobs,omitempty"`
	OmittedBytes int64           `json:"omittedBytes,omitempty"`
	Roles        []planRoleBytes `json:"roles,omitempty"`
	// Attachments are the signatures, attestations, SBOMs and referrers
	// attached to the images (absent with --no-attachments or when
	// there are none); AttachmentBlobs and AttachmentBytes are their
	// unique blobs to move (within blobs and bytes).
	Attachments     []planAttachment `json:"attachments,omitempty"`
	AttachmentBlobs int              `json:"attachmentBlobs,omitempty"`
	AttachmentBytes int64            `json:"attachmentBytes,omitempty"`
	// Verify are the images whose signatures are verified at the
	// destination after the copy, with their policies' fields; empty
	// into a bundle, with --no-verify, or without a policy.
	Verify []planVerify `json:"verify,omitempty"`
	// TrustFiles are the keys and trusted roots of those policies (a
	// bundle records them, and the push from it verifies with them), by
	// content digest; TrustImages counts the images they apply to.
	TrustFiles  []planTrustFile `json:"trustFiles,omitempty"`
	TrustImages int             `json:"trustImages,omitempty"`
	// SiteTrust names the trust a push from a bundle (--from) verifies
	// the site's copy under: the site's own file, or the bundle's
	// unauthenticated trust material; absent without --from.
	SiteTrust *trustUsed `json:"siteTrust,omitempty"`
	// BundleSignatures are, with --dry-run --from, the signatures the
	// bundle carries checked at the site before anything is pushed, one
	// per image and policy (reference names the bundle).
	BundleSignatures []siteSignature `json:"bundleSignatures,omitempty"`
	Errors           []string        `json:"errors,omitempty"`
}

// planAttachment is one attachment of a plan.
type planAttachment struct {
	// Image is the lock key of the image it is attached to, Subject the
	// digest of the manifest it hangs off (the image's or a child's).
	Image   string `json:"image"`
	Subject string `json:"subject"`
	// Kind is sig, att, sbom (cosign's tag scheme) or referrer.
	Kind        string `json:"kind"`
	Digest      string `json:"digest"`
	Tag         string `json:"tag,omitempty"`
	Destination string `json:"destination"`
	Present     bool   `json:"present"`
	Blobs       int    `json:"blobs"`
	Bytes       int64  `json:"bytes"`
}

// runReport is the -o json shape of a mirror run: the plan it carried
// out, what it copied, and every error (a failed image's by name).
type runReport struct {
	OK bool `json:"ok"`
	// Plan is the plan as --dry-run -o json prints it.
	Plan planReport `json:"plan"`
	// Copied and Present count the images this run copied and those
	// already at the destination; Verified is their sum, each checked.
	Copied   int `json:"copied"`
	Present  int `json:"present"`
	Verified int `json:"verified"`
	// AttachmentsCopied and AttachmentsPresent count the same for what
	// is attached to the images (absent when nothing is).
	AttachmentsCopied  int `json:"attachmentsCopied,omitempty"`
	AttachmentsPresent int `json:"attachmentsPresent,omitempty"`
	// Bytes is the blob bytes moved (retries included).
	Bytes int64 `json:"bytes"`
	// Signatures are the verifications of the images' signatures at
	// the destination, one per image and policy.
	Signatures []siteSignature `json:"signatures,omitempty"`
	Errors     []string        `json:"errors"`
}

// runReportOf is the run report of plan p, run report rep (nil when the
// run did not start) and the run's error.
func runReportOf(to string, p *mirror.Transfer, roles map[openpai.Role]map[string]bool, trust *mirror.Trust, used *trustUsed, rep *mirror.Report, err error) runReport {
	out := runReport{OK: err == nil, Plan: planReportOf(to, p, roles, trust, used), Errors: []string{}}
	if rep != nil {
		out.Signatures = siteSignatures(rep)
		out.Copied, out.Present, out.Verified, out.Bytes = rep.Copied, rep.Present, rep.Copied+rep.Present, rep.Bytes
		out.AttachmentsCopied, out.AttachmentsPresent = rep.AttachmentsCopied, rep.AttachmentsPresent
	}
	var failed mirror.Errors
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

type planImage struct {
	Name        string `json:"name"`
	Reference   string `json:"reference"`
	Digest      string `json:"digest"`
	Tag         string `json:"tag,omitempty"`
	Destination string `json:"destination"`
	Present     bool   `json:"present"`
	Manifests   int    `json:"manifests"`
	Blobs       int    `json:"blobs"`
	Bytes       int64  `json:"bytes"`
}

type planRoleBytes struct {
	Role  openpai.Role `json:"role"`
	Blobs int          `json:"blobs"`
	Bytes int64        `json:"bytes"`
}

func planReportOf(to string, p *mirror.Transfer, roles map[openpai.Role]map[string]bool, trust *mirror.Trust, used *trustUsed) planReport {
	rep := planReport{Destination: to, SiteTrust: used, Blobs: p.Blobs, Bytes: p.Bytes, Mounts: p.Mounts, Manifests: p.Manifests, Images: []planImage{},
		OmittedBlobs: p.OmittedBlobs, OmittedBytes: p.OmittedBytes, AttachmentBlobs: p.AttachmentBlobs, AttachmentBytes: p.AttachmentBytes}
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
			rep.Attachments = append(rep.Attachments, planAttachment{Image: pi.Name, Subject: a.Subject.String(), Kind: a.Kind,
				Digest: pi.Digest.String(), Tag: pi.Tag, Destination: pi.Destination, Present: pi.Present, Blobs: pi.Blobs, Bytes: pi.Bytes})
			continue
		}
		if len(pi.Policies) > 0 {
			rep.Verify = append(rep.Verify, planVerify{Image: pi.Name, Digest: pi.Digest.String(), Destination: pi.Destination, Policies: pi.Policies})
		}
		rep.Images = append(rep.Images, planImage{Name: pi.Name, Reference: pi.Written, Digest: pi.Digest.String(), Tag: pi.Tag,
			Destination: pi.Destination, Present: pi.Present, Manifests: pi.Manifests, Blobs: pi.Blobs, Bytes: pi.Bytes})
		if pi.Present {
			rep.Present++
		} else {
			rep.Missing++
		}
	}
	if rep.TrustFiles = trustFiles(trust); trust != nil {
		rep.TrustImages = len(trust.Images)
	}
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker} {
		if keys := roles[r]; len(keys) > 0 {
			n, b := p.UniqueBytes(keys)
			rep.Roles = append(rep.Roles, planRoleBytes{Role: r, Blobs: n, Bytes: b})
		}
	}
	return rep
}

func writePlan(w io.Writer, format, to string, p *mirror.Transfer, roles map[openpai.Role]map[string]bool, trust *mirror.Trust, used *trustUsed, bundleSigs []mirror.Signature) error {
	rep := planReportOf(to, p, roles, trust, used)
	rep.BundleSignatures = siteSignatures(&mirror.Report{Signatures: bundleSigs})
	if format == "json" {
		return writeReport(w, rep)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tSTATUS\tBLOBS\tBYTES\tDESTINATION")
	for _, im := range rep.Images {
		status := "missing"
		if im.Present {
			status = "present"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", escape.Line(im.Reference), escape.Line(shortDigest(im.Digest)), status, im.Blobs, humanBytes(im.Bytes), escape.Line(im.Destination))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d images: %d present, %d missing; to move: %d unique blobs, %s (compressed, each blob once), %d mounts, %d manifests\n",
		len(rep.Images), rep.Present, rep.Missing, rep.Blobs, humanBytes(rep.Bytes), rep.Mounts, rep.Manifests)
	if n := len(rep.Attachments); n > 0 {
		present := 0
		for _, a := range rep.Attachments {
			if a.Present {
				present++
			}
		}
		fmt.Fprintf(w, "attached to them (signatures, attestations, SBOMs, referrers): %d, %d present, %d missing; %d unique blobs, %s of the above\n",
			n, present, n-present, rep.AttachmentBlobs, humanBytes(rep.AttachmentBytes))
	}
	writeVerifyPlan(w, rep, strings.HasPrefix(to, ociPrefix))
	writeBundleSignatures(w, rep.BundleSignatures)
	writeTrustUsed(w, used)
	if rep.OmittedBlobs > 0 {
		fmt.Fprintf(w, "left out of the delta bundle (the site holds them, --have): %d blobs, %s\n", rep.OmittedBlobs, humanBytes(rep.OmittedBytes))
	}
	if len(rep.Roles) > 0 {
		fmt.Fprintln(w, "\nbytes to move per OpenPAI node role (its images and role \"all\"'s; a blob shared between roles is in each):")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "ROLE\tBLOBS\tBYTES\t")
		for _, r := range rep.Roles {
			fmt.Fprintf(tw, "%s\t%d\t%s\t\n", r.Role, r.Blobs, humanBytes(r.Bytes))
		}
		tw.Flush()
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "failed: %s\n", escape.Text(fmt.Sprint(e)))
	}
	return nil
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// mirrorStopped is a mirror run stopped by a signal or --deadline.
type mirrorStopped struct{ error }

func (e mirrorStopped) Unwrap() error { return e.error }

// stopped says what an interrupted mirror leaves: whole blobs and
// manifests, never a tag on an incomplete image.
func (mirrorStopped) stopped() string {
	return "the blobs and manifests copied so far stay, no tag points at an incomplete image; run it again to finish"
}
