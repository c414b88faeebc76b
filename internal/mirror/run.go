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
	r := &runner{m: m, ctx: ctx, plan: plan, failedAt: map[string]*failure{}}
	if m.o.progress != nil {
		m.o.progress.Start(plan.Missing(), plan.Bytes)
	}
	// 1-4. The copy, each step as soon as what it needs is done.
	r.copyAll()
	// 5. Verify every image; under a verify policy, its signatures at
	// the destination, and only then its tag.
	errs := r.verify()
	m.verifyListed(ctx, plan.Images, errs)
	rep := &Report{Signatures: m.verifySignatures(ctx, plan.Images, errs)}
	r.tagVerified(errs)
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
	rep.Bytes = r.bytes
	rep.Errors.Sorted()
	if len(rep.Errors) > 0 {
		return rep, rep.Errors
	}
	return rep, nil
}

// runner is the state one Run shares between its steps.
type runner struct {
	m    *Mirror
	ctx  context.Context
	plan *Transfer
	// mu guards bytes, the blob bytes read from the source, and
	// failedAt, the first failure of each blob and manifest by runKey.
	mu       sync.Mutex
	bytes    int64
	failedAt map[string]*failure
	// tagFailed are the failures of plan.tags, by index (step 4), each
	// written by its tag's step and read after it.
	tagFailed []*failure
}

// runKey names a blob or manifest h in the scope repoKey ("" for a blob
// no repository holds; a sink blob key or a repository name).
func runKey(repoKey string, h v1.Hash) string { return repoKey + "@" + h.String() }

// fail records f as k's failure unless k failed already.
func (r *runner) fail(k string, f *failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failedAt[k] == nil {
		r.failedAt[k] = f
	}
}

// failed is k's failure, or nil.
func (r *runner) failed(k string) *failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failedAt[k]
}

// opener opens d at pi's source, bounded by its declared size, counting
// the bytes read (Report.Bytes, the progress).
func (r *runner) opener(pi *PlannedImage, d v1.Descriptor) func() (io.ReadCloser, error) {
	m := r.m
	return func() (io.ReadCloser, error) {
		rc, err := m.src.blob(r.ctx, &pi.Image, d)
		if err != nil {
			return nil, err
		}
		// Never more than the declared size and one byte, however
		// long the source's body.
		rc = &sizeBound{rc: rc, d: d, left: d.Size}
		return &counter{rc: rc, add: func(n int64) {
			r.mu.Lock()
			r.bytes += n
			r.mu.Unlock()
			if m.o.progress != nil {
				m.o.progress.Bytes(n)
			}
		}}, nil
	}
}

// upload is step 1 for u: the blob from the first source that serves it;
// the first failure is the one reported when none does.
func (r *runner) upload(u upload) {
	m, ctx := r.m, r.ctx
	var (
		first error
		from  string
	)
	for _, img := range u.imgs {
		err := checkCtx(ctx)
		if err == nil {
			err = m.dst.upload(ctx, u.repo, u.d, r.opener(img, u.d))
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
	r.fail(runKey("", u.d.Digest), &failure{where: m.dst.where(u.repo), op: "copy blob " + u.d.Digest.String() + " from " + from, err: first})
}

// mount is step 2 for mt: the blob mounted into its repository, failed
// with its upload when that failed.
func (r *runner) mount(mt mount) {
	m, ctx := r.m, r.ctx
	if f := r.failed(runKey("", mt.d.Digest)); f != nil {
		r.fail(runKey(m.dst.blobKey(mt.repo), mt.d.Digest), f)
		return
	}
	err := checkCtx(ctx)
	if err == nil {
		err = m.dst.mount(ctx, mt.repo, mt.from, mt.d, r.opener(mt.img, mt.d))
	}
	if err != nil {
		r.fail(runKey(m.dst.blobKey(mt.repo), mt.d.Digest), &failure{where: m.dst.where(mt.repo), op: "mount blob " + mt.d.Digest.String() + " from " + mt.from.RepositoryStr(), err: err})
	}
}

// putManifest writes w's manifest (steps 3 and 4), failed with the first
// blob or child it needs that failed.
func (r *runner) putManifest(w write) {
	m, ctx := r.m, r.ctx
	mk := runKey(w.repo.Name(), w.n.digest)
	if f := r.blobsFailed(w); f != nil {
		r.fail(mk, f)
		return
	}
	err := checkCtx(ctx)
	if err == nil {
		err = m.dst.putManifest(ctx, w.repo, w.n)
	}
	if err != nil {
		r.fail(mk, &failure{where: m.dst.where(w.repo), op: "PUT manifest " + w.n.digest.String(), err: err})
	}
}

// copyAll runs the copy (steps 1 to 4 of the package documentation) on
// one pool of m.jobs goroutines, each step as soon as the steps it needs
// are done rather than each step for every image at once: a blob's mounts
// after its upload; a manifest after the blobs it needs in its repository
// and its children there; an attachment's tag after its manifest (and,
// stored by the tag's PUT, its blobs and children); one subject's
// referrers after the tags of the attachments of the images they are
// attached to; an image's tag last, after its own manifests and every
// attachment of it (and not written when one of those failed). Ready
// steps that move no bytes go first, then the largest ready upload.
func (r *runner) copyAll() {
	g := &copyGraph{r: r}
	g.addBlobs()
	g.addWrites()
	g.addAttachmentTags()
	g.indexAttachments()
	g.addReferrers()
	g.addImageTags()
	g.s.run(r.m.jobs)
}

// subjectAt is a subject's referrers in one repository (its name).
type subjectAt struct {
	repo    string
	subject v1.Hash
}

// copyGraph is the steps of one copy and what each waits on, built by
// copyAll in the order of its methods (each uses the steps the earlier
// ones added).
type copyGraph struct {
	r *runner
	s scheduler
	// uploadAt is each blob's upload, by digest; mountAt its mounts into
	// a repository, by runKey of the repository's blob key and digest.
	uploadAt map[v1.Hash]*task
	mountAt  map[string][]*task
	// writeAt is each manifest's write, by runKey of repository and
	// digest.
	writeAt map[string]*task
	// tagIndex is each tagged image's index in plan.tags; tagAt the tag
	// steps of the attachments.
	tagIndex map[*PlannedImage]int
	tagAt    map[*PlannedImage]*task
	// attached is the attachments of each image (by ownerKey) in plan
	// order; owners the images whose attachments are a subject's
	// referrers in a repository.
	attached map[string][]*PlannedImage
	owners   map[subjectAt][]string
	// groupAt is the step writing one subject's referrers in a
	// repository.
	groupAt map[subjectAt]*task
}

// addBlobs adds the uploads, then each mount after its blob's upload.
func (g *copyGraph) addBlobs() {
	r, m := g.r, g.r.m
	g.uploadAt = map[v1.Hash]*task{}
	for _, u := range r.plan.uploads {
		t := g.s.add(func() { r.upload(u) })
		t.upload, t.size = true, u.d.Size
		g.uploadAt[u.d.Digest] = t
	}
	g.mountAt = map[string][]*task{}
	for _, mt := range r.plan.mounts {
		k := runKey(m.dst.blobKey(mt.repo), mt.d.Digest)
		g.mountAt[k] = append(g.mountAt[k], g.s.add(func() { r.mount(mt) }, g.uploadAt[mt.d.Digest]))
	}
}

// needs are the steps w waits on: its blobs' uploads and mounts into its
// repository, its children's writes there (a child missing there is
// written by a step of its own: children come first in plan.writes).
func (g *copyGraph) needs(w write) []*task {
	m := g.r.m
	var after []*task
	for _, d := range w.n.blobs {
		after = append(after, g.uploadAt[d.Digest])
		after = append(after, g.mountAt[runKey(m.dst.blobKey(w.repo), d.Digest)]...)
	}
	for _, c := range w.n.children {
		after = append(after, g.writeAt[runKey(w.repo.Name(), c.digest)])
	}
	return after
}

// addWrites adds the manifest writes, level by level, each after what it
// needs.
func (g *copyGraph) addWrites() {
	r := g.r
	g.writeAt = map[string]*task{}
	for _, level := range r.plan.writes {
		for _, w := range level {
			g.writeAt[runKey(w.repo.Name(), w.n.digest)] = g.s.add(func() { r.putManifest(w) }, g.needs(w)...)
		}
	}
}

// tagNeeds are the steps pi's tag waits on: the write of its manifest,
// or what that manifest needs when the tag's PUT stores it.
func (g *copyGraph) tagNeeds(pi *PlannedImage) []*task {
	var after []*task
	if pi.byTag {
		after = g.needs(write{repo: pi.repo, n: pi.top})
	}
	return append(after, g.writeAt[runKey(pi.repo.Name(), pi.Digest)])
}

// addAttachmentTags adds the tags of the attachments, each after its
// manifest.
func (g *copyGraph) addAttachmentTags() {
	r := g.r
	r.tagFailed = make([]*failure, len(r.plan.tags))
	g.tagIndex = map[*PlannedImage]int{}
	g.tagAt = map[*PlannedImage]*task{}
	for i, pi := range r.plan.tags {
		g.tagIndex[pi] = i
		if pi.Attachment != nil {
			g.tagAt[pi] = g.s.add(func() { r.putTag(i) }, g.tagNeeds(pi)...)
		}
	}
}

// indexAttachments fills attached and owners from the plan's images.
func (g *copyGraph) indexAttachments() {
	g.attached = map[string][]*PlannedImage{}
	g.owners = map[subjectAt][]string{}
	for _, pi := range g.r.plan.Images {
		if pi.Attachment == nil {
			continue
		}
		k := ownerKey(pi.Image)
		g.attached[k] = append(g.attached[k], pi)
		if pi.isReferrer() && pi.top != nil {
			sa := subjectAt{pi.repo.Name(), pi.Attachment.Subject}
			g.owners[sa] = append(g.owners[sa], k)
		}
	}
}

// addReferrers adds the writes of one subject's referrers in one
// repository as one step, one after the other (each updates the
// subject's listing, the tag-schema index where the registry has no
// Referrers API), the subjects side by side, after the tags of the
// attachments of the images they are attached to.
func (g *copyGraph) addReferrers() {
	r, refs := g.r, g.r.plan.referrers
	g.groupAt = map[subjectAt]*task{}
	for i := 0; i < len(refs); {
		sa := subjectAt{refs[i].repo.Name(), refs[i].subject}
		j := i
		var after []*task
		for j < len(refs) && refs[j].repo.Name() == sa.repo && refs[j].subject == sa.subject {
			after = append(after, g.needs(refs[j].write)...)
			j++
		}
		for _, k := range g.owners[sa] {
			for _, a := range g.attached[k] {
				after = append(after, g.tagAt[a])
			}
		}
		group := refs[i:j]
		g.groupAt[sa] = g.s.add(func() {
			for _, w := range group {
				r.putManifest(w.write)
			}
		}, after...)
		i = j
	}
}

// addImageTags adds the images' tags, each after everything attached to
// it, and not written when one of those failed.
func (g *copyGraph) addImageTags() {
	r, m := g.r, g.r.m
	for i, pi := range r.plan.tags {
		if pi.Attachment != nil || pi.tagAfterVerify {
			continue
		}
		after := g.tagNeeds(pi)
		as := g.attached[ownerKey(pi.Image)]
		for _, a := range as {
			after = append(after, g.tagAt[a])
			if a.isReferrer() && a.top != nil {
				after = append(after, g.groupAt[subjectAt{a.repo.Name(), a.Attachment.Subject}])
			}
			if a.top != nil {
				after = append(after, g.writeAt[runKey(a.repo.Name(), a.Digest)])
			}
		}
		g.s.add(func() {
			if d := r.blockedBy(as, g.tagIndex); d != "" {
				r.tagFailed[i] = &failure{where: m.dst.where(pi.repo), op: "PUT tag " + pi.Tag,
					err: fmt.Errorf("not written: its %s failed (above); run again, or leave the attachments out with --no-attachments", d)}
				return
			}
			r.putTag(i)
		}, after...)
	}
}

// putTag sets the tag of plan.tags[i] (an attachment's or an image's),
// failed with its manifest when that failed; a tag whose PUT stores the
// manifest fails it too.
func (r *runner) putTag(i int) {
	m, ctx := r.m, r.ctx
	pi := r.plan.tags[i]
	mk := runKey(pi.repo.Name(), pi.Digest)
	if pi.byTag {
		// The manifest is stored by this PUT: what it needs first.
		if f := r.blobsFailed(write{repo: pi.repo, n: pi.top}); f != nil {
			r.fail(mk, f)
		}
	}
	if f := r.failed(mk); f != nil {
		r.tagFailed[i] = f
		return
	}
	err := checkCtx(ctx)
	if err == nil {
		err = m.dst.tag(ctx, &pi.Image, pi.repo, pi.top)
	}
	if err != nil {
		r.tagFailed[i] = &failure{where: m.dst.where(pi.repo), op: "PUT tag " + pi.Tag, err: err}
		if pi.byTag {
			r.fail(mk, r.tagFailed[i])
		}
	}
}

// blockedBy describes the first of an image's attachments (in plan
// order) that did not get there, or is "": the image's tag is then not
// written, so that the rerun plans it again, attachments included. Every
// step of the attachments is done when it is called.
func (r *runner) blockedBy(attachments []*PlannedImage, tagIndex map[*PlannedImage]int) string {
	for _, pi := range attachments {
		bad := pi.err != nil
		if !bad && pi.top != nil {
			bad = r.failed(runKey(pi.repo.Name(), pi.Digest)) != nil
		}
		if j, ok := tagIndex[pi]; ok && r.tagFailed[j] != nil {
			bad = true
		}
		if bad {
			return pi.Attachment.describe(pi.Image)
		}
	}
	return ""
}

// verify is step 5: each image's error, by plan index: its planning
// failure, its tag's or manifest's, else a HEAD at the destination that
// does not find its digest (an image present at planning is verified
// already).
func (r *runner) verify() []*ImageError {
	m, ctx, plan := r.m, r.ctx, r.plan
	tagErr := map[*PlannedImage]*failure{}
	for i, pi := range plan.tags {
		if r.tagFailed[i] != nil {
			tagErr[pi] = r.tagFailed[i]
		}
	}
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
			if f := r.failed(runKey(pi.repo.Name(), pi.Digest)); f != nil {
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
		if pi.Tag != "" && !pi.tagAfterVerify {
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
	return errs
}

// ownerKey groups an image with its attachments.
func ownerKey(img Image) string {
	return img.Name + "\x00" + img.Source.Name() + "\x00" + img.Site
}

// blobsFailed is the failure of a blob or child manifest w needs, or nil.
func (r *runner) blobsFailed(w write) *failure {
	for _, d := range w.n.blobs {
		for _, k := range []string{runKey("", d.Digest), runKey(r.m.dst.blobKey(w.repo), d.Digest)} {
			if f := r.failed(k); f != nil {
				return f
			}
		}
	}
	for _, c := range w.n.children {
		if f := r.failed(runKey(w.repo.Name(), c.digest)); f != nil {
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
	if b.left == 0 && n > 0 && err == nil {
		// The declared size is reached: look for one byte more before
		// the last bytes are handed on, so that an oversize source is
		// refused before the destination has the whole declared body
		// (and answers for it, which would race this error).
		var one [1]byte
		m, perr := b.rc.Read(one[:])
		switch {
		case m > 0:
			b.left = -1
			return n - 1, &OversizeBlobError{Digest: b.d.Digest, Size: b.d.Size}
		case perr != nil:
			return n, perr
		}
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
		op := "verify signatures of " + pi.Destination + " under " + s.Policy
		if pi.tagAfterVerify {
			op += " (tag " + pi.Tag + " not written)"
		}
		errs[jobs[k].i] = (&failure{where: pi.repo.RegistryStr(), op: op, err: s.Err}).imageError(pi.Image, m.o.resolver)
	}
	return out
}

// tagVerified writes the tags held back until their images verified
// (tagAfterVerify): each image of plan.tags under a verify policy whose
// copy, attachments and signature checks succeeded (errs[i] nil) gets its
// tag, then a HEAD of the tag must give its digest; a failure there is
// the image's error. An image that failed gets no tag: a tag the
// destination held keeps its digest.
func (r *runner) tagVerified(errs []*ImageError) {
	m, plan := r.m, r.plan
	index := map[*PlannedImage]int{}
	for i, pi := range plan.Images {
		index[pi] = i
	}
	attached := map[string][]*PlannedImage{}
	for _, pi := range plan.Images {
		if pi.Attachment != nil {
			k := ownerKey(pi.Image)
			attached[k] = append(attached[k], pi)
		}
	}
	tagIndex := map[*PlannedImage]int{}
	for i, pi := range plan.tags {
		tagIndex[pi] = i
	}
	var todo []int
	for i, pi := range plan.tags {
		if pi.tagAfterVerify && errs[index[pi]] == nil {
			todo = append(todo, i)
		}
	}
	each(m.jobs, len(todo), func(k int) {
		i := todo[k]
		pi := plan.tags[i]
		fail := func(f *failure) { errs[index[pi]] = f.imageError(pi.Image, m.o.resolver) }
		if d := r.blockedBy(attached[ownerKey(pi.Image)], tagIndex); d != "" {
			fail(&failure{where: m.dst.where(pi.repo), op: "PUT tag " + pi.Tag,
				err: fmt.Errorf("not written: its %s failed (above); run again, or leave the attachments out with --no-attachments", d)})
			return
		}
		r.putTag(i)
		if f := r.tagFailed[i]; f != nil {
			fail(f)
			return
		}
		got, ok, err := m.dst.head(r.ctx, &pi.Image, pi.repo, pi.Tag)
		switch {
		case err != nil:
			fail(&failure{where: m.dst.where(pi.repo), op: "verify: HEAD manifest " + pi.Tag, err: err})
		case !ok:
			fail(&failure{where: m.dst.where(pi.repo), op: "verify: HEAD manifest " + pi.Tag, err: errNotThere})
		case got != pi.Digest:
			fail(&failure{where: m.dst.where(pi.repo), op: "verify: HEAD manifest " + pi.Tag, err: &digestMismatch{got: got, want: pi.Digest}})
		}
	})
}
