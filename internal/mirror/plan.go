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
	p := &Transfer{}
	seen := map[string]bool{}
	for _, img := range images {
		if img.Attachment != nil && !m.o.attachments {
			continue
		}
		id := imageIdentity(img)
		if img.Attachment == nil {
			id += "\x00" + img.Digest.String()
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		pi := &PlannedImage{Image: img}
		if img.Attachment == nil {
			for _, pol := range m.o.verify[img.Name] {
				pi.Policies = append(pi.Policies, pol.At)
			}
		}
		p.Images = append(p.Images, pi)
	}
	sortPlanned(p.Images)
	if ls, ok := m.dst.(*layoutSink); ok {
		if err := ls.check(p.Images); err != nil {
			return nil, err
		}
	}
	var (
		mu    sync.Mutex
		nodes = map[v1.Hash]*node{}
	)
	// Step 1: HEAD each image at the destination; read the missing ones'
	// manifests from the source.
	prepare := func(pi *PlannedImage) {
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
		top, f := m.read(ctx, &pi.Image, pi.Digest, &mu, nodes, 0, newBudget())
		if f != nil {
			pi.err = f.imageError(pi.Image, m.o.resolver)
			return
		}
		pi.top = top
	}
	each(m.jobs, len(p.Images), func(i int) { prepare(p.Images[i]) })
	// Step 1b: what is attached to each image and its children, planned
	// like the images (WithAttachments).
	if m.o.attachments {
		var added []*PlannedImage
		for _, img := range m.discover(ctx, p.Images) {
			id := imageIdentity(img)
			if seen[id] {
				continue
			}
			seen[id] = true
			added = append(added, &PlannedImage{Image: img})
		}
		each(m.jobs, len(added), func(i int) { prepare(added[i]) })
		p.Images = append(p.Images, added...)
		sortPlanned(p.Images)
		m.relink(ctx, p.Images, &mu, nodes)
	}
	// A delta bundle: the blobs the site holds, from the images the
	// site lock pins.
	var omit map[v1.Hash]string
	if _, ok := m.dst.(*layoutSink); ok && len(m.o.have) > 0 {
		omit = m.siteBlobs(ctx, &mu, nodes)
	}
	// Step 2: which manifests each destination repository lacks.
	type repoNode struct {
		repo string
		h    v1.Hash
	}
	var (
		manifestAt = map[repoNode]bool{} // present at the destination
		asked      = map[repoNode]bool{}
		headErr    = map[repoNode]*failure{}
	)
	// Ask level by level from the top: a present manifest means its
	// children are present too.
	type job struct {
		pi *PlannedImage
		n  *node
	}
	var level []job
	for _, pi := range p.Images {
		if pi.top != nil {
			level = append(level, job{pi, pi.top})
		}
	}
	_, toRegistry := m.dst.(*registrySink)
	for top := true; len(level) > 0; top = false {
		var todo []job
		for _, j := range level {
			k := repoNode{j.pi.repo.Name(), j.n.digest}
			if !asked[k] {
				asked[k] = true
				if top && toRegistry {
					// A missing image's own manifest at a registry: step
					// 1's HEAD of its digest found it absent, or it is
					// written by its tag's PUT whether it is there or
					// not (its blobs are HEADed below either way): no
					// second HEAD.
					manifestAt[k] = false
					continue
				}
				todo = append(todo, j)
			}
		}
		each(m.jobs, len(todo), func(i int) {
			j := todo[i]
			k := repoNode{j.pi.repo.Name(), j.n.digest}
			_, ok, err := m.dst.head(ctx, &j.pi.Image, j.pi.repo, j.n.digest.String())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				headErr[k] = &failure{where: m.dst.where(j.pi.repo), op: "HEAD manifest " + j.n.digest.String(), err: err}
				return
			}
			manifestAt[k] = ok
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
			if manifestAt[k] {
				continue
			}
			for _, c := range j.n.children {
				next = append(next, job{j.pi, c})
			}
		}
		level = next
	}
	// Step 3: the manifests to write and the blobs they need, per
	// repository.
	type blobNeed struct {
		d     v1.Descriptor
		repos map[string]name.Repository // by sink blob key
		imgs  map[string]*PlannedImage   // an image per blob key
	}
	needs := map[v1.Hash]*blobNeed{}
	writes := map[repoNode]write{}
	referrerAt := map[repoNode]bool{}
	byTag := map[repoNode]bool{}
	for _, pi := range p.Images {
		if pi.top == nil || pi.err != nil {
			continue
		}
		visited := map[*node]bool{}
		var walk func(n *node)
		walk = func(n *node) {
			k := repoNode{pi.repo.Name(), n.digest}
			if (manifestAt[k] && !(pi.relinked && n == pi.top)) || visited[n] {
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
					p.referrers = append(p.referrers, referrerWrite{write: write{repo: pi.repo, n: n}, subject: pi.Attachment.Subject})
				}
			case toRegistry && n == pi.top && pi.Tag != "":
				// Stored by its tag's PUT (step 4 of Run): a PUT by tag
				// stores the manifest and sets the tag in one request.
				pi.byTag = true
				byTag[k] = true
			default:
				if _, ok := writes[k]; !ok {
					writes[k] = write{repo: pi.repo, n: n}
				}
			}
			pi.Manifests++
			for _, c := range n.children {
				walk(c)
			}
			for _, d := range n.blobs {
				b := needs[d.Digest]
				if b == nil {
					b = &blobNeed{d: d, repos: map[string]name.Repository{}, imgs: map[string]*PlannedImage{}}
					needs[d.Digest] = b
				}
				key := m.dst.blobKey(pi.repo)
				if _, ok := b.repos[key]; !ok {
					b.repos[key], b.imgs[key] = pi.repo, pi
				}
			}
		}
		walk(pi.top)
	}
	// Step 4: HEAD each blob in each repository that needs it.
	type blobAt = blobAtKey
	var pairs []blobAt
	for h, b := range needs {
		for key := range b.repos {
			pairs = append(pairs, blobAt{h, key})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].h != pairs[j].h {
			return pairs[i].h.String() < pairs[j].h.String()
		}
		return pairs[i].key < pairs[j].key
	})
	present := make([]bool, len(pairs))
	blobErr := make([]*failure, len(pairs))
	each(m.jobs, len(pairs), func(i int) {
		b := needs[pairs[i].h]
		repo := b.repos[pairs[i].key]
		ok, err := m.dst.hasBlob(ctx, repo, pairs[i].h)
		if err != nil {
			blobErr[i] = &failure{where: m.dst.where(repo), op: "HEAD blob " + pairs[i].h.String(), err: err}
			return
		}
		present[i] = ok
	})
	// Step 5: upload each blob once where no repository has it, mount it
	// everywhere else it is needed. First, the blobs no repository of
	// the run has: another repository of the registry may (elsewhere).
	var (
		omitted = map[v1.Hash]bool{}
		checks  []omitCheck
		ok      bool
		nowhere = map[v1.Hash][]mount{}
	)
	for start := 0; start < len(pairs); {
		end := start
		for end < len(pairs) && pairs[end].h == pairs[start].h {
			end++
		}
		b := needs[pairs[start].h]
		held := false
		for i := start; i < end; i++ {
			held = held || present[i]
		}
		if !held && omit[b.d.Digest] == "" && !m.leftOut(b.d.Digest, pairs[start:end], b.imgs) {
			for i := start; i < end; i++ {
				if blobErr[i] == nil {
					nowhere[b.d.Digest] = append(nowhere[b.d.Digest], mount{d: b.d, repo: b.repos[pairs[i].key], img: b.imgs[pairs[i].key]})
				}
			}
		}
		start = end
	}
	heldElsewhere := m.elsewhere(ctx, nowhere)
	for start := 0; start < len(pairs); {
		end := start
		for end < len(pairs) && pairs[end].h == pairs[start].h {
			end++
		}
		b := needs[pairs[start].h]
		var have *blobAt
		for i := start; i < end; i++ {
			if blobErr[i] != nil {
				pi := b.imgs[pairs[i].key]
				if pi.err == nil {
					pi.err = blobErr[i].imageError(pi.Image, m.o.resolver)
				}
			}
			if present[i] && have == nil {
				have = &pairs[i]
			}
		}
		if have == nil && omit[b.d.Digest] != "" {
			// A delta bundle leaves it out: the site holds it.
			omitted[b.d.Digest] = true
			p.OmittedBlobs++
			p.OmittedBytes, _ = addSize(p.OmittedBytes, b.d.Size)
			start = end
			continue
		}
		if have == nil && m.leftOut(b.d.Digest, pairs[start:end], b.imgs) {
			// Left out of the delta bundle being pushed: mounted from
			// where the bundle says the site holds it, checked first.
			for i := start; i < end; i++ {
				pi := b.imgs[pairs[i].key]
				if !present[i] && blobErr[i] == nil {
					checks = append(checks, omitCheck{d: b.d, repo: b.repos[pairs[i].key], pi: pi})
				}
			}
			start = end
			continue
		}
		if from, ok := heldElsewhere[b.d.Digest]; have == nil && ok {
			// Another repository of the registry holds it: mounted
			// into each repository of the run that needs it.
			for i := start; i < end; i++ {
				if !present[i] && blobErr[i] == nil {
					p.mounts = append(p.mounts, mount{d: b.d, repo: b.repos[pairs[i].key], from: from, img: b.imgs[pairs[i].key]})
					p.Mounts++
				}
			}
			start = end
			continue
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
			if p.Bytes, ok = addSize(p.Bytes, b.d.Size); !ok {
				return p, fmt.Errorf("the blobs to move add up to more than %d bytes", int64(math.MaxInt64))
			}
			have = &first
		}
		for i := start; i < end; i++ {
			if pairs[i] != *have && !present[i] && blobErr[i] == nil {
				p.mounts = append(p.mounts, mount{d: b.d, repo: b.repos[pairs[i].key], from: b.repos[have.key], img: b.imgs[pairs[i].key]})
				p.Mounts++
			}
		}
		start = end
	}
	m.checkLeftOut(ctx, p, checks)
	// The largest blobs first (then by digest): the workers then finish
	// together instead of a few large uploads running alone at the end.
	sort.SliceStable(p.uploads, func(i, j int) bool {
		if p.uploads[i].d.Size != p.uploads[j].d.Size {
			return p.uploads[i].d.Size > p.uploads[j].d.Size
		}
		return p.uploads[i].d.Digest.String() < p.uploads[j].d.Digest.String()
	})
	uploaded := map[v1.Hash]bool{}
	for _, u := range p.uploads {
		uploaded[u.d.Digest] = true
	}
	// Per image: the uploads its manifests need.
	for _, pi := range p.Images {
		if pi.top == nil || pi.err != nil {
			continue
		}
		pi.uploads = map[v1.Hash]int64{}
		visited := map[*node]bool{}
		var walk func(n *node)
		walk = func(n *node) {
			if (manifestAt[repoNode{pi.repo.Name(), n.digest}] && !(pi.relinked && n == pi.top)) || visited[n] {
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
				if omitted[d.Digest] {
					if pi.Omitted == nil {
						pi.Omitted = map[v1.Hash]string{}
					}
					pi.Omitted[d.Digest] = omit[d.Digest]
				}
			}
		}
		walk(pi.top)
		pi.Blobs = len(pi.uploads)
		for _, s := range pi.uploads {
			pi.Bytes, _ = addSize(pi.Bytes, s)
		}
	}
	// Manifests by height, children first, each level sorted.
	var ws []write
	for _, w := range writes {
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
	for k := range byTag {
		if _, ok := writes[k]; !ok {
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
			p.tags = append(p.tags, pi)
		}
	}
	p.Errors.Sorted()
	if err := checkCtx(ctx); err != nil {
		return p, err
	}
	return p, nil
}

// blobAtKey is a blob in the scope (sink.blobKey) where its presence
// counts.
type blobAtKey struct {
	h   v1.Hash
	key string
}

// MaxManifestsPerImage bounds the distinct manifests read for one image
// (its index, children and their children): 10,000, ten times an index at
// registry.MaxIndexChildren. A manifest listed again (by the same index or
// another) is read once and walked once.
const MaxManifestsPerImage = 10_000

// budget counts the manifests still to be read for one image.
type budget struct{ left atomic.Int64 }

func newBudget() *budget {
	b := &budget{}
	b.left.Store(MaxManifestsPerImage)
	return b
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
		return nil, &failure{where: m.src.where(img), op: "GET manifest " + h.String(), err: fmt.Errorf("the image has more than %d distinct manifests", MaxManifestsPerImage)}
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
