package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/confined"
)

// layoutSink writes a bundle: an OCI image layout. Blobs (manifests
// included) go to blobs/sha256/<hex> through a temporary file in the same
// directory and a rename, checked against their digest and size; index.json
// and the lock are replaced atomically at the end; blobs that no image of
// the bundle references (an older run's, an interrupted write's temporary
// files) are removed, so the same images always give the same files.
type layoutSink struct {
	path string
	lock []byte
}

// checkLayoutTarget refuses a directory that is neither absent, empty, nor
// an OCI layout: a bundle never mixes with other files.
func checkLayoutTarget(path string) error {
	entries, err := os.ReadDir(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("oci:%s: %w", path, err)
	case len(entries) == 0:
		return nil
	}
	if !fileExists(filepath.Join(path, "oci-layout")) {
		return fmt.Errorf("oci:%s: the directory holds files and is not an OCI image layout; give a new or empty directory", path)
	}
	return nil
}

func (s *layoutSink) repo(img *Image) (name.Repository, error) { return img.Source, nil }
func (s *layoutSink) where(name.Repository) string             { return "oci:" + s.path }
func (s *layoutSink) blobKey(name.Repository) string           { return "" }
func (s *layoutSink) reference(img *Image, _ name.Repository) string {
	return "oci:" + s.path + " " + img.Name + "@" + img.Digest.String()
}

func (s *layoutSink) head(_ context.Context, img *Image, _ name.Repository, id string) (v1.Hash, bool, error) {
	h := img.Digest
	if d, err := v1.NewHash(id); err == nil {
		h = d
	}
	// Manifests are written after everything they reference, so a
	// manifest file means a complete image.
	if fileExists(blobPath(s.path, h)) {
		return h, true, nil
	}
	return v1.Hash{}, false, nil
}

func (s *layoutSink) hasBlob(_ context.Context, _ name.Repository, h v1.Hash) (bool, error) {
	return fileExists(blobPath(s.path, h)), nil
}

func (s *layoutSink) upload(ctx context.Context, _ name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error)) error {
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
	return s.writeBlob(ctx, v1.Descriptor{Digest: n.digest, Size: int64(len(n.raw))}, io.NopCloser(bytes.NewReader(n.raw)))
}

func (s *layoutSink) tag(context.Context, *Image, name.Repository, *node) error { return nil }

// writeBlob streams r into blobs/<alg>/<hex>, checking the digest and size
// of what it wrote before the rename.
func (s *layoutSink) writeBlob(ctx context.Context, d v1.Descriptor, r io.Reader) error {
	final := blobPath(s.path, d.Digest)
	if fileExists(final) {
		return nil
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), &ctxReader{ctx: ctx, r: r})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if d.Size > 0 && n != d.Size {
		return fmt.Errorf("blob %s: wrote %d bytes, want %d", d.Digest, n, d.Size)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d.Digest.String() {
		return fmt.Errorf("blob %s: content has digest %s", d.Digest, got)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), final)
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

// finish writes oci-layout (go-containerregistry's layout.Write), index.json
// with one annotated descriptor per image sorted by name and digest, and the
// lock, then removes every blob no image references.
func (s *layoutSink) finish(ctx context.Context, images []*PlannedImage) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	var descs []v1.Descriptor
	keep := map[string]bool{}
	for _, pi := range images {
		raw, err := os.ReadFile(blobPath(s.path, pi.Digest))
		if err != nil {
			return fmt.Errorf("oci:%s: image %s: %w", s.path, pi.Name, err)
		}
		ann := map[string]string{AnnotationRefName: pi.Name, AnnotationReference: pi.written()}
		if pi.Tag != "" {
			ann[AnnotationTag] = pi.Tag
		}
		descs = append(descs, v1.Descriptor{MediaType: sniffMediaType(raw), Digest: pi.Digest, Size: int64(len(raw)), Annotations: ann})
		if err := s.referenced(pi.Digest, raw, keep, 0); err != nil {
			return err
		}
	}
	sort.SliceStable(descs, func(i, j int) bool {
		a, b := descs[i].Annotations[AnnotationRefName], descs[j].Annotations[AnnotationRefName]
		if a != b {
			return a < b
		}
		return descs[i].Digest.String() < descs[j].Digest.String()
	})
	// A new bundle gets its oci-layout file (and an empty index.json,
	// replaced below) from go-containerregistry.
	if !fileExists(filepath.Join(s.path, "oci-layout")) {
		if _, err := layout.Write(s.path, empty.Index); err != nil {
			return fmt.Errorf("oci:%s: %w", s.path, err)
		}
	}
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: descs}
	if idx.Manifests == nil {
		idx.Manifests = []v1.Descriptor{}
	}
	raw, err := json.MarshalIndent(idx, "", "   ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFileContext(ctx, filepath.Join(s.path, "index.json"), raw, 0o644); err != nil {
		return err
	}
	if s.lock != nil {
		if err := atomicfile.WriteFileContext(ctx, filepath.Join(s.path, BundleLock), s.lock, 0o644); err != nil {
			return err
		}
	}
	return s.collect(keep)
}

// referenced adds h and everything the manifest raw references to keep,
// reading child manifests from the layout.
func (s *layoutSink) referenced(h v1.Hash, raw []byte, keep map[string]bool, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("oci:%s: manifest %s: indexes nested deeper than %d", s.path, h, maxDepth)
	}
	keep[h.Hex] = true
	if sniffMediaType(raw).IsIndex() {
		im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
		if err != nil {
			return err
		}
		for _, c := range im.Manifests {
			craw, err := os.ReadFile(blobPath(s.path, c.Digest))
			if err != nil {
				return fmt.Errorf("oci:%s: manifest %s: %w", s.path, c.Digest, err)
			}
			if err := s.referenced(c.Digest, craw, keep, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	keep[m.Config.Digest.Hex] = true
	for _, l := range m.Layers {
		keep[l.Digest.Hex] = true
	}
	return nil
}

// collect removes every file under blobs/sha256 whose name is not in keep.
func (s *layoutSink) collect(keep map[string]bool) error {
	dir := filepath.Join(s.path, "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// BundleImages lists the images of the bundle at path (written by a
// Mirror with WithToLayout), from its index.json's annotations, sorted by
// name, and returns its lock file's bytes (nil when it has none). Errors:
// not an OCI layout, or a descriptor without the stowage annotations.
func BundleImages(path string) ([]Image, []byte, error) {
	p, err := layout.FromPath(path)
	if err != nil {
		return nil, nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return nil, nil, fmt.Errorf("oci:%s: index.json: %w", path, err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, nil, fmt.Errorf("oci:%s: index.json: %w", path, err)
	}
	var out []Image
	for i, d := range im.Manifests {
		key := d.Annotations[AnnotationRefName]
		if key == "" {
			return nil, nil, fmt.Errorf("oci:%s: index.json: manifests[%d] (%s) has no %s annotation; this bundle was not written by stowage mirror", path, i, d.Digest, AnnotationRefName)
		}
		ref, err := name.ParseReference(key)
		if err != nil {
			return nil, nil, fmt.Errorf("oci:%s: index.json: manifests[%d]: %s %q: %w", path, i, AnnotationRefName, key, err)
		}
		img := Image{Name: key, Written: d.Annotations[AnnotationReference], Source: ref.Context(), Tag: d.Annotations[AnnotationTag], Digest: d.Digest}
		if img.Tag != "" {
			if _, err := name.NewTag(ref.Context().Name() + ":" + img.Tag); err != nil {
				return nil, nil, fmt.Errorf("oci:%s: index.json: manifests[%d]: %s %q: %w", path, i, AnnotationTag, img.Tag, err)
			}
		}
		out = append(out, img)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	lock, err := confined.ReadFile(path, BundleLock, confined.Lock)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	return out, lock, nil
}
