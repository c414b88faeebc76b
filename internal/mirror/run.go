package mirror

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/sigverify"
)

// Report is what a run did.
type Report struct {
	// Copied and Present count the images copied by this run and the
	// images that were already there; both verified.
	Copied, Present int
	// AttachmentsCopied and AttachmentsPresent count the same for the
	// attachments (WithAttachments).
	AttachmentsCopied, AttachmentsPresent int
	// Bytes is the number of blob bytes read from the source and sent
	// (retries included).
	Bytes int64
	// Errors are the failed images, sorted by name; the planning
	// failures among them.
	Errors Errors
	// Signatures are the verifications of the images' signatures at the
	// destination (WithVerify), one per image and policy, in plan order.
	Signatures []Signature
}

// Signature is one image's signatures checked at the destination under
// one of its verify policies.
type Signature struct {
	// Name and Written are the image's lock key and reference as
	// written; Reference is the destination reference checked, Digest
	// the digest verified.
	Name, Written, Reference string
	Digest                   v1.Hash
	// Policy is the policy's field ("verify"); Required its mode.
	Policy   string
	Required bool
	// Signer is what verified it; nil when Err says why nothing did.
	Signer *sigverify.Signer
	Err    error
}

// Run copies what plan says is missing, in the order the package
// documentation gives, then verifies every image of the plan at the
// destination. The report lists every failed image; the error is
// Report.Errors when it is not empty (a canceled context fails the images
// not done).
func (m *Mirror) Run(ctx context.Context, plan *Transfer) (*Report, error) {
	rep := &Report{}
	var (
		mu       sync.Mutex
		bytes    int64
		failedAt = map[string]*failure{} // "repo@digest" of blobs and manifests
	)
	key := func(repoKey string, h v1.Hash) string { return repoKey + "@" + h.String() }
	fail := func(k string, f *failure) {
		mu.Lock()
		defer mu.Unlock()
		if failedAt[k] == nil {
			failedAt[k] = f
		}
	}
	failed := func(k string) *failure {
		mu.Lock()
		defer mu.Unlock()
		return failedAt[k]
	}
	if m.o.progress != nil {
		m.o.progress.Start(plan.Missing(), plan.Bytes)
	}
	opener := func(pi *PlannedImage, d v1.Descriptor) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) {
			rc, err := m.src.blob(ctx, &pi.Image, d)
			if err != nil {
				return nil, err
			}
			// Never more than the declared size and one byte, however
			// long the source's body.
			rc = &sizeBound{rc: rc, d: d, left: d.Size}
			return &counter{rc: rc, add: func(n int64) {
				mu.Lock()
				bytes += n
				mu.Unlock()
				if m.o.progress != nil {
					m.o.progress.Bytes(n)
				}
			}}, nil
		}
	}
	// 1. Blobs no repository holds, once each.
	each(m.jobs, len(plan.uploads), func(i int) {
		u := plan.uploads[i]
		// The first source that serves the blob; the first failure is
		// the one reported when none does.
		var (
			first error
			from  string
		)
		for _, img := range u.imgs {
			err := checkCtx(ctx)
			if err == nil {
				err = m.dst.upload(ctx, u.repo, u.d, opener(img, u.d))
			}
			if err == nil {
				return
			}
			if first == nil {
				first, from = err, m.src.where(&img.Image)
				if _, ok := m.src.(*registrySource); ok {
					from += "/" + img.Source.RepositoryStr()
				}
			}
		}
		fail(key("", u.d.Digest), &failure{where: m.dst.where(u.repo), op: "copy blob " + u.d.Digest.String() + " from " + from, err: first})
	})
	// 2. Mounts into the other repositories.
	each(m.jobs, len(plan.mounts), func(i int) {
		mt := plan.mounts[i]
		if f := failed(key("", mt.d.Digest)); f != nil {
			fail(key(m.dst.blobKey(mt.repo), mt.d.Digest), f)
			return
		}
		err := checkCtx(ctx)
		if err == nil {
			err = m.dst.mount(ctx, mt.repo, mt.from, mt.d, opener(mt.img, mt.d))
		}
		if err != nil {
			fail(key(m.dst.blobKey(mt.repo), mt.d.Digest), &failure{where: m.dst.where(mt.repo), op: "mount blob " + mt.d.Digest.String() + " from " + mt.from.RepositoryStr(), err: err})
		}
	})
	// 3. Manifests, children first.
	for _, level := range plan.writes {
		each(m.jobs, len(level), func(i int) {
			w := level[i]
			mk := key(w.repo.Name(), w.n.digest)
			if f := m.blobsFailed(w, key, failed); f != nil {
				fail(mk, f)
				return
			}
			err := checkCtx(ctx)
			if err == nil {
				err = m.dst.putManifest(ctx, w.repo, w.n)
			}
			if err != nil {
				fail(mk, &failure{where: m.dst.where(w.repo), op: "PUT manifest " + w.n.digest.String(), err: err})
			}
		})
	}
	// 4. Tags: the attachments' first, the images' last, so that an
	// image is present (its tag resolves) only once everything attached
	// to it is there too.
	tagFailed := make([]*failure, len(plan.tags))
	putTags := func(attachments bool) {
		each(m.jobs, len(plan.tags), func(i int) {
			pi := plan.tags[i]
			if (pi.Attachment != nil) != attachments || tagFailed[i] != nil {
				return
			}
			mk := key(pi.repo.Name(), pi.Digest)
			if pi.byTag {
				// The manifest is stored by this PUT: what it needs first.
				if f := m.blobsFailed(write{repo: pi.repo, n: pi.top}, key, failed); f != nil {
					fail(mk, f)
				}
			}
			if f := failed(mk); f != nil {
				tagFailed[i] = f
				return
			}
			err := checkCtx(ctx)
			if err == nil {
				err = m.dst.tag(ctx, &pi.Image, pi.repo, pi.top)
			}
			if err != nil {
				tagFailed[i] = &failure{where: m.dst.where(pi.repo), op: "PUT tag " + pi.Tag, err: err}
				if pi.byTag {
					fail(mk, tagFailed[i])
				}
			}
		})
	}
	putTags(true)
	// Then the referrers: the writes of one subject's
	// referrers in one repository one after the other (each updates the
	// subject's listing, the tag-schema index where the registry has no
	// Referrers API), the subjects side by side.
	var groups [][]referrerWrite
	for i, w := range plan.referrers {
		if i == 0 || w.repo.Name() != plan.referrers[i-1].repo.Name() || w.subject != plan.referrers[i-1].subject {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], w)
	}
	each(m.jobs, len(groups), func(i int) {
		for _, w := range groups[i] {
			mk := key(w.repo.Name(), w.n.digest)
			if f := m.blobsFailed(w.write, key, failed); f != nil {
				fail(mk, f)
				continue
			}
			err := checkCtx(ctx)
			if err == nil {
				err = m.dst.putManifest(ctx, w.repo, w.n)
			}
			if err != nil {
				fail(mk, &failure{where: m.dst.where(w.repo), op: "PUT manifest " + w.n.digest.String(), err: err})
			}
		}
	})
	// An image whose attachments did not all get there is not tagged:
	// the rerun then plans it again, attachments included.
	blocked := map[string]string{}
	tagAt := map[*PlannedImage]int{}
	for j, t := range plan.tags {
		tagAt[t] = j
	}
	for i, pi := range plan.Images {
		if pi.Attachment == nil {
			continue
		}
		bad := pi.err != nil
		if !bad && pi.top != nil {
			bad = failed(key(pi.repo.Name(), pi.Digest)) != nil
		}
		if j, ok := tagAt[pi]; ok && tagFailed[j] != nil {
			bad = true
		}
		if k := ownerKey(pi.Image); bad && blocked[k] == "" {
			blocked[k] = plan.Images[i].Attachment.describe(pi.Image)
		}
	}
	for i, pi := range plan.tags {
		if d := blocked[ownerKey(pi.Image)]; d != "" && pi.Attachment == nil {
			tagFailed[i] = &failure{where: m.dst.where(pi.repo), op: "PUT tag " + pi.Tag,
				err: fmt.Errorf("not written: its %s failed (above); run again, or leave the attachments out with --no-attachments", d)}
		}
	}
	putTags(false)
	tagErr := map[*PlannedImage]*failure{}
	for i, pi := range plan.tags {
		if tagFailed[i] != nil {
			tagErr[pi] = tagFailed[i]
		}
	}
	// 5. Verify every image.
	errs := make([]*ImageError, len(plan.Images))
	each(m.jobs, len(plan.Images), func(i int) {
		pi := plan.Images[i]
		defer func() {
			if !pi.Present && m.o.progress != nil {
				m.o.progress.Image()
			}
		}()
		if pi.err != nil {
			errs[i] = pi.err
			return
		}
		if f := tagErr[pi]; f != nil {
			errs[i] = f.imageError(pi.Image, m.o.resolver)
			return
		}
		if pi.top != nil {
			if f := failed(key(pi.repo.Name(), pi.Digest)); f != nil {
				errs[i] = f.imageError(pi.Image, m.o.resolver)
				return
			}
		}
		if pi.Present {
			// Plan's HEAD found the locked digest under the tag (or
			// the digest) moments ago: that is the verification.
			return
		}
		id := pi.Digest.String()
		if pi.Tag != "" {
			id = pi.Tag
		}
		got, ok, err := m.dst.head(ctx, &pi.Image, pi.repo, id)
		switch {
		case err != nil:
			errs[i] = (&failure{where: m.dst.where(pi.repo), op: "verify: HEAD manifest " + id, err: err}).imageError(pi.Image, m.o.resolver)
		case !ok:
			errs[i] = (&failure{where: m.dst.where(pi.repo), op: "verify: HEAD manifest " + id, err: errNotThere}).imageError(pi.Image, m.o.resolver)
		case got != pi.Digest:
			errs[i] = (&failure{where: m.dst.where(pi.repo), op: "verify: HEAD manifest " + id, err: &digestMismatch{got: got, want: pi.Digest}}).imageError(pi.Image, m.o.resolver)
		}
	})
	m.verifyListed(ctx, plan.Images, errs)
	rep.Signatures = m.verifySignatures(ctx, plan.Images, errs)
	var done []*PlannedImage
	for i, pi := range plan.Images {
		if errs[i] != nil {
			rep.Errors = append(rep.Errors, errs[i])
			continue
		}
		done = append(done, pi)
		switch {
		case pi.Attachment != nil && pi.Present:
			rep.AttachmentsPresent++
		case pi.Attachment != nil:
			rep.AttachmentsCopied++
		case pi.Present:
			rep.Present++
		default:
			rep.Copied++
		}
	}
	if err := m.dst.finish(ctx, done); err != nil {
		return rep, err
	}
	rep.Bytes = bytes
	rep.Errors.Sorted()
	if len(rep.Errors) > 0 {
		return rep, rep.Errors
	}
	return rep, nil
}

// ownerKey groups an image with its attachments.
func ownerKey(img Image) string {
	return img.Name + "\x00" + img.Source.Name() + "\x00" + img.Site
}

// blobsFailed is the failure of a blob or child manifest w needs, or nil.
func (m *Mirror) blobsFailed(w write, key func(string, v1.Hash) string, failed func(string) *failure) *failure {
	for _, d := range w.n.blobs {
		for _, k := range []string{key("", d.Digest), key(m.dst.blobKey(w.repo), d.Digest)} {
			if f := failed(k); f != nil {
				return f
			}
		}
	}
	for _, c := range w.n.children {
		if f := failed(key(w.repo.Name(), c.digest)); f != nil {
			return f
		}
	}
	return nil
}

// counter reports the bytes read through it.
type counter struct {
	rc  io.ReadCloser
	add func(int64)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}

func (c *counter) Close() error { return c.rc.Close() }

// sizeBound fails a blob stream that goes past its descriptor's size, after
// reading at most one byte more.
type sizeBound struct {
	rc   io.ReadCloser
	d    v1.Descriptor
	left int64
}

func (b *sizeBound) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, &OversizeBlobError{Digest: b.d.Digest, Size: b.d.Size}
	}
	return n, err
}

func (b *sizeBound) Close() error { return b.rc.Close() }

// OversizeBlobError is a source that sent more bytes for a blob than its
// descriptor declares; the copy stopped one byte past the size.
type OversizeBlobError struct {
	Digest v1.Hash
	Size   int64
}

// Error names the blob and its declared size.
func (e *OversizeBlobError) Error() string {
	return fmt.Sprintf("blob %s: the source sent more than its declared %d bytes; stopped there", e.Digest, e.Size)
}

// verifySignatures checks, under WithVerify's policies, the signatures of
// every image of images that got to the destination (errs[i] nil), read
// from the destination registry; a failure under a required policy
// becomes the image's error.
func (m *Mirror) verifySignatures(ctx context.Context, images []*PlannedImage, errs []*ImageError) []Signature {
	type job struct {
		i   int
		pol *sigverify.Policy
	}
	var jobs []job
	for i, pi := range images {
		if errs[i] != nil || pi.Attachment != nil {
			continue
		}
		for _, pol := range m.o.verify[pi.Name] {
			jobs = append(jobs, job{i, pol})
		}
	}
	out := make([]Signature, len(jobs))
	each(m.jobs, len(jobs), func(k int) {
		j := jobs[k]
		pi := images[j.i]
		s := Signature{Name: pi.Name, Written: pi.written(), Reference: pi.Destination, Digest: pi.Digest, Policy: j.pol.At, Required: j.pol.Required}
		err := checkCtx(ctx)
		if err == nil {
			var repo name.Repository
			var p *remote.Puller
			if repo, _, p, err = m.o.resolver.Destination(pi.repo); err == nil {
				s.Signer, err = j.pol.Check(ctx, repo, p, pi.Digest)
			}
		}
		s.Err = err
		out[k] = s
	})
	for k, s := range out {
		if s.Err == nil || !s.Required || errs[jobs[k].i] != nil {
			continue
		}
		pi := images[jobs[k].i]
		errs[jobs[k].i] = (&failure{where: pi.repo.RegistryStr(), op: "verify signatures of " + pi.Destination + " under " + s.Policy, err: s.Err}).imageError(pi.Image, m.o.resolver)
	}
	return out
}
