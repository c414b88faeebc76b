// Package mirror copies locked images, digest for digest, from their
// registries (or an OCI image layout bundle) to a site registry (or a
// bundle), for `stowage mirror`.
//
// A run has two steps. Plan HEADs every image at the destination (its tag,
// or its digest when it has no tag): an image whose tag already points at
// the locked digest is present and costs nothing more. For every other
// image it reads the manifests from the source (the index and every child
// when the index is pinned, the child alone when a child is pinned), HEADs
// each child manifest and each blob at the destination, and counts the
// unique blobs to move and their bytes: a blob shared by several images is
// counted once, and a blob already in another destination repository is
// mounted (no bytes move): a repository of the run, or, for a blob none of
// them holds, another repository of the registry that its catalog lists
// under the image's source path (a copy under another prefix of the
// site; see elsewhere). Run then copies in an order that never leaves a
// tag pointing at a half-copied image. Its steps share one pool of
// WithJobs goroutines and each starts as soon as the steps it needs are
// done, image by image, not one step for every image at a time: a large
// blob delays only the images that hold it. Among the steps ready, those
// that move no bytes go first, then the largest blob.
//
//  1. the blobs no destination repository holds, each streamed once from
//     the source (go-containerregistry's remote reads; at a registry a
//     POST and one PUT with the bytes, registry.PutBlob; memory does not
//     grow with the blob's size);
//  2. cross-repository mounts of a blob into every other repository that
//     needs it (one POST each), once its upload is done;
//  3. manifests by digest, each once its blobs are in its repository and
//     its children are written there (at a registry, an image's own
//     manifest is stored by its tag's PUT in step 4: one request stores
//     it and sets the tag);
//  4. tags, last for each image: the tags of its attachments
//     (WithAttachments), each once its manifest is there, then its
//     referrers (one subject's after the other, each adding itself to the
//     subject's referrers listing), then the image's own tag, once its
//     manifests and every attachment are done, and held back when one of
//     its attachments did not get there; an image under a verify policy
//     (WithVerify) is pushed by digest instead, and its tag waits for
//     step 5;
//  5. the signatures of the images under a verify policy, checked at
//     the destination by digest, and only for those that verify, their
//     tags: an image that does not verify leaves no new tag, and a tag
//     the destination held keeps its digest.
//
// A step whose blob or child manifest failed is not sent: it fails with
// it, and so do the images that need it. When every
// step is done, Run verifies every image at the destination: the digest
// its tag (or digest) resolves to there must be the lock's (an image the plan
// found present was verified by the plan's own HEAD). A rerun plans
// again, so it moves only what is missing. A failing image is named with the
// registry's answer; the other images still complete.
//
// Registries are reached through internal/registry's Resolver (Source and
// Destination), so mirrors (--mirror), plain HTTP (--insecure-registry),
// CA files, per-request timeouts, Retry-After and go-containerregistry's
// retries, and the credentials (the config's auth for the source, then the
// Docker keychain; the keychain for the destination) are the same as for
// `stowage lock`. No credential appears in a message of this package.
//
// Bundles: WithToLayout writes an OCI image layout (go-containerregistry's
// layout package reads it; blobs and index.json are written by this
// package through a temporary file and a rename, so an interrupted run never
// leaves a partial file under a final name) whose index.json has one
// descriptor per image, annotated with its original reference, plus the
// lock it was made from (BundleLock). The same images give the same bytes,
// file for file. WithFromLayout reads images from such a bundle. With
// WithTrust a bundle also records the verify policies of its images and
// the keys and trusted roots they read (BundleTrust), and WithVerify checks
// the images' signatures at a registry destination after the copy.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/sigverify"
	"github.com/stowage/stowage/internal/site"
)

// DefaultJobs is how many blobs, manifests or HEADs are in flight at once.
const DefaultJobs = 8

// Annotations written on each image's descriptor in a bundle's index.json.
const (
	// AnnotationRefName is the OCI annotation naming the image: its lock
	// key ("docker.io/library/busybox:1.31.1").
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationReference is the reference as the config wrote it.
	AnnotationReference = "dev.stowage.reference"
	// AnnotationTag is the tag the image gets at a registry it is pushed
	// to; absent when the image is pushed by digest only.
	AnnotationTag = "dev.stowage.tag"
	// AnnotationSite is the site repository the image was bundled for
	// (Image.Site: "registry.site:5000/library/busybox", where render
	// points); absent when the config named no site registry, and the
	// push then needs --to.
	AnnotationSite = "dev.stowage.site"
	// AnnotationOmitted lists the blobs a delta bundle leaves out of an
	// image because the site holds them (Image.Omitted), as digest
	// references "repository@sha256:…" naming where the site holds each,
	// sorted, separated by spaces; absent when the image is whole.
	AnnotationOmitted = "dev.stowage.omitted"
	// AnnotationBundle marks index.json as a bundle stowage wrote; its
	// value is the bundle format version, BundleVersion.
	AnnotationBundle = "dev.stowage.bundle"
	// BundleVersion is the value of AnnotationBundle this package writes.
	BundleVersion = "1"
	// BundleLock is the file name of the lock inside a bundle.
	BundleLock = "stowage.lock.yaml"
)

// Image is one image to mirror.
type Image struct {
	// Name identifies the image in messages, sorting and bundle
	// annotations: its lock key, e.g. "docker.io/library/busybox:1.31.1".
	Name string
	// Written is the reference as the config wrote it; Name when empty.
	Written string
	// Source is the repository the image is read from (the original one;
	// the Resolver applies any mirror).
	Source name.Repository
	// Tag is written at the destination, last, pointing at Digest; empty
	// to write by digest only (a pinned child of an index, a digest-only
	// reference).
	Tag string
	// Digest is the lock's digest: the index (copied with every child)
	// or a single manifest.
	Digest v1.Hash
	// Auth is the config's credential for Source; nil for the keychain.
	Auth *v1alpha1.Auth
	// Site is the site repository the image goes to, as the image plan
	// names it (plan.Use.Site without its tag: the repository render
	// points at), or empty when the config names no site registry. A
	// bundle records it (AnnotationSite) so that a push from the bundle
	// lands where render points.
	Site string
	// Carried are the attachments a bundle recorded for the image when
	// it was written (AnnotationAttachments), read by BundleImages; a
	// push checks each is in the bundle (SitePolicies).
	Carried []Carried
	// Omitted are the blobs of the image a delta bundle leaves out
	// because the site holds them, each with the repository that holds
	// it there: a site repository when Site is set, else a source
	// repository, mapped to the site like the image. A Plan into a
	// bundle with WithHave sets it (AnnotationOmitted records it);
	// BundleImages reads it back, and a push mounts each from there.
	Omitted map[v1.Hash]string
	// Attachment is set for an image attached to a locked one (a
	// signature, attestation, SBOM or referrer; WithAttachments): Name,
	// Written, Source, Auth and Site are the locked image's, Digest the
	// attachment's manifest and Tag its cosign tag (empty for a
	// referrer). Nil for a locked image.
	Attachment *Attachment
}

func (img Image) written() string {
	if img.Written != "" {
		return img.Written
	}
	return img.Name
}

// Progress is told how much a run will move and, as it goes, what moved.
// Calls come from several goroutines.
type Progress interface {
	// Start is called once with the images and blob bytes to copy.
	Start(images int, bytes int64)
	// Bytes reports n more blob bytes read from the source.
	Bytes(n int64)
	// Image reports one image done (verified or failed).
	Image()
}

// Option configures a Mirror.
type Option func(*options) error

type options struct {
	resolver   *registry.Resolver
	jobs       int
	fromLayout string
	toLayout   string
	site       *site.Mapping
	toRegistry bool
	have       []Image
	progress   Progress
	lock       []byte
	// attachments looks up and copies what is attached to each image
	// (WithAttachments).
	attachments bool
	// maxAttachments is MaxAttachmentsPerImage, lower in tests.
	maxAttachments int
	// maxManifests bounds the distinct manifests read for one image
	// (WithMaxManifests); 0 for MaxManifestsPerImage.
	maxManifests int
	// trust is recorded in a bundle (WithTrust).
	trust *Trust
	// verify are the policies the destination's copy is verified under
	// (WithVerify), by lock key.
	verify map[string][]*sigverify.Policy
}

// WithResolver sets the registry client (required unless both ends are
// OCI layouts).
func WithResolver(r *registry.Resolver) Option {
	return func(o *options) error { o.resolver = r; return nil }
}

// WithJobs sets how many operations run at once (default DefaultJobs); n
// must be at least 1 (registry.CheckJobs).
func WithJobs(n int) Option {
	return func(o *options) error {
		if err := registry.CheckJobs(n); err != nil {
			return err
		}
		o.jobs = n
		return nil
	}
}

// WithMaxManifests bounds the distinct manifests read for one image (its
// index, children and theirs; default MaxManifestsPerImage): an image with
// more fails, naming the bound. n must be at least 1.
func WithMaxManifests(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("the manifests read for one image must be at least 1, not %d", n)
		}
		o.maxManifests = n
		return nil
	}
}

// WithToSite sends images to the site registry m maps them to
// (internal/site).
func WithToSite(m site.Mapping) Option {
	return func(o *options) error {
		if err := m.Validate(); err != nil {
			return err
		}
		o.site = &m
		return nil
	}
}

// WithToImageSites sends every image to the site repository it names
// (Image.Site). With WithToSite too, an image without a Site goes where the
// mapping puts it, and an image with one must be put there by the mapping
// as well (else its plan fails naming both repositories): a --to never
// moves an image away from where render points.
func WithToImageSites() Option {
	return func(o *options) error { o.toRegistry = true; return nil }
}

// WithHave makes a bundle a delta against a site that holds images: the
// blobs of those images (read from their sources, manifests and children
// by digest) are left out of the bundle, and each image records the ones
// it lacks (Image.Omitted, with the have image's Site, else its Source,
// as where the site holds them). Manifests are always carried. A have
// image whose manifests cannot be read leaves nothing out. Only with
// WithToLayout.
func WithHave(images []Image) Option {
	return func(o *options) error { o.have = images; return nil }
}

// WithToLayout writes images into an OCI image layout at path (a bundle).
// lock is the lock file the bundle is made from, written beside index.json
// as BundleLock.
func WithToLayout(path string, lock []byte) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("OCI layout path is empty")
		}
		o.toLayout, o.lock = path, lock
		return nil
	}
}

// WithTrust records t, the verify policies of the images and the files
// they read, in the bundle (its index.json lists it under AnnotationTrust;
// BundleTrust reads it back). The policies of an image the bundle held
// before and this run does not write are kept. Only with WithToLayout.
func WithTrust(t *Trust) Option {
	return func(o *options) error { o.trust = t; return nil }
}

// WithVerify verifies, after the copy, the signatures of each image at the
// destination registry under the policies pols gives for its name (the
// lock key, Image.Name), with sigstore-go through internal/sigverify:
// signatures read from the destination only, trust from the policies (no
// Rekor, Fulcio or TUF request). The digest verified is the image's, the
// one its site reference names. A failure under a required policy fails
// the image (Report.Errors, naming the destination reference, the digest
// and why); under an optional one it is reported in Report.Signatures
// only. Only with a registry destination.
func WithVerify(pols map[string][]*sigverify.Policy) Option {
	return func(o *options) error { o.verify = pols; return nil }
}

// WithFromLayout reads images from the OCI image layout at path instead of
// their registries.
func WithFromLayout(path string) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("OCI layout path is empty")
		}
		o.fromLayout = path
		return nil
	}
}

// WithProgress reports progress to p.
func WithProgress(p Progress) Option {
	return func(o *options) error { o.progress = p; return nil }
}

// Mirror plans and runs copies. It is safe for one Plan and Run at a time.
type Mirror struct {
	o    options
	src  source
	dst  sink
	jobs int
}

// OptionError is an invalid option value given to New, or a Request's
// flags that contradict each other or do not apply (Request.Validate,
// Prepare, Job.Options): a flag's value on the command line, a usage
// error there. Every other error of New is about its inputs' content or
// state.
type OptionError struct{ Err error }

// Error is the option's error.
func (e *OptionError) Error() string { return e.Err.Error() }

// Unwrap returns the option's error.
func (e *OptionError) Unwrap() error { return e.Err }

// New returns a Mirror with the options applied. Errors: an invalid option,
// no destination or two, or no Resolver where a registry is involved.
func New(opts ...Option) (*Mirror, error) {
	o := options{jobs: DefaultJobs}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, &OptionError{Err: err}
		}
	}
	m := &Mirror{o: o, jobs: o.jobs}
	toRegistry := o.site != nil || o.toRegistry
	switch {
	case toRegistry == (o.toLayout != ""):
		return nil, errors.New("give exactly one destination: a site registry or an OCI layout")
	case (toRegistry || o.fromLayout == "") && o.resolver == nil:
		return nil, errors.New("a registry is involved but no Resolver was given")
	}
	if o.trust != nil && o.toLayout == "" {
		return nil, errors.New("trust material (WithTrust) is recorded in a bundle: give an OCI layout destination")
	}
	if len(o.verify) > 0 && !toRegistry {
		return nil, errors.New("signatures are verified (WithVerify) at a registry destination: a bundle is verified when it is pushed")
	}
	if len(o.have) > 0 && o.toLayout == "" {
		return nil, errors.New("a site's images to leave out (WithHave) make a delta bundle: give an OCI layout destination")
	}
	if o.fromLayout != "" {
		src, err := openLayoutSource(o.fromLayout)
		if err != nil {
			return nil, err
		}
		m.src = src
	} else {
		m.src = &registrySource{r: o.resolver}
	}
	if toRegistry {
		m.dst = &registrySink{r: o.resolver, site: o.site}
	} else {
		dst, err := openLayoutSink(o.toLayout, o.lock)
		if err != nil {
			return nil, err
		}
		dst.trust = o.trust
		m.dst = dst
	}
	return m, nil
}

// each runs do(i) for i in [0, n) on up to jobs goroutines.
func each(jobs, n int, do func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(jobs, n) {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// checkCtx returns the context's cause when it is done.
func checkCtx(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
