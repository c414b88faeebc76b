package mirror

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// FuzzBundleIndex: any bytes as a bundle's index.json: no panic; the same
// result twice; an error always names the bundle and index.json; a layout
// taken as stowage's lists exactly one image per descriptor, each with a
// name, a sha256 digest, a tag and site that parse, at most MaxOmitted
// left-out blobs, no two at different digests under one name, tag and
// site (an attachment: of a known kind, with a sha256 subject, tagged
// as cosign tags it unless a referrer); a foreign one says why.
func FuzzBundleIndex(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "index-*.json"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schemaVersion":2,"manifests":[]}`))
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":-1,"digest":"sha256:` + strings.Repeat("0", 64) + `"}]}`))
	f.Add([]byte(`{"schemaVersion":2,"annotations":{"dev.stowage.bundle":"2"},"manifests":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/b"
		idx, err := parseBundleIndex(data, path)
		idx2, err2 := parseBundleIndex(data, path)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two parses differ: %v / %v", err, err2)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "oci:/b: index.json: ") {
				t.Fatalf("error %q does not name the bundle's index.json", err)
			}
			return
		}
		if !idx.stowage {
			if idx.foreign == "" || len(idx.images) != 0 {
				t.Fatalf("a foreign layout with no reason, or with images: %+v", idx)
			}
			return
		}
		if len(idx.images) != len(idx.descs) || len(idx2.images) != len(idx.images) {
			t.Fatalf("%d images from %d descriptors", len(idx.images), len(idx.descs))
		}
		seen := map[string]string{}
		for _, img := range idx.images {
			if img.Name == "" || img.Digest.Algorithm != "sha256" || len(img.Digest.Hex) != 64 {
				t.Fatalf("image %+v", img)
			}
			if img.Tag != "" {
				if _, err := name.NewTag(img.Source.Name()+":"+img.Tag, name.StrictValidation); err != nil {
					t.Fatalf("tag %q accepted: %v", img.Tag, err)
				}
			}
			if img.Site != "" {
				if _, err := name.NewRepository(img.Site, name.StrictValidation); err != nil {
					t.Fatalf("site %q accepted: %v", img.Site, err)
				}
			}
			if len(img.Omitted) > MaxOmitted {
				t.Fatalf("%d left-out blobs accepted", len(img.Omitted))
			}
			if a := img.Attachment; a != nil {
				if !knownKind(a.Kind) || a.Subject.Algorithm != "sha256" || len(a.Subject.Hex) != 64 || (a.Kind == KindReferrer) != (img.Tag == "") {
					t.Fatalf("attachment %+v of %+v accepted", a, img)
				}
			}
			id := imageIdentity(img)
			if d, ok := seen[id]; ok && d != img.Digest.String() {
				t.Fatalf("%s accepted at %s and %s", img.Name, d, img.Digest)
			}
			seen[id] = img.Digest.String()
		}
	})
}
