package lock

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

func manifestSize(t *testing.T, img v1.Image) int64 {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	size := m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size
}

func TestManifestEntry(t *testing.T) {
	t.Parallel()
	img, err := random.Image(100, 3)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ManifestEntry(img)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	if e.Digest != h.String() || e.Kind != KindManifest || e.Size != manifestSize(t, img) || e.Platforms != nil {
		t.Errorf("ManifestEntry = %+v, want digest %s, kind manifest, size %d, no platforms", e, h, manifestSize(t, img))
	}
	if e.Size <= 300 {
		t.Errorf("Size = %d, want more than the 300 bytes of layer content", e.Size)
	}
}

func TestIndexEntry(t *testing.T) {
	t.Parallel()
	child := func(seed int64) v1.Image {
		img, err := random.Image(50+seed, 1)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	amd, arm, dup, attest := child(1), child(2), child(3), child(4)
	nested, err := random.Index(10, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		// Listed out of order: IndexEntry sorts by platform.
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: dup, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: attest, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}},
		mutate.IndexAddendum{Add: nested, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
	)
	e, err := IndexEntry(idx)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := idx.Digest()
	amdDigest, _ := amd.Digest()
	armDigest, _ := arm.Digest()
	want := Entry{Digest: h.String(), Kind: KindIndex, Platforms: []Platform{
		{Platform: "linux/amd64", Digest: amdDigest.String(), Size: manifestSize(t, amd)},
		{Platform: "linux/arm64/v8", Digest: armDigest.String(), Size: manifestSize(t, arm)},
	}}
	if e.Digest != want.Digest || e.Kind != want.Kind || e.Size != 0 || len(e.Platforms) != len(want.Platforms) {
		t.Fatalf("IndexEntry = %+v, want %+v", e, want)
	}
	for i := range want.Platforms {
		if e.Platforms[i] != want.Platforms[i] {
			t.Errorf("Platforms[%d] = %+v, want %+v", i, e.Platforms[i], want.Platforms[i])
		}
	}
}
