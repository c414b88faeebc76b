package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/testing/registrytest"
)

// rawIndex is an index manifest pushed as its bytes.
type rawIndex []byte

func (r rawIndex) RawManifest() ([]byte, error)        { return r, nil }
func (r rawIndex) MediaType() (types.MediaType, error) { return types.OCIImageIndex, nil }

// pushDAG pushes to repo an index graph of levels: dagWidth image
// manifests at the bottom, dagLevels levels of dagWidth indexes above
// them, each listing dagFanOut manifests of the level below (shared: every
// manifest of a level is listed by dagFanOut indexes of the level above),
// and one top index listing the top level, tagged v1. It returns the top's digest
// and how many distinct manifests the graph has.
func pushDAG(t *testing.T, repo name.Repository) (v1.Hash, int) {
	t.Helper()
	const dagWidth, dagLevels, dagFanOut = 250, 3, 40
	layer := registrytest.Layer("dag", 64)
	base, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	var below []v1.Descriptor
	for i := range dagWidth {
		img := mutate.Annotations(base, map[string]string{"leaf": fmt.Sprint(i)}).(v1.Image)
		h := registrytest.Digest(t, img)
		if err := remote.Write(repo.Digest(h.String()), img); err != nil {
			t.Fatal(err)
		}
		raw, _ := img.RawManifest()
		below = append(below, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h, Size: int64(len(raw))})
	}
	nodes := dagWidth
	put := func(level, i int, children []v1.Descriptor) v1.Descriptor {
		im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: children,
			Annotations: map[string]string{"node": fmt.Sprintf("%d/%d", level, i)}}
		raw, err := json.Marshal(im)
		if err != nil {
			t.Fatal(err)
		}
		d := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: digestOf(raw), Size: int64(len(raw))}
		var ref name.Reference = repo.Digest(d.Digest.String())
		if level == dagLevels {
			ref = repo.Tag("v1")
		}
		if err := remote.Put(ref, rawIndex(raw)); err != nil {
			t.Fatal(err)
		}
		nodes++
		return d
	}
	for level := range dagLevels {
		var here []v1.Descriptor
		for i := range dagWidth {
			var children []v1.Descriptor
			for j := range dagFanOut {
				children = append(children, below[(i+j*7)%dagWidth])
			}
			here = append(here, put(level, i, children))
		}
		below = here
	}
	top := put(dagLevels, 0, below)
	return top.Digest, nodes
}

// TestIndexDAGVisitsEachManifestOnce: an image whose index graph shares
// children (1,001 distinct manifests, 16 million paths from the top) is
// refused by an operator's WithMaxManifests one below that, naming the
// bound; without it, it is planned and copied to a bundle, planned again
// there (present), and pushed from the bundle to a registry, each
// manifest read from the source once and written once, with allocations
// bounded by the distinct manifests: each level of the graph is walked
// once per manifest, not once per path (which took gigabytes).
func TestIndexDAGVisitsEachManifestOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	repo, err := name.NewRepository(f.src+"/dag/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	top, nodes := pushDAG(t, repo)
	img := Image{Name: repo.Tag("v1").Name(), Source: repo, Tag: "v1", Digest: top}
	bounded := func(what string, f func()) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		// Each phase allocates some 50 to 210 MiB in all (server side
		// included; mostly JSON decoding of the graph's 10 MB of
		// manifests, each parsed a few times); a walk of its 16 million
		// paths allocates gigabytes. Allocated, not live: a bound on
		// work, stable across GC timing.
		got := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d MiB allocated", what, got>>20)
		if got > 384<<20 {
			t.Errorf("%s allocated %d MiB, want at most 384", what, got>>20)
		}
	}

	// The operator's bound: one manifest fewer than the graph has.
	small, err := f.mirror(t, WithToLayout(filepath.Join(t.TempDir(), "small"), nil), WithMaxManifests(nodes-1)).Plan(ctx, []Image{img})
	if err != nil || len(small.Errors) != 1 || !strings.Contains(small.Errors[0].Error(), fmt.Sprintf("the image has more than %d distinct manifests (--max-manifests)", nodes-1)) {
		t.Errorf("--max-manifests %d: %v %v, want the image refused naming the bound", nodes-1, err, small.Errors)
	}

	bundle := filepath.Join(t.TempDir(), "bundle")
	m := f.mirror(t, WithToLayout(bundle, nil))
	f.srcCount.reset()
	bounded("the plan and copy into a bundle", func() {
		plan, err := m.Plan(ctx, []Image{img})
		if err != nil || len(plan.Errors) > 0 {
			t.Fatalf("plan: %v %v", err, plan.Errors)
		}
		if plan.Manifests != nodes {
			t.Errorf("plan writes %d manifests, want %d", plan.Manifests, nodes)
		}
		if _, err := m.Run(ctx, plan); err != nil {
			t.Fatal(err)
		}
	})
	if n := f.srcCount.count("GET manifest"); n != nodes {
		t.Errorf("the source served %d manifest GETs, want each of the %d once", n, nodes)
	}
	bounded("the plan again (the bundle holds it)", func() {
		plan, err := f.mirror(t, WithToLayout(bundle, nil)).Plan(ctx, []Image{img})
		if err != nil || len(plan.Errors) > 0 || !plan.Images[0].Present {
			t.Fatalf("plan again: %v %v, want present", err, plan.Errors)
		}
	})

	f.dstCount.reset()
	bounded("the push from the bundle", func() {
		push := f.mirror(t, WithFromLayout(bundle), WithToSite(f.site()))
		plan, err := push.Plan(ctx, []Image{img})
		if err != nil || len(plan.Errors) > 0 {
			t.Fatalf("plan from the bundle: %v %v", err, plan.Errors)
		}
		if _, err := push.Run(ctx, plan); err != nil {
			t.Fatal(err)
		}
	})
	if n := f.dstCount.count("PUT manifest"); n != nodes {
		t.Errorf("the site got %d manifest PUTs, want each of the %d once", n, nodes)
	}
	if n := f.dstCount.count("HEAD manifest"); n > nodes+2 {
		t.Errorf("the site got %d manifest HEADs, want at most one per manifest (%d) and the tag's", n, nodes)
	}
	to, _ := f.site().Repository(repo, name.Insecure)
	if d, err := remote.Head(to.Tag("v1")); err != nil || d.Digest != top {
		t.Errorf("site tag: %v %v, want %s", d, err, top)
	}
}
