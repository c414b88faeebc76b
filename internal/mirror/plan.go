package mirror

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// maxDepth bounds how deeply indexes may nest (an index of indexes is
// legal; a cycle is not possible with content addresses, but a hostile
// registry could serve an endless chain).
const maxDepth = 4

// node is one manifest read from the source.
type node struct {
	digest   v1.Hash
	mt       types.MediaType
	raw      []byte
	children []*node
	// blobs are the config and the distributable layers of an image
	// manifest; empty for an index.
	blobs  []v1.Descriptor
	height int // 0 for an image manifest, 1 + the children's for an index
}

// PlannedImage is one image of a plan.
type PlannedImage struct {
	Image
	// Destination is where the image goes: the site reference
	// ("host/prefix/docker.io/library/busybox:1.31.1@sha256:…") or the
	// bundle.
	Destination string `json:"destination"`
	// Present is true when the destination already holds the image (its
	// tag, or its digest when it has no tag, resolves to Digest).
	Present bool `json:"present"`
	// Manifests is the number of manifests to write, the tag apart.
	Manifests int `json:"manifests"`
	// Blobs and Bytes are the blobs of this image the copy uploads and
	// their bytes; a blob shared with other images is counted in each
	// (Transfer.Bytes counts it once).
	Blobs int   `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Policies are the fields of the verify policies its signatures are
	// checked under at the destination after the copy (WithVerify);
	// empty for none, and for an attachment.
	Policies []string `json:"policies,omitempty"`
	repo     name.Repository
	top      *node
	uploads  map[v1.Hash]int64
	err      *ImageError
	// relinked is a referrer stored at the destination but missing from
	// its subject's referrers listing there: written again.
	relinked bool
	// byTag is an image whose own manifest is stored by its tag's PUT
	// (a registry destination), not by digest first.
	byTag bool
	// tagAfterVerify is an image under a verify policy (WithVerify): its
	// manifests are pushed by digest, its signatures verified there, and
	// only then is its tag written (Run), so that an image that does not
	// verify leaves no new tag and an existing tag its digest.
	tagAfterVerify bool
}

// Transfer is what a run will do: per image, present or missing, and the
// unique blobs to move.
type Transfer struct {
	// Images are every image asked for, sorted by name and digest.
	Images []*PlannedImage
	// Blobs and Bytes are the unique blobs to upload and their bytes
	// (compressed, as stored): a blob shared by several images, or
	// needed in several repositories, counts once.
	Blobs int
	Bytes int64
	// Mounts are the cross-repository mounts planned (no bytes move).
	Mounts int
	// Manifests are the manifests to write, tags apart.
	Manifests int
	// OmittedBlobs and OmittedBytes are the unique blobs a delta bundle
	// leaves out, and their bytes: the site holds them (WithHave).
	OmittedBlobs int
	OmittedBytes int64
	// Errors are the images that could not be planned (source or
	// destination unreachable, an image missing from the source).
	Errors Errors

	// Attachments counts the attachments found (WithAttachments), and
	// AttachmentsPresent those the destination already holds;
	// AttachmentBlobs and AttachmentBytes are the unique blobs of the
	// attachments to upload and their bytes (within Blobs and Bytes).
	Attachments        int
	AttachmentsPresent int
	AttachmentBlobs    int
	AttachmentBytes    int64

	uploads []upload
	mounts  []mount
	writes  [][]write // by height: children first
	tags    []*PlannedImage
	// referrers are written after the tags, by repository and subject.
	referrers []referrerWrite
}

// referrerWrite is a referrer's manifest to write, with its subject.
type referrerWrite struct {
	write
	subject v1.Hash
}

// countAttachments fills the plan's attachment counts.
func (p *Transfer) countAttachments() {
	seen := map[v1.Hash]bool{}
	for _, pi := range p.Images {
		if pi.Attachment == nil || pi.err != nil {
			continue
		}
		p.Attachments++
		if pi.Present {
			p.AttachmentsPresent++
		}
		for h, size := range pi.uploads {
			if !seen[h] {
				seen[h] = true
				p.AttachmentBytes, _ = addSize(p.AttachmentBytes, size)
			}
		}
	}
	p.AttachmentBlobs = len(seen)
}

// sortPlanned sorts images by name; an image before its attachments, and
// those by subject, kind and digest; then by digest, tag and site.
func sortPlanned(images []*PlannedImage) {
	sort.SliceStable(images, func(i, j int) bool {
		a, b := images[i], images[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if (a.Attachment == nil) != (b.Attachment == nil) {
			return a.Attachment == nil
		}
		if a.Attachment != nil {
			if a.Attachment.Subject != b.Attachment.Subject {
				return a.Attachment.Subject.String() < b.Attachment.Subject.String()
			}
			if a.Attachment.Kind != b.Attachment.Kind {
				return a.Attachment.Kind < b.Attachment.Kind
			}
		}
		if a.Digest != b.Digest {
			return a.Digest.String() < b.Digest.String()
		}
		if a.Tag != b.Tag {
			return a.Tag < b.Tag
		}
		return a.Site < b.Site
	})
}

type upload struct {
	d    v1.Descriptor
	repo name.Repository
	// imgs are images whose sources hold the blob, one per source
	// repository: the first is read, the next ones when it fails.
	imgs []*PlannedImage
}

type mount struct {
	d          v1.Descriptor
	repo, from name.Repository
	img        *PlannedImage
}

type write struct {
	repo name.Repository
	n    *node
}

// Missing counts the images the destination lacks (failed ones apart).
func (p *Transfer) Missing() int {
	n := 0
	for _, pi := range p.Images {
		if !pi.Present && pi.err == nil {
			n++
		}
	}
	return n
}

// UniqueBytes is the number of unique blobs and their bytes to upload for
// the images whose names are in names: a blob shared by several of them
// counts once.
func (p *Transfer) UniqueBytes(names map[string]bool) (int, int64) {
	seen := map[v1.Hash]bool{}
	var bytes int64
	for _, pi := range p.Images {
		if !names[pi.Name] {
			continue
		}
		for h, size := range pi.uploads {
			if !seen[h] {
				seen[h] = true
				bytes += size
			}
		}
	}
	return len(seen), bytes
}

// Plan HEADs every image at the destination and reads what is missing from
// the source, as the package documentation says. An image that cannot be
// planned is in Transfer.Errors and left out of the copy; the error returned is
// only for a run that cannot start (a canceled context).
func (m *Mirror) Plan(ctx context.Context, images []Image) (*Transfer, error) {
	pl := &planner{m: m, ctx: ctx, p: &Transfer{}, seen: map[string]bool{}, nodes: map[v1.Hash]*node{}}
	_, pl.toRegistry = m.dst.(*registrySink)
	if err := pl.selectImages(images); err != nil {
		return nil, err
	}
	// Step 1: HEAD each image at the destination; read the missing ones'
	// manifests from the source.
	each(m.jobs, len(pl.p.Images), func(i int) { pl.prepare(pl.p.Images[i]) })
	// Step 1b: what is attached to each image and its children, planned
	// like the images (WithAttachments).
	if m.o.attachments {
		pl.addAttachments()
	}
	// A delta bundle: the blobs the site holds, from the images the
	// site lock pins.
	if _, ok := m.dst.(*layoutSink); ok && len(m.o.have) > 0 {
		pl.omit = m.siteBlobs(ctx, &pl.mu, pl.nodes)
	}
	// Step 2: which manifests each destination repository lacks.
	pl.presentManifests()
	// Step 3: the manifests to write and the blobs they need, per
	// repository.
	pl.collectNeeds()
	// Step 4: HEAD each blob in each repository that needs it.
	pl.headBlobs()
	// Step 5: upload each blob once where no repository has it, mount it
	// everywhere else it is needed.
	if err := pl.placeBlobs(); err != nil {
		return pl.p, err
	}
	pl.imageUploads()
	pl.orderWrites()
	if err := checkCtx(ctx); err != nil {
		return pl.p, err
	}
	return pl.p, nil
}

// planner is the state one Plan shares between its steps.
type planner struct {
	m   *Mirror
	ctx context.Context
	p   *Transfer
	// seen are the identities of the images planned (imageIdentity, with
	// the digest for an image that is no attachment).
	seen map[string]bool
	// mu guards nodes, the manifests read, by digest, and the step 2
	// maps while its HEADs run.
	mu    sync.Mutex
	nodes map[v1.Hash]*node
	// omit are the blobs a delta bundle leaves out, with the site
	// reference that holds each.
	omit       map[v1.Hash]string
	toRegistry bool
	// manifestAt says, per repository and manifest, whether the
	// destination holds it (step 2).
	manifestAt map[repoNode]bool
	// needs are the blobs the manifests to write need, writes those
	// manifests and byTag the ones a tag's PUT stores (step 3).
	needs  map[v1.Hash]*blobNeed
	writes map[repoNode]write
	byTag  map[repoNode]bool
	// pairs are every blob in every scope that needs it, sorted, with
	// whether the destination holds it there or could not say (step 4).
	pairs   []blobAtKey
	present []bool
	blobErr []*failure
	// omitted are the blobs a delta bundle leaves out (step 5).
	omitted map[v1.Hash]bool
}

// repoNode is a manifest in a destination repository.
type repoNode struct {
	repo string
	h    v1.Hash
}

// blobNeed is a blob the manifests to write need: the repositories that
// need it and an image of each, by sink blob key.
type blobNeed struct {
	d     v1.Descriptor
	repos map[string]name.Repository
	imgs  map[string]*PlannedImage
}

// selectImages puts images in the transfer once each (attachments only
// WithAttachments), with the verify policies of each, sorted. Errors: a
// bundle that cannot take them (layoutSink.check).
func (pl *planner) selectImages(images []Image) error {
	for _, img := range images {
		if img.Attachment != nil && !pl.m.o.attachments {
			continue
		}
		id := imageIdentity(img)
		if img.Attachment == nil {
			id += "\x00" + img.Digest.String()
		}
		if pl.seen[id] {
			continue
		}
		pl.seen[id] = true
		pi := &PlannedImage{Image: img}
		if img.Attachment == nil {
			for _, pol := range pl.m.o.verify[img.Name] {
				pi.Policies = append(pi.Policies, pol.At)
			}
		}
		pl.p.Images = append(pl.p.Images, pi)
	}
	sortPlanned(pl.p.Images)
	if ls, ok := pl.m.dst.(*layoutSink); ok {
		return ls.check(pl.p.Images)
	}
	return nil
}

// prepare is step 1 for pi: HEAD it at the destination and, when it is
// missing, read its manifests from the source (pi.top). A failure is
// pi's error.
func (pl *planner) prepare(pi *PlannedImage) {
	m, ctx := pl.m, pl.ctx
	if err := checkCtx(ctx); err != nil {
		pi.err = (&failure{op: "plan", err: err}).imageError(pi.Image, m.o.resolver)
		return
	}
	repo, err := m.dst.repo(&pi.Image)
	if err != nil {
		pi.err = (&failure{op: "destination", err: err}).imageError(pi.Image, m.o.resolver)
		return
	}
	pi.repo = repo
	pi.Destination = m.dst.reference(&pi.Image, repo)
	id := pi.Digest.String()
	if pi.Tag != "" {
		id = pi.Tag
	}
	got, ok, err := m.dst.head(ctx, &pi.Image, repo, id)
	if err != nil {
		pi.err = (&failure{where: m.dst.where(repo), op: "HEAD manifest " + id, err: err}).imageError(pi.Image, m.o.resolver)
		return
	}
	if ok && got == pi.Digest {
		pi.Present = true
		return
	}
	top, f := m.read(ctx, &pi.Image, pi.Digest, &pl.mu, pl.nodes, 0, m.newBudget())
	if f != nil {
		pi.err = f.imageError(pi.Image, m.o.resolver)
		return
	}
	pi.top = top
}

// addAttachments is step 1b: the attachments of the images planned and
// their children (Mirror.discover), each prepared as an image, then the
// referrers relinked.
func (pl *planner) addAttachments() {
	var added []*PlannedImage
	for _, img := range pl.m.discover(pl.ctx, pl.p.Images) {
		id := imageIdentity(img)
		if pl.seen[id] {
			continue
		}
		pl.seen[id] = true
		added = append(added, &PlannedImage{Image: img})
	}
	each(pl.m.jobs, len(added), func(i int) { pl.prepare(added[i]) })
	pl.p.Images = append(pl.p.Images, added...)
	sortPlanned(pl.p.Images)
	pl.m.relink(pl.ctx, pl.p.Images, &pl.mu, pl.nodes)
}

// presentManifests is step 2: which manifests each destination
// repository holds (manifestAt), asked level by level from the top: a
// present manifest means its children are present too. A HEAD that fails
// is the image's error.
func (pl *planner) presentManifests() {
	m := pl.m
	pl.manifestAt = map[repoNode]bool{}
	asked := map[repoNode]bool{}
	headErr := map[repoNode]*failure{}
	type job struct {
		pi *PlannedImage
		n  *node
	}
	type queued struct {
		pi *PlannedImage
		h  v1.Hash
	}
	enqueued := map[queued]bool{}
	var level []job
	for _, pi := range pl.p.Images {
		if pi.top != nil {
			level = append(level, job{pi, pi.top})
			enqueued[queued{pi, pi.top.digest}] = true
		}
	}
	for top := true; len(level) > 0; top = false {
		var todo []job
		for _, j := range level {
			k := repoNode{j.pi.repo.Name(), j.n.digest}
			if !asked[k] {
				asked[k] = true
				if top && pl.toRegistry {
					// A missing image's own manifest at a registry: step
					// 1's HEAD of its digest found it absent, or it is
					// written by its tag's PUT whether it is there or
					// not (its blobs are HEADed below either way): no
					// second HEAD.
					pl.manifestAt[k] = false
					continue
				}
				todo = append(todo, j)
			}
		}
		each(m.jobs, len(todo), func(i int) {
			j := todo[i]
			k := repoNode{j.pi.repo.Name(), j.n.digest}
			_, ok, err := m.dst.head(pl.ctx, &j.pi.Image, j.pi.repo, j.n.digest.String())
			pl.mu.Lock()
			defer pl.mu.Unlock()
			if err != nil {
				headErr[k] = &failure{where: m.dst.where(j.pi.repo), op: "HEAD manifest " + j.n.digest.String(), err: err}
				return
			}
			pl.manifestAt[k] = ok
		})
		var next []job
		for _, j := range level {
			k := repoNode{j.pi.repo.Name(), j.n.digest}
			if f := headErr[k]; f != nil {
				if j.pi.err == nil {
					j.pi.err = f.imageError(j.pi.Image, m.o.resolver)
				}
				continue
			}
			if pl.manifestAt[k] {
				continue
			}
			for _, c := range j.n.children {
				// A child several indexes of the image list is asked
				// once: the levels hold an image's distinct
				// manifests, not its paths (an index graph whose
				// levels share children has exponentially many).
				if q := (queued{j.pi, c.digest}); !enqueued[q] {
					enqueued[q] = true
					next = append(next, job{j.pi, c})
				}
			}
		}
		level = next
	}
}

// missing reports whether pi must write its manifest n: the destination
// lacks it, or n is a relinked referrer's top.
func (pl *planner) missing(pi *PlannedImage, n *node) bool {
	return !pl.manifestAt[repoNode{pi.repo.Name(), n.digest}] || (pi.relinked && n == pi.top)
}

// collectNeeds is step 3: walking each image's missing manifests, the
// manifests to write (writes, the referrers, the tags a PUT stores) and
// the blobs they need, per repository.
func (pl *planner) collectNeeds() {
	pl.needs = map[v1.Hash]*blobNeed{}
	pl.writes = map[repoNode]write{}
	pl.byTag = map[repoNode]bool{}
	referrerAt := map[repoNode]bool{}
	for _, pi := range pl.p.Images {
		if pi.top == nil || pi.err != nil {
			continue
		}
		visited := map[*node]bool{}
		var walk func(n *node)
		walk = func(n *node) {
			k := repoNode{pi.repo.Name(), n.digest}
			if !pl.missing(pi, n) || visited[n] {
				return
			}
			visited[n] = true
			switch {
			case pi.isReferrer() && n == pi.top:
				// Written after the attachments' tags, one subject's
				// at a time: each write updates the subject's
				// referrers list.
				if !referrerAt[k] {
					referrerAt[k] = true
					pl.p.referrers = append(pl.p.referrers, referrerWrite{write: write{repo: pi.repo, n: n}, subject: pi.Attachment.Subject})
				}
			case pl.toRegistry && n == pi.top && pi.Tag != "" && len(pl.m.o.verify[pi.Name]) == 0:
				// Stored by its tag's PUT (step 4 of Run): a PUT by tag
				// stores the manifest and sets the tag in one request.
				pi.byTag = true
				pl.byTag[k] = true
			default:
				if _, ok := pl.writes[k]; !ok {
					pl.writes[k] = write{repo: pi.repo, n: n}
				}
			}
			pi.Manifests++
			for _, c := range n.children {
				walk(c)
			}
			for _, d := range n.blobs {
				b := pl.needs[d.Digest]
				if b == nil {
					b = &blobNeed{d: d, repos: map[string]name.Repository{}, imgs: map[string]*PlannedImage{}}
					pl.needs[d.Digest] = b
				}
				key := pl.m.dst.blobKey(pi.repo)
				if _, ok := b.repos[key]; !ok {
					b.repos[key], b.imgs[key] = pi.repo, pi
				}
			}
		}
		walk(pi.top)
	}
}

// headBlobs is step 4: HEAD each blob in each scope that needs it, the
// pairs sorted by digest then scope.
func (pl *planner) headBlobs() {
	for h, b := range pl.needs {
		for key := range b.repos {
			pl.pairs = append(pl.pairs, blobAtKey{h, key})
		}
	}
	pairs := pl.pairs
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].h != pairs[j].h {
			return pairs[i].h.String() < pairs[j].h.String()
		}
		return pairs[i].key < pairs[j].key
	})
	pl.present = make([]bool, len(pairs))
	pl.blobErr = make([]*failure, len(pairs))
	each(pl.m.jobs, len(pairs), func(i int) {
		b := pl.needs[pairs[i].h]
		repo := b.repos[pairs[i].key]
		ok, err := pl.m.dst.hasBlob(pl.ctx, repo, pairs[i].h)
		if err != nil {
			pl.blobErr[i] = &failure{where: pl.m.dst.where(repo), op: "HEAD blob " + pairs[i].h.String(), err: err}
			return
		}
		pl.present[i] = ok
	})
}

// blobRuns calls f with each run [start, end) of pl.pairs that holds one
// blob, in order.
func (pl *planner) blobRuns(f func(start, end int) error) error {
	for start := 0; start < len(pl.pairs); {
		end := start
		for end < len(pl.pairs) && pl.pairs[end].h == pl.pairs[start].h {
			end++
		}
		if err := f(start, end); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// placeBlobs is step 5: upload each blob once where no repository has
// it, mount it everywhere else it is needed. First, the blobs no
// repository of the run has: another repository of the registry may
// (Mirror.elsewhere). Errors: the bytes to move overflow.
func (pl *planner) placeBlobs() error {
	pl.omitted = map[v1.Hash]bool{}
	nowhere := map[v1.Hash][]mount{}
	pl.blobRuns(func(start, end int) error {
		b := pl.needs[pl.pairs[start].h]
		held := false
		for i := start; i < end; i++ {
			held = held || pl.present[i]
		}
		if !held && pl.omit[b.d.Digest] == "" && !pl.m.leftOut(b.d.Digest, pl.pairs[start:end], b.imgs) {
			for i := start; i < end; i++ {
				if pl.blobErr[i] == nil {
					nowhere[b.d.Digest] = append(nowhere[b.d.Digest], mount{d: b.d, repo: b.repos[pl.pairs[i].key], img: b.imgs[pl.pairs[i].key]})
				}
			}
		}
		return nil
	})
	heldElsewhere := pl.m.elsewhere(pl.ctx, nowhere)
	var checks []omitCheck
	err := pl.blobRuns(func(start, end int) error {
		return pl.placeBlob(start, end, heldElsewhere, &checks)
	})
	if err != nil {
		return err
	}
	pl.m.checkLeftOut(pl.ctx, pl.p, checks)
	// The largest blobs first (then by digest): the workers then finish
	// together instead of a few large uploads running alone at the end.
	p := pl.p
	sort.SliceStable(p.uploads, func(i, j int) bool {
		if p.uploads[i].d.Size != p.uploads[j].d.Size {
			return p.uploads[i].d.Size > p.uploads[j].d.Size
		}
		return p.uploads[i].d.Digest.String() < p.uploads[j].d.Digest.String()
	})
	return nil
}

// placeBlob decides, for the blob of pairs [start, end), where each scope
// that lacks it gets it: left out of a delta bundle (the site holds it),
// mounted from where a pushed delta bundle says the site holds it (added
// to checks), mounted from another repository that holds it
// (heldElsewhere), or uploaded once and mounted from there. A HEAD that
// failed is its image's error. Errors: the bytes to move overflow.
func (pl *planner) placeBlob(start, end int, heldElsewhere map[v1.Hash]name.Repository, checks *[]omitCheck) error {
	p, pairs := pl.p, pl.pairs
	b := pl.needs[pairs[start].h]
	var have *blobAtKey
	for i := start; i < end; i++ {
		if pl.blobErr[i] != nil {
			pi := b.imgs[pairs[i].key]
			if pi.err == nil {
				pi.err = pl.blobErr[i].imageError(pi.Image, pl.m.o.resolver)
			}
		}
		if pl.present[i] && have == nil {
			have = &pairs[i]
		}
	}
	// lacking is each scope of the run that lacks the blob and could say so.
	lacking := func(i int) bool { return !pl.present[i] && pl.blobErr[i] == nil }
	if have == nil && pl.omit[b.d.Digest] != "" {
		// A delta bundle leaves it out: the site holds it.
		pl.omitted[b.d.Digest] = true
		p.OmittedBlobs++
		p.OmittedBytes, _ = addSize(p.OmittedBytes, b.d.Size)
		return nil
	}
	if have == nil && pl.m.leftOut(b.d.Digest, pairs[start:end], b.imgs) {
		// Left out of the delta bundle being pushed: mounted from
		// where the bundle says the site holds it, checked first.
		for i := start; i < end; i++ {
			if lacking(i) {
				*checks = append(*checks, omitCheck{d: b.d, repo: b.repos[pairs[i].key], pi: b.imgs[pairs[i].key]})
			}
		}
		return nil
	}
	if from, ok := heldElsewhere[b.d.Digest]; have == nil && ok {
		// Another repository of the registry holds it: mounted
		// into each repository of the run that needs it.
		for i := start; i < end; i++ {
			if lacking(i) {
				p.mounts = append(p.mounts, mount{d: b.d, repo: b.repos[pairs[i].key], from: from, img: b.imgs[pairs[i].key]})
				p.Mounts++
			}
		}
		return nil
	}
	if have == nil {
		first := pairs[start]
		u := upload{d: b.d, repo: b.repos[first.key], imgs: []*PlannedImage{b.imgs[first.key]}}
		srcs := map[string]bool{u.imgs[0].Source.Name(): true}
		for i := start; i < end; i++ {
			if pi := b.imgs[pairs[i].key]; !srcs[pi.Source.Name()] {
				srcs[pi.Source.Name()] = true
				u.imgs = append(u.imgs, pi)
			}
		}
		p.uploads = append(p.uploads, u)
		p.Blobs++
		var ok bool
		if p.Bytes, ok = addSize(p.Bytes, b.d.Size); !ok {
			return fmt.Errorf("the blobs to move add up to more than %d bytes", int64(math.MaxInt64))
		}
		have = &first
	}
	for i := start; i < end; i++ {
		if pairs[i] != *have && lacking(i) {
			p.mounts = append(p.mounts, mount{d: b.d, repo: b.repos[pairs[i].key], from: b.repos[have.key], img: b.imgs[pairs[i].key]})
			p.Mounts++
		}
	}
	return nil
}

// imageUploads records, per image, the uploads its missing manifests need
// (Blobs, Bytes) and the blobs a delta bundle leaves out of them
// (Omitted).
func (pl *planner) imageUploads() {
	uploaded := map[v1.Hash]bool{}
	for _, u := range pl.p.uploads {
		uploaded[u.d.Digest] = true
	}
	for _, pi := range pl.p.Images {
		if pi.top == nil || pi.err != nil {
			continue
		}
		pi.uploads = map[v1.Hash]int64{}
		visited := map[*node]bool{}
		var walk func(n *node)
		walk = func(n *node) {
			if !pl.missing(pi, n) || visited[n] {
				return
			}
			visited[n] = true
			for _, c := range n.children {
				walk(c)
			}
			for _, d := range n.blobs {
				if uploaded[d.Digest] {
					pi.uploads[d.Digest] = d.Size
				}
				if pl.omitted[d.Digest] {
					if pi.Omitted == nil {
						pi.Omitted = map[v1.Hash]string{}
					}
					pi.Omitted[d.Digest] = pl.omit[d.Digest]
				}
			}
		}
		walk(pi.top)
		pi.Blobs = len(pi.uploads)
		for _, s := range pi.uploads {
			pi.Bytes, _ = addSize(pi.Bytes, s)
		}
	}
}

// orderWrites orders the manifest writes by height, children first, each
// level sorted, and the referrers by repository, subject and digest;
// counts the manifests; lists the tags to set and the images' errors,
// sorted.
func (pl *planner) orderWrites() {
	p := pl.p
	var ws []write
	for _, w := range pl.writes {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].n.height != ws[j].n.height {
			return ws[i].n.height < ws[j].n.height
		}
		if ws[i].repo.Name() != ws[j].repo.Name() {
			return ws[i].repo.Name() < ws[j].repo.Name()
		}
		return ws[i].n.digest.String() < ws[j].n.digest.String()
	})
	for _, w := range ws {
		for len(p.writes) <= w.n.height {
			p.writes = append(p.writes, nil)
		}
		p.writes[w.n.height] = append(p.writes[w.n.height], w)
	}
	sort.Slice(p.referrers, func(i, j int) bool {
		a, b := p.referrers[i], p.referrers[j]
		if a.repo.Name() != b.repo.Name() {
			return a.repo.Name() < b.repo.Name()
		}
		if a.subject != b.subject {
			return a.subject.String() < b.subject.String()
		}
		return a.n.digest.String() < b.n.digest.String()
	})
	p.Manifests = len(ws) + len(p.referrers)
	for k := range pl.byTag {
		if _, ok := pl.writes[k]; !ok {
			p.Manifests++
		}
	}
	p.countAttachments()
	for _, pi := range p.Images {
		if pi.err != nil {
			p.Errors = append(p.Errors, pi.err)
			continue
		}
		if !pi.Present && pi.Tag != "" {
			pi.tagAfterVerify = pi.Attachment == nil && len(pl.m.o.verify[pi.Name]) > 0
			p.tags = append(p.tags, pi)
		}
	}
	p.Errors.Sorted()
}

// blobAtKey is a blob in the scope (sink.blobKey) where its presence
// counts.
type blobAtKey struct {
	h   v1.Hash
	key string
}

// MaxManifestsPerImage is the default bound on the distinct manifests
// read for one image (its index, children and their children): 10,000,
// ten times an index at registry.MaxIndexChildren; the operator sets
// another with WithMaxManifests (mirror --max-manifests). A manifest
// listed again (by the same index or another) is read once and walked
// once.
const MaxManifestsPerImage = 10_000

// budget counts the manifests still to be read for one image.
type budget struct {
	left atomic.Int64
	max  int64
}

// newBudget is the manifest budget of one image: WithMaxManifests's
// bound, else MaxManifestsPerImage.
func (m *Mirror) newBudget() *budget {
	b := &budget{max: int64(m.maxManifests())}
	b.left.Store(b.max)
	return b
}

func (m *Mirror) maxManifests() int {
	if m.o.maxManifests > 0 {
		return m.o.maxManifests
	}
	return MaxManifestsPerImage
}

func (b *budget) take() bool { return b.left.Add(-1) >= 0 }

// read reads manifest h of img and, for an index, every child, sharing
// nodes between images (a manifest is its digest's content wherever it is
// read): each distinct manifest is read once, at most MaxManifestsPerImage
// for one image, and an index's children at most maxChildren.
func (m *Mirror) read(ctx context.Context, img *Image, h v1.Hash, mu *sync.Mutex, nodes map[v1.Hash]*node, depth int, b *budget) (*node, *failure) {
	mu.Lock()
	n := nodes[h]
	mu.Unlock()
	if n != nil {
		return n, nil
	}
	if depth > maxDepth {
		return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("indexes nested deeper than %d", maxDepth)}
	}
	if !b.take() {
		return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("the image has more than %d distinct manifests (--max-manifests)", b.max)}
	}
	raw, mt, err := m.src.manifest(ctx, img, h)
	if err != nil {
		return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: err}
	}
	n = &node{digest: h, mt: mt, raw: raw}
	switch {
	case mt.IsIndex():
		im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("index: %w", err)}
		}
		if len(im.Manifests) > maxChildren {
			return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("the index lists %d child manifests, more than the %d stowage reads", len(im.Manifests), maxChildren)}
		}
		for _, c := range im.Manifests {
			child, f := m.read(ctx, img, c.Digest, mu, nodes, depth+1, b)
			if f != nil {
				return nil, f
			}
			n.children = append(n.children, child)
			n.height = max(n.height, child.height+1)
		}
	case mt.IsImage():
		man, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("manifest: %w", err)}
		}
		n.blobs = append(n.blobs, man.Config)
		for _, l := range man.Layers {
			// Foreign layers (Windows base layers) are not stored
			// by registries: they are never copied.
			if l.MediaType.IsDistributable() {
				n.blobs = append(n.blobs, l)
			}
		}
		var total int64
		for _, d := range n.blobs {
			var ok bool
			if total, ok = addSize(total, d.Size); !ok {
				return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("blob %s: size %d is negative or the sizes add up past %d bytes", d.Digest, d.Size, int64(math.MaxInt64))}
			}
		}
	default:
		return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("media type %q is neither an image manifest nor an index (Docker schema 1 has no stable digest; push the image again with a current client)", mt)}
	}
	mu.Lock()
	if prev := nodes[h]; prev != nil {
		n = prev
	} else {
		nodes[h] = n
	}
	mu.Unlock()
	return n, nil
}
