package mirror

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/registry"
)

// MaxBundleImages bounds the descriptors of a bundle's index.json: 100,000
// images, far above any site's set.
const MaxBundleImages = 100_000

// maxChildren bounds the child manifests of one index
// (registry.MaxIndexChildren, the bound `stowage lock` applies).
const maxChildren = registry.MaxIndexChildren

// The kinds of file a bundle holds besides blobs, with their size bounds.
var (
	// indexKind is a bundle's index.json: 16 MiB (a descriptor is about
	// 400 bytes, so some 40,000 images).
	indexKind  = confined.Kind{What: "bundle index.json", Max: 16 << 20}
	layoutKind = confined.Kind{What: "bundle oci-layout file", Max: 4 << 10}
	lockKind   = confined.Kind{What: "bundle lock file", Max: confined.Lock.Max}
)

// blobName is where a layout keeps blob h, relative to the layout.
func blobName(h v1.Hash) string { return blobsDir + "/" + h.Algorithm + "/" + h.Hex }

// blobKind is a blob file of a bundle; its size is bounded by its
// descriptor, checked as it is read.
var blobKind = confined.Kind{What: "bundle blob", Max: 1 << 62}

// openBlob opens blob h of the layout at root (confined.OpenInRoot).
func openBlob(root *os.Root, shown string, h v1.Hash) (*os.File, error) {
	if h.Algorithm != "sha256" {
		return nil, fmt.Errorf("oci:%s: blob %s: only sha256 digests are read", shown, h)
	}
	f, _, err := confined.OpenInRoot(root, shown, blobName(h), blobKind)
	return f, err
}

// checkDir refuses rel inside root when it exists and is not a directory
// or is a symbolic link.
func checkDir(root *os.Root, shown, rel string) error {
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("oci:%s: %s: %w", shown, rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("oci:%s: %s is a symbolic link; no path of a bundle is a link", shown, rel)
	case !fi.IsDir():
		return fmt.Errorf("oci:%s: %s is not a directory", shown, rel)
	}
	return nil
}

// noLink refuses rel inside root when it exists and is not a regular
// file (a symbolic link, a directory, a FIFO).
func noLink(root *os.Root, shown, rel string) error {
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("oci:%s: %s: %w", shown, rel, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("oci:%s: %s is not a regular file (%s); stowage replaces only its own files", shown, rel, fi.Mode().Type())
	}
	return nil
}

// readDir lists rel inside root.
func readDir(root *os.Root, rel string) ([]fs.DirEntry, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// bundleIndex is a parsed index.json of a layout.
type bundleIndex struct {
	// stowage is set for a bundle stowage wrote; foreign says why not.
	stowage bool
	foreign string
	// descs are the descriptors as written; images the images they
	// name, sorted by name (set only for a stowage bundle).
	descs  []v1.Descriptor
	images []Image
	// trust is the descriptor of the trust material (AnnotationTrust),
	// not among descs; nil when the bundle carries none.
	trust *v1.Descriptor
}

// readBundleIndex reads the index.json of the layout at root (bounded,
// never through a link) and parses it.
func readBundleIndex(root *os.Root, shown string) (*bundleIndex, error) {
	raw, err := confined.ReadInRoot(root, shown, indexName, indexKind)
	if err != nil {
		return nil, err
	}
	return parseBundleIndex(raw, shown)
}

// parseBundleIndex parses raw, the index.json of the layout at path. A
// bundle stowage wrote carries AnnotationBundle (an older one: the
// stowage annotations on every descriptor); anything else is reported as
// foreign, not an error. Errors, for a stowage bundle, name the descriptor
// (manifests[i]) and the field: more than MaxBundleImages descriptors, a
// descriptor that is not a manifest or an index, a negative or oversized
// size, a name, tag or site that does not parse, an image listed twice at
// two digests; and a format version this stowage does not know.
func parseBundleIndex(raw []byte, path string) (*bundleIndex, error) {
	where := func(format string, args ...any) error {
		return fmt.Errorf("oci:%s: index.json: "+format, append([]any{path}, args...)...)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, where("%v", err)
	}
	if n := len(im.Manifests); n > MaxBundleImages {
		return nil, where("lists %d manifests, more than the %d a bundle may hold", n, MaxBundleImages)
	}
	out := &bundleIndex{}
	switch v, ok := im.Annotations[AnnotationBundle]; {
	case ok && v != BundleVersion:
		return nil, where("%s is %q; this stowage reads bundles of format %q (a newer stowage wrote it?)", AnnotationBundle, v, BundleVersion)
	case ok:
		out.stowage = true
	default:
		out.stowage = true
		for i, d := range im.Manifests {
			if d.Annotations[AnnotationReference] == "" && d.Annotations[AnnotationTrust] == "" {
				out.stowage = false
				out.foreign = fmt.Sprintf("index.json has no %s annotation, and manifests[%d] (%s) no %s", AnnotationBundle, i, d.Digest, AnnotationReference)
				return out, nil
			}
		}
	}
	seen := map[string]v1.Hash{}
	for i, d := range im.Manifests {
		at := func(format string, args ...any) error {
			return where("manifests[%d] (%s): "+format, append([]any{i, d.Digest}, args...)...)
		}
		if _, ok := d.Annotations[AnnotationTrust]; ok {
			if out.trust != nil {
				return nil, at("a second %s descriptor; a bundle carries one", AnnotationTrust)
			}
			if err := checkTrustDescriptor(d); err != nil {
				return nil, at("%v", err)
			}
			out.trust = &d
			continue
		}
		out.descs = append(out.descs, d)
		if d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64 {
			return nil, at("digest: want sha256:<64 hex digits>")
		}
		if d.Size < 0 || d.Size > maxManifestBytes {
			return nil, at("size %d: a manifest is 0 to %d bytes", d.Size, maxManifestBytes)
		}
		if !d.MediaType.IsIndex() && !d.MediaType.IsImage() {
			return nil, at("mediaType %q is neither an image manifest nor an index", d.MediaType)
		}
		key := d.Annotations[AnnotationRefName]
		if key == "" {
			return nil, at("no %s annotation; this bundle was not written by stowage mirror", AnnotationRefName)
		}
		ref, err := name.ParseReference(key, name.StrictValidation)
		if err != nil {
			return nil, at("%s %q: %v", AnnotationRefName, key, err)
		}
		img := Image{Name: key, Written: d.Annotations[AnnotationReference], Source: ref.Context(),
			Tag: d.Annotations[AnnotationTag], Digest: d.Digest, Site: d.Annotations[AnnotationSite]}
		if img.Tag != "" {
			if _, err := name.NewTag(ref.Context().Name()+":"+img.Tag, name.StrictValidation); err != nil {
				return nil, at("%s %q: %v", AnnotationTag, img.Tag, err)
			}
		}
		if img.Site != "" {
			r, err := name.NewRepository(img.Site, name.StrictValidation)
			if err != nil || r.Name() != img.Site {
				return nil, at("%s %q: not a repository name (host[:port]/path)", AnnotationSite, img.Site)
			}
		}
		if img.Omitted, err = parseOmitted(d.Annotations[AnnotationOmitted]); err != nil {
			return nil, at("%s: %v", AnnotationOmitted, err)
		}
		if img.Carried, err = parseCarried(d.Annotations[AnnotationAttachments]); err != nil {
			return nil, at("%s: %v", AnnotationAttachments, err)
		}
		kind, subject := d.Annotations[AnnotationAttachment], d.Annotations[AnnotationSubject]
		switch {
		case kind == "" && subject == "":
		case !knownKind(kind):
			return nil, at("%s %q: want %s, %s, %s or %s", AnnotationAttachment, kind, KindSignature, KindAttestation, KindSBOM, KindReferrer)
		default:
			h, err := v1.NewHash(subject)
			if err != nil || h.Algorithm != "sha256" || len(h.Hex) != 64 {
				return nil, at("%s %q: want sha256:<64 hex digits>", AnnotationSubject, subject)
			}
			if want := attachmentTag(h, kind); kind != KindReferrer && img.Tag != want {
				return nil, at("%s %q: a %s attachment to %s is tagged %q", AnnotationTag, img.Tag, kind, h, want)
			}
			if kind == KindReferrer && img.Tag != "" {
				return nil, at("%s %q: a referrer has no tag", AnnotationTag, img.Tag)
			}
			img.Attachment = &Attachment{Subject: h, Kind: kind}
		}
		id := imageIdentity(img)
		if prev, ok := seen[id]; ok && prev != img.Digest {
			return nil, at("image %s is listed twice, at %s and %s", key, prev, img.Digest)
		}
		seen[id] = img.Digest
		out.images = append(out.images, img)
	}
	sort.SliceStable(out.images, func(i, j int) bool { return out.images[i].Name < out.images[j].Name })
	return out, nil
}
