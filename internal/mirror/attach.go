package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The kinds of attachment a mirror carries with an image (Attachment.Kind).
// The first three are cosign's tag scheme: a manifest tagged
// "sha256-<hex of the subject>.<kind>" in the subject's repository. The
// last is an OCI 1.1 referrer: a manifest whose subject field names the
// image, listed by the registry's Referrers API or, where a registry
// serves none, by the referrers tag-schema index tagged "sha256-<hex>"
// (OCI distribution specification, "Referrers Tag Schema").
const (
	KindSignature   = "sig"
	KindAttestation = "att"
	KindSBOM        = "sbom"
	KindReferrer    = "referrer"
)

// tagKinds are the attachment kinds of cosign's tag scheme, in the order
// they are looked up.
var tagKinds = []string{KindSignature, KindAttestation, KindSBOM}

// Annotations on an attachment's descriptor in a bundle's index.json,
// beside AnnotationRefName (the name of the image it is attached to),
// AnnotationTag (a tag-scheme attachment's tag) and AnnotationSite.
const (
	// AnnotationAttachment is the attachment's kind (KindSignature, …).
	AnnotationAttachment = "dev.stowage.attachment"
	// AnnotationSubject is the digest of the manifest the attachment is
	// attached to: the image's index or one of its children.
	AnnotationSubject = "dev.stowage.subject"
	// AnnotationAttachments is, on an image's descriptor, the
	// attachments the bundle carried for it (its index and children
	// alike) when it was written: "KIND SUBJECT DIGEST" entries, sorted,
	// separated by ";". A push from the bundle refuses an image under a
	// required policy one of whose recorded attachments is missing.
	AnnotationAttachments = "dev.stowage.attachments"
)

// Carried is an attachment a bundle recorded for an image
// (AnnotationAttachments).
type Carried struct {
	Kind            string
	Subject, Digest v1.Hash
}

// String is the entry as AnnotationAttachments writes it.
func (c Carried) String() string { return c.Kind + " " + c.Subject.String() + " " + c.Digest.String() }

// parseCarried reads an AnnotationAttachments value: at most
// MaxAttachmentsPerImage entries, each a known kind and two sha256
// digests.
func parseCarried(s string) ([]Carried, error) {
	if s == "" {
		return nil, nil
	}
	entries := strings.Split(s, ";")
	if len(entries) > MaxAttachmentsPerImage {
		return nil, fmt.Errorf("%d entries, more than the %d read", len(entries), MaxAttachmentsPerImage)
	}
	var out []Carried
	for i, e := range entries {
		f := strings.Fields(e)
		if len(f) != 3 || !knownKind(f[0]) {
			return nil, fmt.Errorf("entry %d: want KIND SUBJECT DIGEST, KIND one of %s, %s, %s, %s", i, KindSignature, KindAttestation, KindSBOM, KindReferrer)
		}
		var c Carried
		c.Kind = f[0]
		for j, h := range []*v1.Hash{&c.Subject, &c.Digest} {
			var err error
			if *h, err = v1.NewHash(f[1+j]); err != nil || h.Algorithm != "sha256" || len(h.Hex) != 64 {
				return nil, fmt.Errorf("entry %d: want sha256:<64 hex digits>", i)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// MaxReferrers bounds the referrers read for one manifest: 256.
const MaxReferrers = 256

// MaxAttachmentsPerImage bounds the attachments carried with one image
// (its index and children together): 10,000; an image with more fails,
// naming the bound, and --no-attachments copies it without them.
const MaxAttachmentsPerImage = 10_000

// Attachment marks an Image that is attached to a locked image rather than
// locked itself: a cosign signature, attestation or SBOM, or an OCI 1.1
// referrer.
type Attachment struct {
	// Subject is the digest of the manifest it is attached to.
	Subject v1.Hash
	// Kind is KindSignature, KindAttestation, KindSBOM or KindReferrer.
	Kind string
}

// describe names the attachment in messages.
func (a *Attachment) describe(img Image) string {
	switch a.Kind {
	case KindReferrer:
		return fmt.Sprintf("referrer %s of %s", img.Digest, a.Subject)
	case KindSignature:
		return "signature " + img.Tag
	case KindAttestation:
		return "attestation " + img.Tag
	default:
		return "SBOM " + img.Tag
	}
}

// attachmentTag is cosign's tag for an attachment of kind to h.
func attachmentTag(h v1.Hash, kind string) string {
	return h.Algorithm + "-" + h.Hex + "." + kind
}

// knownKind reports whether kind is one this package writes.
func knownKind(kind string) bool {
	switch kind {
	case KindSignature, KindAttestation, KindSBOM, KindReferrer:
		return true
	}
	return false
}

// WithAttachments makes a Plan look up, for every image and every child
// manifest of it, the cosign tag-scheme signatures, attestations and SBOMs
// and the OCI 1.1 referrers attached to it at the source, and copy them
// beside the image (each one is planned, copied and verified like an
// image: present ones cost nothing, a rerun copies nothing). A referrer
// written to a registry without the Referrers API is added to the
// referrers tag-schema index there (go-containerregistry's push does it).
// From a bundle, the attachments are the ones its index.json lists
// (Image.Attachment): give them with the images.
func WithAttachments() Option {
	return func(o *options) error { o.attachments = true; return nil }
}

// attachedSource is a source that can look attachments up (a registry; a
// bundle lists its own).
type attachedSource interface {
	// tagged resolves tag in img's repository; ok is false when it does
	// not exist.
	tagged(ctx context.Context, img *Image, tag string) (v1.Hash, bool, error)
	// referrers lists the referrers of h in img's repository.
	referrers(ctx context.Context, img *Image, h v1.Hash) ([]v1.Descriptor, error)
}

func (s *registrySource) tagged(ctx context.Context, img *Image, tag string) (v1.Hash, bool, error) {
	repo, p, err := s.r.Source(img.Source, img.Auth)
	if err != nil {
		return v1.Hash{}, false, err
	}
	d, err := p.Head(ctx, repo.Tag(tag))
	switch {
	case isNotFound(err):
		return v1.Hash{}, false, nil
	case err != nil:
		return v1.Hash{}, false, err
	}
	return d.Digest, true, nil
}

func (s *registrySource) referrers(ctx context.Context, img *Image, h v1.Hash) ([]v1.Descriptor, error) {
	repo, p, err := s.r.Source(img.Source, img.Auth)
	if err != nil {
		return nil, err
	}
	return listReferrers(ctx, repo, p, h)
}

// listReferrers asks repo's registry for the referrers of h: its Referrers
// API, else the referrers tag-schema index (go-containerregistry falls
// back by itself); none is an empty list. At most MaxReferrers.
func listReferrers(ctx context.Context, repo name.Repository, p *remote.Puller, h v1.Hash) ([]v1.Descriptor, error) {
	idx, err := remote.Referrers(repo.Digest(h.String()), remote.Reuse(p), remote.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) > MaxReferrers {
		return nil, fmt.Errorf("%d referrers, more than the %d stowage reads", len(im.Manifests), MaxReferrers)
	}
	return im.Manifests, nil
}

// referrerLister is a sink that can list the referrers of a manifest (a
// registry), to tell a referrer that is stored but not listed.
type referrerLister interface {
	listed(ctx context.Context, repo name.Repository, h v1.Hash) ([]v1.Descriptor, error)
}

func (s *registrySink) listed(ctx context.Context, repo name.Repository, h v1.Hash) ([]v1.Descriptor, error) {
	_, _, p, err := s.r.Destination(repo)
	if err != nil {
		return nil, err
	}
	return listReferrers(ctx, repo, p, h)
}

// subjects are the manifests of an image's tree that attachments may hang
// off: its top, and for an index every child, depth first, once each.
func subjects(top *node) []v1.Hash {
	var out []v1.Hash
	seen := map[v1.Hash]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if seen[n.digest] {
			return
		}
		seen[n.digest] = true
		out = append(out, n.digest)
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(top)
	return out
}

// discover looks up the attachments of every image of images that the
// run copies (attachments apart; an image already at the destination is
// not looked at) at a registry source: per manifest of its tree, one HEAD
// for each tag-scheme kind and one referrers listing. An image whose lookup fails
// gets the failure; the attachments found are returned deduplicated and
// sorted.
func (m *Mirror) discover(ctx context.Context, images []*PlannedImage) []Image {
	src, ok := m.src.(attachedSource)
	if !ok {
		return nil
	}
	type ask struct {
		pi *PlannedImage
		h  v1.Hash
	}
	var asks []ask
	subj := make([][]v1.Hash, len(images))
	for i, pi := range images {
		// An image already at the destination costs nothing more: its
		// source is not asked (the dry run of a site that holds
		// everything contacts no source).
		if pi.err == nil && pi.Attachment == nil && pi.top != nil {
			subj[i] = subjects(pi.top)
		}
	}
	// One lookup per source repository and subject, whichever images
	// share it.
	asked := map[string]bool{}
	for i, pi := range images {
		for _, h := range subj[i] {
			k := pi.Source.Name() + "@" + h.String()
			if !asked[k] {
				asked[k] = true
				asks = append(asks, ask{pi, h})
			}
		}
	}
	found := make([][]Image, len(asks))
	failed := make([]*failure, len(asks))
	each(m.jobs, len(asks), func(i int) {
		a := asks[i]
		if err := checkCtx(ctx); err != nil {
			failed[i] = &failure{op: "look up attachments", err: err}
			return
		}
		for _, kind := range tagKinds {
			tag := attachmentTag(a.h, kind)
			got, ok, err := src.tagged(ctx, &a.pi.Image, tag)
			if err != nil {
				failed[i] = &failure{where: m.src.where(&a.pi.Image), op: "HEAD manifest " + tag, err: err}
				return
			}
			if ok {
				found[i] = append(found[i], Image{Digest: got, Tag: tag, Attachment: &Attachment{Subject: a.h, Kind: kind}})
			}
		}
		ds, err := src.referrers(ctx, &a.pi.Image, a.h)
		if err != nil {
			failed[i] = &failure{where: m.src.where(&a.pi.Image), op: "list referrers of " + a.h.String(), err: err}
			return
		}
		for _, d := range ds {
			if !d.MediaType.IsImage() && !d.MediaType.IsIndex() {
				failed[i] = &failure{where: m.src.where(&a.pi.Image), op: "list referrers of " + a.h.String(), err: fmt.Errorf("referrer %s has media type %q, neither an image manifest nor an index", d.Digest, d.MediaType)}
				return
			}
			found[i] = append(found[i], Image{Digest: d.Digest, Attachment: &Attachment{Subject: a.h, Kind: KindReferrer}})
		}
	})
	byKey := map[string]int{}
	for i, a := range asks {
		byKey[a.pi.Source.Name()+"@"+a.h.String()] = i
	}
	limit := m.o.maxAttachments
	if limit == 0 {
		limit = MaxAttachmentsPerImage
	}
	var out []Image
	seen := map[string]bool{}
	for i, pi := range images {
		var own []Image
		for _, h := range subj[i] {
			j := byKey[pi.Source.Name()+"@"+h.String()]
			if f := failed[j]; f != nil {
				if pi.err == nil {
					pi.err = f.imageError(pi.Image, m.o.resolver)
				}
				continue
			}
			for _, a := range found[j] {
				img := Image{Name: pi.Name, Written: pi.Written, Source: pi.Source, Tag: a.Tag, Digest: a.Digest,
					Auth: pi.Auth, Site: pi.Site, Attachment: a.Attachment}
				id := imageIdentity(img)
				if !seen[id] {
					seen[id] = true
					own = append(own, img)
				}
			}
		}
		if len(own) > limit && pi.err == nil {
			pi.err = (&failure{where: m.src.where(&pi.Image), op: "look up attachments",
				err: fmt.Errorf("%d attachments, more than the %d carried with one image; copy it without them with --no-attachments", len(own), limit)}).imageError(pi.Image, m.o.resolver)
		}
		if pi.err == nil {
			out = append(out, own...)
		}
	}
	return out
}

// imageIdentity tells the images and attachments of a plan or a bundle
// apart: a locked image by name, tag and site; an attachment also by its
// kind and subject, and a referrer (which has no tag) by its digest.
func imageIdentity(img Image) string {
	id := identity(img.Name, img.Tag, img.Site)
	if a := img.Attachment; a != nil {
		id += "\x00" + a.Kind + "\x00" + a.Subject.String()
		if a.Kind == KindReferrer {
			id += "\x00" + img.Digest.String()
		}
	}
	return id
}

// relink finds the referrer attachments the plan found stored at a
// registry destination that its referrers listing (the Referrers API or
// the tag-schema index) does not name, an interrupted copy's, and plans
// them again: writing the manifest once more adds it to the listing.
func (m *Mirror) relink(ctx context.Context, images []*PlannedImage, mu *sync.Mutex, nodes map[v1.Hash]*node) {
	lister, ok := m.dst.(referrerLister)
	if !ok {
		return
	}
	groups := groupBySubject(images, func(_ int, pi *PlannedImage) bool {
		return pi.err == nil && pi.Present && pi.isReferrer()
	})
	each(m.jobs, len(groups), func(k int) {
		g := groups[k]
		ds, err := lister.listed(ctx, g.repo, g.subject)
		if err != nil {
			for _, i := range g.idx {
				pi := images[i]
				pi.err = (&failure{where: m.dst.where(g.repo), op: "list referrers of " + g.subject.String(), err: err}).imageError(pi.Image, m.o.resolver)
			}
			return
		}
		have := map[v1.Hash]bool{}
		for _, d := range ds {
			have[d.Digest] = true
		}
		for _, i := range g.idx {
			pi := images[i]
			if have[pi.Digest] {
				continue
			}
			top, f := m.read(ctx, &pi.Image, pi.Digest, mu, nodes, 0, m.newBudget())
			if f != nil {
				pi.err = f.imageError(pi.Image, m.o.resolver)
				continue
			}
			pi.Present, pi.top, pi.relinked = false, top, true
		}
	})
}

// isReferrer reports whether pi is an OCI 1.1 referrer attachment.
func (pi *PlannedImage) isReferrer() bool {
	return pi.Attachment != nil && pi.Attachment.Kind == KindReferrer
}

// verifyListed checks, after a run, that every referrer copied to a
// registry is in its subject's referrers listing there; a missing one
// gets an error.
func (m *Mirror) verifyListed(ctx context.Context, images []*PlannedImage, errs []*ImageError) {
	lister, ok := m.dst.(referrerLister)
	if !ok {
		return
	}
	groups := groupBySubject(images, func(i int, pi *PlannedImage) bool {
		return errs[i] == nil && !pi.Present && pi.isReferrer()
	})
	each(m.jobs, len(groups), func(k int) {
		g := groups[k]
		op := "verify: list referrers of " + g.subject.String()
		ds, err := lister.listed(ctx, g.repo, g.subject)
		have := map[v1.Hash]bool{}
		for _, d := range ds {
			have[d.Digest] = true
		}
		for _, i := range g.idx {
			pi := images[i]
			switch {
			case err != nil:
				errs[i] = (&failure{where: m.dst.where(g.repo), op: op, err: err}).imageError(pi.Image, m.o.resolver)
			case !have[pi.Digest]:
				errs[i] = (&failure{where: m.dst.where(g.repo), op: op, err: fmt.Errorf("referrer %s is stored but not listed", pi.Digest)}).imageError(pi.Image, m.o.resolver)
			}
		}
	})
}

// subjectGroup is the referrer attachments of one subject in one
// destination repository: idx indexes the plan's images.
type subjectGroup struct {
	repo    name.Repository
	subject v1.Hash
	idx     []int
}

// groupBySubject groups the referrer attachments of images that keep
// accepts by destination repository and subject, sorted by
// "repository@subject", so that each subject's referrers listing is read
// once.
func groupBySubject(images []*PlannedImage, keep func(int, *PlannedImage) bool) []*subjectGroup {
	byKey := map[string]*subjectGroup{}
	var keys []string
	for i, pi := range images {
		if !keep(i, pi) {
			continue
		}
		k := pi.repo.Name() + "@" + pi.Attachment.Subject.String()
		g := byKey[k]
		if g == nil {
			g = &subjectGroup{repo: pi.repo, subject: pi.Attachment.Subject}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.idx = append(g.idx, i)
	}
	sort.Strings(keys)
	groups := make([]*subjectGroup, len(keys))
	for i, k := range keys {
		groups[i] = byKey[k]
	}
	return groups
}

// attachmentOp prefixes op with what an attachment is, so that its
// failure says which of the image's attachments failed.
func attachmentOp(img Image, op string) string {
	if img.Attachment == nil {
		return op
	}
	d := img.Attachment.describe(img)
	if strings.HasPrefix(op, d) {
		return op
	}
	return d + ": " + op
}
