package lock

import (
	"fmt"
	"math"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ManifestEntry summarises a single image for the lock: Kind manifest, the
// manifest digest, and Size, the config plus compressed layer sizes read from
// the manifest, in bytes. Name and Reference are left for the caller.
func ManifestEntry(img v1.Image) (Entry, error) {
	h, err := img.Digest()
	if err != nil {
		return Entry{}, fmt.Errorf("image digest: %w", err)
	}
	size, err := imageSize(img)
	if err != nil {
		return Entry{}, fmt.Errorf("image %s: %w", h, err)
	}
	return Entry{Digest: h.String(), Kind: KindManifest, Size: size}, nil
}

// IndexEntry summarises an index (OCI image index or Docker manifest list)
// for the lock: Kind index, the index digest, and one Platform per child
// image with its digest and size (config plus compressed layers, bytes),
// sorted by platform. Children that are not pullable images for a platform
// are left out: nested indexes, children without a platform, and children
// whose platform is "unknown/unknown" (build attestations). When two children
// declare the same platform the first in index order wins. Each child's
// manifest is read through idx (for a remote index, one request per child).
// Name and Reference are left for the caller.
func IndexEntry(idx v1.ImageIndex) (Entry, error) {
	h, err := idx.Digest()
	if err != nil {
		return Entry{}, fmt.Errorf("index digest: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return Entry{}, fmt.Errorf("index %s: %w", h, err)
	}
	return IndexEntryOf(h, im, idx.Image)
}

// IndexEntryOf is IndexEntry over an index manifest already parsed (im, of
// digest h), reading each child through child: the index is parsed once,
// however many children it has.
func IndexEntryOf(h v1.Hash, im *v1.IndexManifest, child func(v1.Hash) (v1.Image, error)) (Entry, error) {
	e := Entry{Digest: h.String(), Kind: KindIndex}
	seen := map[string]bool{}
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() || d.Platform == nil || d.Platform.OS == "" || d.Platform.OS == "unknown" {
			continue
		}
		p := d.Platform.String()
		if seen[p] {
			continue
		}
		seen[p] = true
		img, err := child(d.Digest)
		if err != nil {
			return Entry{}, fmt.Errorf("index %s: child %s (%s): %w", h, d.Digest, p, err)
		}
		size, err := imageSize(img)
		if err != nil {
			return Entry{}, fmt.Errorf("index %s: child %s (%s): %w", h, d.Digest, p, err)
		}
		e.Platforms = append(e.Platforms, Platform{Platform: p, Digest: d.Digest.String(), Size: size})
	}
	e.Platforms = sortedPlatforms(e.Platforms)
	return e, nil
}

// imageSize is the config plus compressed layer sizes of img's manifest, in
// bytes.
func imageSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("manifest: %w", err)
	}
	// Registry values are checked before they reach a lock: every size
	// at least 0 and the sum without overflow.
	if m.Config.Size < 0 {
		return 0, fmt.Errorf("config size %d is negative", m.Config.Size)
	}
	size := m.Config.Size
	for i, l := range m.Layers {
		if l.Size < 0 {
			return 0, fmt.Errorf("layer %d size %d is negative", i, l.Size)
		}
		if size > math.MaxInt64-l.Size {
			return 0, fmt.Errorf("layer sizes overflow a 64-bit byte count at layer %d", i)
		}
		size += l.Size
	}
	return size, nil
}
