// Package offlineimage builds deterministic stand-in images for references
// whose registries cannot be reached (offline examples, tests): the same
// reference gives the same bytes, hence the same digests, on every machine
// and in every run.
//
// A stand-in is derived from the lock key of the reference (imageref.Ref.Key), so
// every spelling of one image ("busybox:1.31.1",
// "docker.io/library/busybox:1.31.1") has the same stand-in. Each image has
// OCI media types, one uncompressed tar layer holding a single file,
// "stowage-standin.txt", that names the key and the platform (mode 0644,
// uid/gid 0, mtime the Unix epoch), and a config whose created time is the
// Unix epoch. The layer is left uncompressed so that no compressor's output,
// which may change between Go releases, enters a digest.
//
// The rule for the kind: a reference is a multi-arch index when the first
// byte of sha256(lock key) is even, with two children, linux/amd64 and
// linux/arm64/v8 in that order, that differ only by their platform
// (config os/architecture/variant and layer text); otherwise it is a single
// linux/amd64 manifest. A stand-in never matches a digest written in
// the reference ("repo@sha256:…").
package offlineimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
)

// platforms are the children of a multi-arch stand-in, in index order.
var platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// single is the platform of a single-manifest stand-in.
var single = v1.Platform{OS: "linux", Architecture: "amd64"}

// epoch is the created time of every stand-in: the Unix epoch, in UTC.
var epoch = time.Unix(0, 0).UTC()

// key is the lock key of ref: imageref.Ref.Key of its spelling.
func key(ref name.Reference) (string, error) {
	r, err := imageref.Parse(ref.String())
	if err != nil {
		return "", err
	}
	return r.Key(), nil
}

// IsIndex reports whether the stand-in for ref is a multi-arch index: the
// first byte of sha256 of its lock key is even. A reference imageref.Parse
// refuses has no stand-in (For fails) and is not an index.
func IsIndex(ref name.Reference) bool {
	k, err := key(ref)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(k))
	return sum[0]%2 == 0
}

// For returns the stand-in for a reference: exactly one of img (a single
// manifest) or idx (a multi-arch index) is non-nil, following IsIndex.
func For(ref name.Reference) (img v1.Image, idx v1.ImageIndex, err error) {
	key, err := key(ref)
	if err != nil {
		return nil, nil, fmt.Errorf("stand-in: %w", err)
	}
	if !IsIndex(ref) {
		img, err := image(key, single)
		if err != nil {
			return nil, nil, fmt.Errorf("stand-in for %s: %w", key, err)
		}
		return img, nil, nil
	}
	adds := make([]mutate.IndexAddendum, 0, len(platforms))
	for _, p := range platforms {
		child, err := image(key, p)
		if err != nil {
			return nil, nil, fmt.Errorf("stand-in for %s, %s: %w", key, p.String(), err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: child, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return nil, mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// Entry returns the lock entry the stand-in of the reference written (as in a
// config, e.g. "busybox:1.31.1") resolves to: Name the lock key, Reference
// written, the digest, the kind, and for an index its platforms with child
// digests and sizes, for a manifest its size (bytes, config plus layer).
func Entry(written string) (lock.Entry, error) {
	ref, err := name.ParseReference(written)
	if err != nil {
		return lock.Entry{}, fmt.Errorf("stand-in for %q: %w", written, err)
	}
	img, idx, err := For(ref)
	if err != nil {
		return lock.Entry{}, err
	}
	var e lock.Entry
	if idx != nil {
		e, err = lock.IndexEntry(idx)
	} else {
		e, err = lock.ManifestEntry(img)
	}
	if err != nil {
		return lock.Entry{}, fmt.Errorf("stand-in for %q: %w", written, err)
	}
	if e.Name, err = key(ref); err != nil {
		return lock.Entry{}, err
	}
	e.Reference = written
	return e, nil
}

// image is the single-platform stand-in of key for platform p.
func image(key string, p v1.Platform) (v1.Image, error) {
	content, err := layerTar(key, p)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(
		mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		mutate.Addendum{
			Layer:   static.NewLayer(content, types.OCIUncompressedLayer),
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "stowage stand-in"},
		},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: epoch}
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	cfg.Config.Labels = map[string]string{"dev.stowage.standin": key}
	return mutate.ConfigFile(img, cfg)
}

// layerTar is the layer content: one file naming key and platform.
func layerTar(key string, p v1.Platform) ([]byte, error) {
	body := fmt.Sprintf("stowage stand-in image\nreference: %s\nplatform: %s\n", key, p.String())
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     "stowage-standin.txt",
		Mode:     0o644,
		Size:     int64(len(body)),
		ModTime:  epoch,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
