package registry_test

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestLockArtifacts locks model artifacts of every kind a registry
// serves: an OCI image whose layers are model files, an OCI 1.1 artifact
// with the empty config and raw layers, and one with a config media type
// of its own; each with an artifactType. Each entry is a single manifest
// of the pushed digest whose size is its config plus layers, then bumped
// (one HEAD, unchanged).
func TestLockArtifacts(t *testing.T) {
	h, _ := server(t)
	r := resolver(t, registry.WithInsecure(h))
	files := []registrytest.ArtifactFile{
		{Name: "config.json", Data: []byte(`{"model_type":"llama"}`)},
		{Name: "model.safetensors", Data: registrytest.PseudoRandom("lock", 64<<10)},
	}
	var imgs []*plan.Image
	want := map[string]lock.Entry{}
	for kind, repo := range map[registrytest.ArtifactKind]string{
		registrytest.ArtifactImage:        "models/image:v1",
		registrytest.ArtifactEmptyConfig:  "models/empty:v1",
		registrytest.ArtifactCustomConfig: "models/custom:v1",
	} {
		a, err := registrytest.Artifact(kind, "application/vnd.cncf.model.manifest.v1+json", files)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(h+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, a); err != nil {
			t.Fatalf("push %s: %v", ref, err)
		}
		m, err := a.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		size := m.Config.Size
		for _, l := range m.Layers {
			size += l.Size
		}
		img := image(t, ref.String())
		imgs = append(imgs, img)
		want[img.Key] = lock.Entry{Name: img.Key, Reference: ref.String(), Digest: mustDigest(t, a), Kind: lock.KindManifest, Size: size}
	}
	l, err := r.Lock(context.Background(), nil, imgs, registry.Fill)
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range want {
		got, ok := l.Lookup(k)
		if !ok || got.Digest != w.Digest || got.Kind != w.Kind || got.Size != w.Size || got.Reference != w.Reference {
			t.Errorf("entry %s = %+v, want %+v", k, got, w)
		}
	}
	bumped, err := r.Lock(context.Background(), l, imgs, registry.Refresh)
	if err != nil {
		t.Fatal(err)
	}
	if string(bumped.Marshal()) != string(l.Marshal()) {
		t.Errorf("a bump of unchanged artifacts changed the lock:\n%s\nto\n%s", l.Marshal(), bumped.Marshal())
	}
}

func mustDigest(t *testing.T, img v1.Image) string {
	t.Helper()
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}
