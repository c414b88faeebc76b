package mirror

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestArtifactsThroughBundle carries model artifacts of each kind (an OCI
// image of model files, the empty config with raw layers, a config media
// type of its own; all with an artifactType) through a bundle to a site
// registry: each lands under its site repository with the same manifest
// bytes, its artifactType and config media type intact, and every blob,
// the config included, readable there.
func TestArtifactsThroughBundle(t *testing.T) {
	src, _ := startRegistry(t)
	dst, _ := startRegistry(t)
	r, err := registry.New(registry.WithInsecure(src, dst), registry.WithKeychain(authn.NewMultiKeychain()), registry.WithRetry(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	files := []registrytest.ArtifactFile{
		{Name: "config.json", Data: []byte(`{"model_type":"llama"}`)},
		{Name: "model.safetensors", Data: registrytest.PseudoRandom("mirror", 200<<10)},
	}
	m := site.Mapping{Registries: map[string]string{src: dst + "/site"}}
	var images []Image
	raws := map[string][]byte{}
	for kind, repo := range map[registrytest.ArtifactKind]string{
		registrytest.ArtifactImage:        "models/image",
		registrytest.ArtifactEmptyConfig:  "models/empty",
		registrytest.ArtifactCustomConfig: "models/custom",
	} {
		a, err := registrytest.Artifact(kind, "application/vnd.cncf.model.manifest.v1+json", files)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(src+"/"+repo+":v1", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, a); err != nil {
			t.Fatal(err)
		}
		to, err := m.Repository(ref.Context())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := a.RawManifest()
		if err != nil {
			t.Fatal(err)
		}
		raws[to.Name()] = raw
		images = append(images, Image{Name: ref.Context().Name() + ":v1", Source: ref.Context(), Tag: "v1", Digest: registrytest.Digest(t, a), Site: to.Name()})
	}
	b := filepath.Join(t.TempDir(), "bundle")
	to, err := New(WithResolver(r), WithJobs(4), WithToLayout(b, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runAll(t, to, images); err != nil {
		t.Fatalf("into the bundle: %v", err)
	}
	got, _, err := BundleImages(b)
	if err != nil {
		t.Fatal(err)
	}
	from, err := New(WithResolver(r), WithJobs(4), WithFromLayout(b), WithToImageSites())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runAll(t, from, got); err != nil {
		t.Fatalf("from the bundle to the site: %v", err)
	}
	for _, img := range images {
		repo, err := name.NewRepository(img.Site, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Get(repo.Tag("v1"))
		if err != nil {
			t.Fatalf("%s at the site: %v", img.Name, err)
		}
		if d.Digest != img.Digest || !bytes.Equal(d.Manifest, raws[img.Site]) {
			t.Errorf("%s at %s: digest %s, want %s; manifest %s", img.Name, img.Site, d.Digest, img.Digest, d.Manifest)
		}
		at, err := d.Image()
		if err != nil {
			t.Fatal(err)
		}
		man, err := at.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if man.ArtifactType != "application/vnd.cncf.model.manifest.v1+json" {
			t.Errorf("%s: artifactType %q", img.Name, man.ArtifactType)
		}
		for _, desc := range append(man.Layers, man.Config) {
			l, err := remote.Layer(repo.Digest(desc.Digest.String()))
			if err != nil {
				t.Fatal(err)
			}
			rc, err := l.Compressed()
			if err != nil {
				t.Fatalf("%s: blob %s (%s) at the site: %v", img.Name, desc.Digest, desc.MediaType, err)
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil || n != desc.Size {
				t.Errorf("%s: blob %s (%s): %d bytes, %v; want %d", img.Name, desc.Digest, desc.MediaType, n, err, desc.Size)
			}
		}
	}
}
