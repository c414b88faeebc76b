//go:build !stowagefront

package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/progress"
	"github.com/stowage/stowage/internal/registryflags"
	"github.com/stowage/stowage/internal/source"
)

// Defaults of mirror's time limits: a blob of several GB is one request.
const (
	mirrorRequestTimeout = 10 * time.Minute
	mirrorRunTimeout     = 12 * time.Hour
)

type mirrorOptions struct {
	req          mirror.Request
	dryRun       bool
	format       string
	maxManifests int
	load         loadOptions
	reg          registryOptions
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
mounts them at the site). --have - and --trust - read standard input
(the site trust's files then relative to the working directory).

--artifact REFERENCE carries an OCI artifact with the images: the one
'stowage push' wrote (REGISTRY/REPOSITORY[:TAG]@sha256:…, as push prints
it), for a Flux OCIRepository at the site. It goes to its site repository
by the images' rule (the profiles' site, or --to), into a bundle and from
it, at the same digest: point the site's OCIRepository there with that
digest in ref.digest (--dry-run lists the destination).

-o json or -o yaml prints the plan with --dry-run:
` + printer.MustKeys(v1alpha1.MirrorPlanReport{}) + `;
after a run, also when it fails, the run's report:
` + printer.MustKeys(v1alpha1.MirrorReport{}) + `.` + kustomizationHelp,
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
			if err := printer.Check("-o", o.format); err != nil {
				return usageError{err}
			}
			// The variable is the site's environment: it applies to a
			// push from a bundle and leaves every other mirror alone.
			if o.req.Trust == "" && o.req.From != "" {
				o.req.Trust, _ = getenv(mirror.SiteTrustEnv)
			}
			o.req.Dir, o.req.DirGiven = dirArg(args), len(args) > 0
			o.req.Stdin, o.req.Warn = cmd.InOrStdin(), cmd.ErrOrStderr()
			if o.req.Have != confined.Stdin && o.req.Trust != confined.Stdin {
				o.reg.stdin = cmd.InOrStdin()
			} else if o.reg.caFile == confined.Stdin {
				return registryflags.ErrStdinTaken
			}
			if err := o.req.Validate(); err != nil {
				return usageError{err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.reg.runTimeout)
			defer cancel()
			return runMirror(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o, getenv)
		},
	}
	fs := c.Flags()
	fs.StringArrayVarP(&o.req.Profiles, "profile", "p", nil, "profile whose images to copy (repeatable; default every profile)")
	fs.StringVar(&o.req.To, "to", "", "destination: the site registry HOST[:PORT][/PREFIX], or oci:PATH for a bundle (default: where render points: the config's site field, or the site repositories a --from bundle records)")
	fs.StringVar(&o.req.From, "from", "", "source bundle oci:PATH (made with --to oci:) instead of the images' registries")
	fs.StringVar(&o.req.Have, "have", "", "a lock of what the site already holds (- reads standard input): its images at the same digest are left out")
	fs.StringArrayVar(&o.req.Artifacts, "artifact", nil, "an OCI artifact to carry with the images, REGISTRY/REPOSITORY[:TAG]@sha256:… as stowage push prints it (repeatable)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan and exit; with --from, the bundle is checked against the site trust and its signatures verified, read from the bundle (nothing pushed, exit 1 on any failure)")
	fs.StringVar(&o.req.Trust, "trust", "", "with --from: the site's own trust file (kind SiteTrust: keys, trusted root, identities, mode), kept at the site (- reads standard input); the bundle is checked against it and the site's copy verified under it (default $"+mirror.SiteTrustEnv+", read with --from only; without either, the bundle's own, unauthenticated trust is used, with a warning)")
	fs.IntVar(&o.maxManifests, "max-manifests", mirror.MaxManifestsPerImage, "most distinct manifests read for one image (an index, its children and theirs, each read once however many indexes list it); an image with more fails")
	fs.BoolVar(&o.req.NoAttachments, "no-attachments", false, "leave out what is attached to the images (cosign signatures, attestations and SBOMs, OCI 1.1 referrers); refused when a required verify policy applies, unless --no-verify")
	fs.BoolVar(&o.req.NoVerify, "no-verify", false, "do not verify the signatures of the destination's copy under the verify policies (nor record their trust material in a bundle)")
	fs.StringVarP(&o.format, "output", "o", "text", "text, json or yaml: the plan with --dry-run, else the run's report, also when it fails (their keys: see above)")
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

func runMirror(ctx context.Context, stdout, stderr io.Writer, o mirrorOptions, getenv env) error {
	job, err := mirror.Prepare(o.req, func() (*source.Source, error) { return loadSource(ctx, stderr, o.req.Dir, o.load) })
	if err != nil {
		return mirrorUsage(err)
	}
	r, done, err := o.reg.resolver(io.Discard, job.Passwords, job.AuthImages, getenv)
	if err != nil {
		return err
	}
	done()
	opts, err := job.Options(o.req)
	if err != nil {
		return mirrorUsage(err)
	}
	opts = append(opts, mirror.WithResolver(r), mirror.WithJobs(o.reg.jobs), mirror.WithMaxManifests(o.maxManifests))
	bar := progress.NewMirror(stderr, o.reg.quiet || o.dryRun)
	if bar != nil {
		opts = append(opts, mirror.WithProgress(bar))
	}
	// Only an option's value is a usage error; --to oci: naming a
	// directory that is not a layout, or a --from bundle that does not
	// open, is bad input, exit 1.
	m, err := mirror.New(opts...)
	if err != nil {
		return mirrorUsage(err)
	}
	p, err := m.Plan(ctx, job.Images)
	if err != nil {
		return err
	}
	if o.dryRun {
		rep, err := job.DryRun(ctx, o.req, p)
		if rep != nil {
			if perr := printer.Print(stdout, o.format, rep); perr != nil {
				return perr
			}
		}
		return err
	}
	run, err := m.Run(ctx, p)
	bar.Finish()
	if err != nil && ctx.Err() != nil {
		err = mirrorStopped{err}
	}
	if o.format != "text" || run != nil {
		rep := job.Report(p, run, err)
		if perr := printer.Print(stdout, o.format, rep); perr != nil && err == nil {
			return perr
		}
		if o.format == "text" {
			rep.WriteWarnings(stderr)
		}
	}
	return err
}

// mirrorUsage is err, a usage error (exit 2) when it is an option's value
// mirror refused.
func mirrorUsage(err error) error {
	if oe := (*mirror.OptionError)(nil); errors.As(err, &oe) {
		return usageError{err}
	}
	return err
}

// mirrorStopped is a mirror run stopped by a signal or --deadline.
type mirrorStopped struct{ error }

func (e mirrorStopped) Unwrap() error { return e.error }

// stopped says what an interrupted mirror leaves: whole blobs and
// manifests, never a tag on an incomplete image.
func (mirrorStopped) stopped() string {
	return "the blobs and manifests copied so far stay, no tag points at an incomplete image; run it again to finish"
}
