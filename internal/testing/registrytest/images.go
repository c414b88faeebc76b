package registrytest

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Layer is an uncompressed OCI layer of n bytes derived from seed (not
// empty): the same seed and n give the same layer, so tests can share a
// base layer between images by building it twice.
func Layer(seed string, n int) v1.Layer {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed[i%len(seed)] ^ byte(i/len(seed))
	}
	return static.NewLayer(b, types.OCILayer)
}

// Image is an OCI image (OCI manifest and config media types) of layers,
// in order; it fails tb if the layers cannot be added.
func Image(tb testing.TB, layers ...v1.Layer) v1.Image {
	tb.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// Index is an OCI image index of two children: amd64 for linux/amd64 and
// arm64 for linux/arm64, in that order.
func Index(amd64, arm64 v1.Image) v1.ImageIndex {
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: amd64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
}

// Digest is the digest of an image, index or layer; it fails tb if it
// cannot be computed.
func Digest(tb testing.TB, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	tb.Helper()
	h, err := d.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// Ref parses an image reference (name.ParseReference); it fails tb on a
// malformed one.
func Ref(tb testing.TB, s string) name.Reference {
	tb.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		tb.Fatal(err)
	}
	return ref
}

// Push writes img (or idx, exactly one of them not nil) as repo:tag to the
// plain-HTTP registry host, anonymously, and returns the tag and the digest
// written; it fails tb on any error.
func Push(tb testing.TB, host, repo, tag string, img v1.Image, idx v1.ImageIndex) (name.Tag, v1.Hash) {
	tb.Helper()
	ref, err := name.NewTag(host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		tb.Fatal(err)
	}
	var h v1.Hash
	switch {
	case (img == nil) == (idx == nil):
		tb.Fatalf("push %s: give exactly one of an image or an index", ref)
	case img != nil:
		err, h = remote.Write(ref, img), Digest(tb, img)
	default:
		err, h = remote.WriteIndex(ref, idx), Digest(tb, idx)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return ref, h
}

// PushRandom writes a new random image (one 512-byte layer, OCI manifest
// media type) to ref, a tag or a digest on a plain-HTTP registry, and
// returns its descriptor; it fails tb on any error. Each call makes
// another image, so signing one leaves the others unsigned.
func PushRandom(tb testing.TB, ref name.Reference) v1.Descriptor {
	tb.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		tb.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	if err := remote.Write(ref, img); err != nil {
		tb.Fatal(err)
	}
	size, err := img.Size()
	if err != nil {
		tb.Fatal(err)
	}
	return v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: Digest(tb, img), Size: size}
}
