package mirror

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/lock"
)

// layoutFile is the oci-layout file of every bundle (the OCI image layout
// specification's; go-containerregistry's layout package writes the same).
const layoutFile = "{\n    \"imageLayoutVersion\": \"1.0.0\"\n}"

// The files of a bundle's top level.
const (
	layoutName = "oci-layout"
	indexName  = "index.json"
	blobsDir   = "blobs"
)

// layoutSink writes a bundle: an OCI image layout. Every file is reached
// through an os.Root opened on the layout's directory, and no path
// component of the layout (blobs, blobs/sha256, a blob, index.json,
// oci-layout, the lock) may be a symbolic link: nothing outside the
// directory is read, written or removed. A directory that holds files is
// written only when it is a bundle stowage wrote (AnnotationBundle, or the
// stowage annotations on every descriptor of an older bundle); another
// tool's layout is refused, as `render -o` refuses files it did not write.
//
// Blobs (manifests included) go to blobs/sha256/<hex> through a temporary
// file in the same directory and a rename, checked against their digest
// and size; a blob already there is hashed again before it counts (a
// damaged one is written anew). index.json and the lock are replaced
// atomically at the end, keeping every image the bundle already held
// (a second config merges; an image the new run would give another digest
// under the same name, tag and site is refused before anything is
// written); blobs that no image of the bundle references (an interrupted
// write's, a replaced image's) are removed, so the same images always give
// the same files.
type layoutSink struct {
	path string
	lock []byte
	// root is the layout's directory; nil until the first write when
	// the directory does not exist yet (a dry run creates nothing).
	root *os.Root
	// held are the descriptors of the bundle's index.json before this
	// run; heldLock its lock (nil when it has none).
	held     []v1.Descriptor
	heldLock *lock.Lock
	// trust is this run's trust material (WithTrust), heldTrust the
	// bundle's before this run (nil when none).
	trust, heldTrust *Trust

	mu       sync.Mutex
	verified map[v1.Hash]bool
}

// openLayoutSink checks the target of --to oci:PATH: absent, an empty
// directory, or a bundle stowage wrote; a directory of other files, or
// another tool's layout, is refused.
func openLayoutSink(path string, lockBytes []byte) (*layoutSink, error) {
	s := &layoutSink{path: path, lock: lockBytes, verified: map[v1.Hash]bool{}}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("oci:%s: %w", path, err)
	case !st.IsDir():
		return nil, fmt.Errorf("oci:%s: is not a directory; give a new or empty directory", path)
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("oci:%s: %w", path, err)
	}
	s.root = root
	entries, err := readDir(root, ".")
	if err != nil {
		return nil, fmt.Errorf("oci:%s: %w", path, err)
	}
	if len(entries) == 0 {
		return s, nil
	}
	if _, err := confined.ReadInRoot(root, path, layoutName, layoutKind); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("oci:%s: the directory holds files and is not an OCI image layout; give a new or empty directory", path)
		}
		return nil, err
	}
	idx, err := readBundleIndex(root, path)
	if err != nil {
		return nil, err
	}
	if !idx.stowage {
		return nil, &ForeignLayoutError{Path: path, Reason: idx.foreign}
	}
	for _, d := range []string{blobsDir, blobsDir + "/sha256"} {
		if err := checkDir(root, path, d); err != nil {
			return nil, err
		}
	}
	s.held = idx.descs
	if idx.trust != nil {
		if s.heldTrust, err = readTrust(root, path, *idx.trust); err != nil {
			return nil, err
		}
	}
	raw, err := confined.ReadInRoot(root, path, BundleLock, lockKind)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if s.heldLock, err = lock.Parse(raw, filepath.Join(path, BundleLock)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ForeignLayoutError is an OCI image layout that stowage did not write
// (one `crane pull --format oci` or skopeo made, say): stowage writes into
// it nothing and removes nothing from it.
type ForeignLayoutError struct {
	// Path is the layout's directory; Reason says how it was told.
	Path, Reason string
}

// Error names the layout and the way out.
func (e *ForeignLayoutError) Error() string {
	return fmt.Sprintf("oci:%s: an OCI image layout stowage did not write (%s); stowage writes bundles only into a new or empty directory or one of its own", e.Path, e.Reason)
}

// ensureRoot creates the layout's directory on the first write and opens
// it, with blobs/sha256 inside.
func (s *layoutSink) ensureRoot() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		if err := os.MkdirAll(s.path, 0o755); err != nil {
			return fmt.Errorf("oci:%s: %w", s.path, err)
		}
		root, err := os.OpenRoot(s.path)
		if err != nil {
			return fmt.Errorf("oci:%s: %w", s.path, err)
		}
		s.root = root
	}
	if err := s.root.MkdirAll(blobsDir+"/sha256", 0o755); err != nil {
		return fmt.Errorf("oci:%s: %w", s.path, err)
	}
	for _, d := range []string{blobsDir, blobsDir + "/sha256"} {
		if err := checkDir(s.root, s.path, d); err != nil {
			return err
		}
	}
	return nil
}

func (s *layoutSink) repo(img *Image) (name.Repository, error) { return img.Source, nil }
func (s *layoutSink) where(name.Repository) string             { return "oci:" + s.path }
func (s *layoutSink) blobKey(name.Repository) string           { return "" }
func (s *layoutSink) reference(img *Image, _ name.Repository) string {
	return "oci:" + s.path + " " + img.Name + "@" + img.Digest.String()
}

// head says whether the bundle holds the manifest id (a digest; a tag is
// the image's own digest) and everything it references, each file hashed
// again: an image counts as there only when all of it verifies.
func (s *layoutSink) head(_ context.Context, img *Image, _ name.Repository, id string) (v1.Hash, bool, error) {
	h := img.Digest
	if d, err := v1.NewHash(id); err == nil {
		h = d
	}
	ok, err := s.complete(h, 0, img.Omitted, map[v1.Hash]bool{})
	if err != nil || !ok {
		return v1.Hash{}, false, err
	}
	return h, true, nil
}

// complete reports whether manifest h and every blob and child it
// references are in the bundle with the content their digests name, the
// blobs a delta bundle leaves out (omitted) apart. done are the manifests
// found complete already: a child several indexes list is read and
// hashed once, so an index graph with shared children costs its distinct
// manifests, not its paths.
func (s *layoutSink) complete(h v1.Hash, depth int, omitted map[v1.Hash]string, done map[v1.Hash]bool) (bool, error) {
	if s.root == nil {
		return false, nil
	}
	if done[h] {
		return true, nil
	}
	raw, err := s.readManifest(h)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errDamaged) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	children, blobs, err := references(raw, depth)
	if err != nil {
		return false, fmt.Errorf("manifest %s in the bundle: %w", h, err)
	}
	for _, c := range children {
		if ok, err := s.complete(c.Digest, depth+1, omitted, done); err != nil || !ok {
			return false, err
		}
	}
	for _, d := range blobs {
		if _, ok := omitted[d.Digest]; ok {
			continue
		}
		if ok, err := s.verify(d); err != nil || !ok {
			return false, err
		}
	}
	done[h] = true
	return true, nil
}

// references are the children of an index, or the config and layers of an
// image manifest (foreign layers apart), with negative sizes refused.
func references(raw []byte, depth int) (children, blobs []v1.Descriptor, err error) {
	if depth > maxDepth {
		return nil, nil, fmt.Errorf("indexes nested deeper than %d", maxDepth)
	}
	if sniffMediaType(raw).IsIndex() {
		im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, nil, err
		}
		if len(im.Manifests) > maxChildren {
			return nil, nil, fmt.Errorf("the index lists %d child manifests, more than the %d stowage reads", len(im.Manifests), maxChildren)
		}
		for _, c := range im.Manifests {
			if c.Size < 0 {
				return nil, nil, fmt.Errorf("child %s has a negative size", c.Digest)
			}
		}
		return im.Manifests, nil, nil
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	blobs = append(blobs, m.Config)
	for _, l := range m.Layers {
		if l.MediaType.IsDistributable() {
			blobs = append(blobs, l)
		}
	}
	for _, b := range blobs {
		if b.Size < 0 {
			return nil, nil, fmt.Errorf("blob %s has a negative size", b.Digest)
		}
	}
	return nil, blobs, nil
}

func (s *layoutSink) hasBlob(_ context.Context, _ name.Repository, h v1.Hash) (bool, error) {
	return s.verify(v1.Descriptor{Digest: h, Size: -1})
}

// verify reports whether the bundle holds blob d with the content its
// digest (and size, when known) names, hashing the file once per run.
func (s *layoutSink) verify(d v1.Descriptor) (bool, error) {
	// The root is opened by the first write (ensureRoot), perhaps
	// beside this call: read under the lock.
	s.mu.Lock()
	root, ok := s.root, s.verified[d.Digest]
	s.mu.Unlock()
	if root == nil {
		return false, nil
	}
	if ok {
		return true, nil
	}
	f, err := openBlob(root, s.path, d.Digest)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return false, fmt.Errorf("oci:%s: blob %s: %w", s.path, d.Digest, err)
	}
	if (d.Size >= 0 && n != d.Size) || "sha256:"+hex.EncodeToString(h.Sum(nil)) != d.Digest.String() {
		return false, nil
	}
	s.mu.Lock()
	s.verified[d.Digest] = true
	s.mu.Unlock()
	return true, nil
}

// errDamaged is a bundle file whose content is not its digest's.
var errDamaged = errors.New("its content does not match its digest")

// readManifest reads manifest h from the bundle, bounded and checked
// against h.
func (s *layoutSink) readManifest(h v1.Hash) ([]byte, error) {
	f, err := openBlob(s.root, s.path, h)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxManifestBytes {
		return nil, fmt.Errorf("oci:%s: manifest %s is larger than %d bytes", s.path, h, maxManifestBytes)
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(raw)); got != h {
		return nil, errDamaged
	}
	return raw, nil
}

func (s *layoutSink) upload(ctx context.Context, _ name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error)) error {
	if ok, err := s.verify(d); err != nil || ok {
		return err
	}
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return s.writeBlob(ctx, d, rc)
}

func (s *layoutSink) mount(context.Context, name.Repository, name.Repository, v1.Descriptor, func() (io.ReadCloser, error)) error {
	return errors.New("an OCI layout has one blob store: nothing to mount")
}

func (s *layoutSink) putManifest(ctx context.Context, _ name.Repository, n *node) error {
	d := v1.Descriptor{Digest: n.digest, Size: int64(len(n.raw))}
	if ok, err := s.verify(d); err != nil || ok {
		return err
	}
	return s.writeBlob(ctx, d, io.NopCloser(bytes.NewReader(n.raw)))
}

func (s *layoutSink) tag(context.Context, *Image, name.Repository, *node) error { return nil }

// writeBlob streams r into blobs/<alg>/<hex> through a temporary file,
// checking the digest and size of what it wrote before the rename.
func (s *layoutSink) writeBlob(ctx context.Context, d v1.Descriptor, r io.Reader) error {
	if err := s.ensureRoot(); err != nil {
		return err
	}
	final := blobName(d.Digest)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Dir(final) + "/.partial-" + hex.EncodeToString(rnd[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("oci:%s: %w", s.path, err)
	}
	defer s.root.Remove(tmp)
	h := sha256.New()
	var src io.Reader = &ctxReader{ctx: ctx, r: r}
	if d.Size > 0 {
		// Never more than the declared size and one byte.
		src = io.LimitReader(src, d.Size+1)
	}
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if d.Size > 0 && n != d.Size {
		return fmt.Errorf("blob %s: got %d bytes or more, want %d", d.Digest, n, d.Size)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d.Digest.String() {
		return fmt.Errorf("blob %s: content has digest %s", d.Digest, got)
	}
	if err := s.root.Rename(tmp, final); err != nil {
		return fmt.Errorf("oci:%s: %w", s.path, err)
	}
	s.mu.Lock()
	s.verified[d.Digest] = true
	s.mu.Unlock()
	return nil
}

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := checkCtx(c.ctx); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// identity is what tells two images of a bundle apart.
func identity(name, tag, site string) string { return name + "\x00" + tag + "\x00" + site }

func heldIdentity(d v1.Descriptor) string {
	img := Image{Name: d.Annotations[AnnotationRefName], Tag: d.Annotations[AnnotationTag], Site: d.Annotations[AnnotationSite], Digest: d.Digest}
	if kind := d.Annotations[AnnotationAttachment]; kind != "" {
		subject, _ := v1.NewHash(d.Annotations[AnnotationSubject])
		img.Attachment = &Attachment{Kind: kind, Subject: subject}
	}
	return imageIdentity(img)
}

// check refuses a run that would change what the bundle holds: an image
// the bundle has under the same name, tag and site at another digest, or
// a lock entry the bundle's lock pins at another digest. The error names
// every such image.
func (s *layoutSink) check(images []*PlannedImage) error {
	held := map[string]v1.Descriptor{}
	for _, d := range s.held {
		held[heldIdentity(d)] = d
	}
	var problems []string
	for _, pi := range images {
		if pi.Attachment != nil {
			// A newer signature under the same cosign tag replaces the
			// one held.
			continue
		}
		d, ok := held[imageIdentity(pi.Image)]
		if ok && d.Digest != pi.Digest {
			problems = append(problems, fmt.Sprintf("image %s: the bundle holds %s, this run would write %s", pi.Name, d.Digest, pi.Digest))
		}
	}
	if s.heldLock != nil && s.lock != nil {
		l, err := lock.Parse(s.lock, "the lock")
		if err != nil {
			return err
		}
		for _, e := range l.Entries {
			if old, ok := s.heldLock.Lookup(e.Name); ok && old.Digest != e.Digest {
				problems = append(problems, fmt.Sprintf("image %s: the bundle's lock pins %s, this lock %s", e.Name, old.Digest, e.Digest))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	problems = compact(problems)
	return fmt.Errorf("oci:%s: the bundle already holds other digests of these images; write to a new directory (or remove this one) to replace them:\n  %s", s.path, strings.Join(problems, "\n  "))
}

func compact(ss []string) []string {
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// finish writes oci-layout, index.json with one annotated descriptor per
// image (the ones held before and this run's), sorted by name, digest, tag
// and site, and the lock (merged with the one held before), then removes
// every blob no image references.
func (s *layoutSink) finish(ctx context.Context, images []*PlannedImage) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := s.ensureRoot(); err != nil {
		return err
	}
	descs := map[string]v1.Descriptor{}
	for _, d := range s.held {
		descs[heldIdentity(d)] = d
	}
	for _, pi := range images {
		raw, err := s.readManifest(pi.Digest)
		if err != nil {
			return fmt.Errorf("oci:%s: image %s: %w", s.path, pi.Name, err)
		}
		ann := map[string]string{AnnotationRefName: pi.Name, AnnotationReference: pi.written()}
		if pi.Tag != "" {
			ann[AnnotationTag] = pi.Tag
		}
		if pi.Site != "" {
			ann[AnnotationSite] = pi.Site
		}
		if len(pi.Omitted) > 0 {
			ann[AnnotationOmitted] = omittedAnnotation(pi.Omitted)
		}
		if a := pi.Attachment; a != nil {
			ann[AnnotationAttachment] = a.Kind
			ann[AnnotationSubject] = a.Subject.String()
		}
		descs[imageIdentity(pi.Image)] = v1.Descriptor{MediaType: sniffMediaType(raw), Digest: pi.Digest, Size: int64(len(raw)), Annotations: ann}
	}
	recordAttachments(descs)
	var list []v1.Descriptor
	keep, walked := map[string]bool{}, map[string]bool{}
	// The trust material: this run's policies for its images, the held
	// ones for the images only the bundle had.
	ran := map[string]bool{}
	for _, pi := range images {
		ran[pi.Name] = true
	}
	trust := s.trust.merged(s.heldTrust, func(image string) bool { return !ran[image] && s.trust.For(image) == nil })
	td, err := s.writeTrust(ctx, trust)
	if err != nil {
		return err
	}
	if td != nil {
		descs["\x00trust"] = *td
	}
	for _, d := range descs {
		list = append(list, d)
		if err := s.referenced(d.Digest, keep, walked, 0); err != nil {
			return err
		}
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Annotations, list[j].Annotations
		if a[AnnotationRefName] != b[AnnotationRefName] {
			return a[AnnotationRefName] < b[AnnotationRefName]
		}
		if list[i].Digest != list[j].Digest {
			return list[i].Digest.String() < list[j].Digest.String()
		}
		if a[AnnotationTag] != b[AnnotationTag] {
			return a[AnnotationTag] < b[AnnotationTag]
		}
		return a[AnnotationSite] < b[AnnotationSite]
	})
	if list == nil {
		list = []v1.Descriptor{}
	}
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: list,
		Annotations: map[string]string{AnnotationBundle: BundleVersion}}
	raw, err := json.MarshalIndent(idx, "", "   ")
	if err != nil {
		return err
	}
	for _, f := range []string{layoutName, indexName, BundleLock} {
		if err := noLink(s.root, s.path, f); err != nil {
			return err
		}
	}
	if err := atomicfile.WriteFileContext(ctx, filepath.Join(s.path, layoutName), []byte(layoutFile), 0o644); err != nil {
		return err
	}
	if err := atomicfile.WriteFileContext(ctx, filepath.Join(s.path, indexName), raw, 0o644); err != nil {
		return err
	}
	if l, err := s.mergedLock(); err != nil {
		return err
	} else if l != nil {
		if err := atomicfile.WriteFileContext(ctx, filepath.Join(s.path, BundleLock), l, 0o644); err != nil {
			return err
		}
	}
	return s.collect(keep)
}

// mergedLock is the lock to write: this run's, with the entries of the
// bundle's own lock it lacks (check refused differing ones).
func (s *layoutSink) mergedLock() ([]byte, error) {
	if s.heldLock == nil || s.lock == nil {
		if s.lock == nil && s.heldLock != nil {
			return s.heldLock.Marshal(), nil
		}
		return s.lock, nil
	}
	l, err := lock.Parse(s.lock, "the lock")
	if err != nil {
		return nil, err
	}
	added := false
	for _, e := range s.heldLock.Entries {
		if _, ok := l.Lookup(e.Name); !ok {
			l.Put(e)
			added = true
		}
	}
	if !added {
		return s.lock, nil
	}
	return l.Marshal(), nil
}

// referenced adds h and everything manifest h references to keep, reading
// child manifests from the layout; walked are the manifests added already,
// each read once however many indexes list it.
func (s *layoutSink) referenced(h v1.Hash, keep, walked map[string]bool, depth int) error {
	if walked[h.Hex] {
		return nil
	}
	walked[h.Hex] = true
	raw, err := s.readManifest(h)
	if err != nil {
		return fmt.Errorf("oci:%s: manifest %s: %w", s.path, h, err)
	}
	keep[h.Hex] = true
	children, blobs, err := references(raw, depth)
	if err != nil {
		return fmt.Errorf("oci:%s: manifest %s: %w", s.path, h, err)
	}
	for _, c := range children {
		if err := s.referenced(c.Digest, keep, walked, depth+1); err != nil {
			return err
		}
	}
	for _, b := range blobs {
		keep[b.Digest.Hex] = true
	}
	return nil
}

// collect removes every file under blobs/sha256 whose name is not in keep.
func (s *layoutSink) collect(keep map[string]bool) error {
	entries, err := readDir(s.root, blobsDir+"/sha256")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			if err := s.root.RemoveAll(blobsDir + "/sha256/" + e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// BundleImages lists the images of the bundle at path (written by a
// Mirror with WithToLayout), from its index.json's annotations, sorted by
// name, and returns its lock file's bytes (nil when it has none). Errors:
// not an OCI layout, a layout stowage did not write (*ForeignLayoutError),
// a file that is a link, not regular or too large, or a descriptor whose
// annotations do not parse.
func BundleImages(path string) ([]Image, []byte, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	defer root.Close()
	if _, err := confined.ReadInRoot(root, path, layoutName, layoutKind); err != nil {
		return nil, nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	idx, err := readBundleIndex(root, path)
	if err != nil {
		return nil, nil, err
	}
	if !idx.stowage {
		return nil, nil, &ForeignLayoutError{Path: path, Reason: idx.foreign}
	}
	lock, err := confined.ReadInRoot(root, path, BundleLock, lockKind)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	return idx.images, lock, nil
}

// recordAttachments sets, on each image's descriptor of descs, the
// attachments descs holds for it (AnnotationAttachments: same image name
// and site), sorted; the annotation is left out when there are none.
func recordAttachments(descs map[string]v1.Descriptor) {
	owner := func(d v1.Descriptor) string {
		return d.Annotations[AnnotationRefName] + "\x00" + d.Annotations[AnnotationSite]
	}
	carried := map[string][]string{}
	for _, d := range descs {
		if kind := d.Annotations[AnnotationAttachment]; kind != "" {
			carried[owner(d)] = append(carried[owner(d)], kind+" "+d.Annotations[AnnotationSubject]+" "+d.Digest.String())
		}
	}
	for k, d := range descs {
		if d.Annotations[AnnotationAttachment] != "" {
			continue
		}
		ann := maps.Clone(d.Annotations)
		delete(ann, AnnotationAttachments)
		if c := carried[owner(d)]; len(c) > 0 {
			sort.Strings(c)
			ann[AnnotationAttachments] = strings.Join(slices.Compact(c), ";")
		}
		d.Annotations = ann
		descs[k] = d
	}
}
