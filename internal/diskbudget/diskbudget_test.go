package diskbudget

import (
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// budget loads the CUE config src, locks every reference of sizes (a
// reference to its size; an index when the size is a map of platform to
// size) and returns the profile's disk budget.
func budget(t *testing.T, src string, sizes map[string]any) []v1alpha1.DiskPool {
	t.Helper()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/c.cue", Data: []byte(src)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{}
	c := byte('a')
	next := func() string { d := digest(c); c++; return d }
	for _, ref := range slices.Sorted(maps.Keys(sizes)) {
		size := sizes[ref]
		r, err := imageref.Parse(ref)
		if err != nil {
			t.Fatal(err)
		}
		e := lock.Entry{Name: r.Key(), Reference: ref, Digest: next(), Kind: lock.KindManifest}
		switch s := size.(type) {
		case int:
			e.Size = int64(s)
		case map[string]int:
			e.Kind = lock.KindIndex
			for _, pl := range []string{"linux/amd64", "linux/arm64"} {
				e.Platforms = append(e.Platforms, lock.Platform{Platform: pl, Digest: next(), Size: int64(s[pl])})
			}
		}
		l.Put(e)
	}
	p, err := plan.Build(cfg, "", l)
	if err != nil {
		t.Fatal(err)
	}
	return Vet(p, l)
}

const helper = `helper: image: "reg.example/helper:1"
`

// TestVetByNodeLabel: an environment chosen by a kernel label gives one
// variant per value, each holding its own driver plus the images every
// node of the pool holds (the helper and a common tool), and no other
// value's driver.
func TestVetByNodeLabel(t *testing.T) {
	t.Parallel()
	pools := budget(t, helper+`
environments: driver: byNodeLabel: {
	label: "kernel"
	references: {"5.15": "reg.example/driver:5.15", "6.8": "reg.example/driver:6.8"}
}
images: tool: reference: "reg.example/tool:1"
profiles: p: pullers: [{name: "gpu", namespace: "n", environments: ["driver"], images: ["tool"]}]
`, map[string]any{"reg.example/helper:1": 10_000_000, "reg.example/tool:1": 50_000_000,
		"reg.example/driver:5.15": 300_000_000, "reg.example/driver:6.8": 400_000_000})
	if len(pools) != 1 {
		t.Fatalf("%d pools, want 1: %+v", len(pools), pools)
	}
	got := pools[0]
	if got.Name != "kubernetes.io/os=linux" || !reflect.DeepEqual(got.Pullers, []string{"n/gpu"}) || got.Disk != nil || got.Verdict != v1alpha1.DiskNoDisk {
		t.Errorf("pool %q pullers %v disk %v verdict %q", got.Name, got.Pullers, got.Disk, got.Verdict)
	}
	want := []v1alpha1.DiskVariant{
		{NodeLabels: map[string]string{"kernel": "5.15"}, Images: 3, CompressedBytes: 360_000_000, OnDiskBytes: 1_440_000_000, Verdict: v1alpha1.DiskNoDisk},
		{NodeLabels: map[string]string{"kernel": "6.8"}, Images: 3, CompressedBytes: 460_000_000, OnDiskBytes: 1_840_000_000, Verdict: v1alpha1.DiskNoDisk},
	}
	if !reflect.DeepEqual(got.Variants, want) {
		t.Errorf("variants\n got %+v\nwant %+v", got.Variants, want)
	}
}

// TestVetPools: pullers with one nodeSelector share a pool and a digest
// two of them pull counts once; a puller without a selector adds to every
// pool; the declared disk of a pool's own puller applies to it, the
// profile's to the others.
func TestVetPools(t *testing.T) {
	t.Parallel()
	pools := budget(t, helper+`
images: {
	base: reference: "reg.example/base:1"
	cuda: reference: "reg.example/cuda:12"
	torch: reference: "reg.example/torch:2"
}
profiles: p: {
	nodeDisk: size: "10Gi"
	pullers: [
		{name: "all", namespace: "n", images: ["base"]},
		{name: "gpu-a", namespace: "n", images: ["cuda"], nodeSelector: pool: "gpu", nodeDisk: {size: "100G", imageGCHighThresholdPercent: 80}},
		{name: "gpu-b", namespace: "n", images: ["cuda", "torch"], nodeSelector: pool: "gpu"},
	]
}
`, map[string]any{"reg.example/helper:1": 1_000_000, "reg.example/base:1": 100_000_000,
		"reg.example/cuda:12": 5_000_000_000, "reg.example/torch:2": 10_000_000_000})
	if len(pools) != 2 {
		t.Fatalf("%d pools, want 2", len(pools))
	}
	all, gpu := pools[0], pools[1]
	if all.Name != "kubernetes.io/os=linux" || !reflect.DeepEqual(all.Pullers, []string{"n/all"}) {
		t.Errorf("first pool %q %v", all.Name, all.Pullers)
	}
	wantAll := v1alpha1.DiskVariant{Images: 2, CompressedBytes: 101_000_000, OnDiskBytes: 404_000_000, LimitBytes: 9126805504, Verdict: v1alpha1.DiskFits}
	if all.Disk == nil || all.Disk.Size != "10Gi" || !reflect.DeepEqual(all.Variants, []v1alpha1.DiskVariant{wantAll}) {
		t.Errorf("first pool disk %v variants %+v, want %+v", all.Disk, all.Variants, wantAll)
	}
	if gpu.Name != "kubernetes.io/os=linux,pool=gpu" || !reflect.DeepEqual(gpu.Pullers, []string{"n/all", "n/gpu-a", "n/gpu-b"}) {
		t.Errorf("gpu pool %q %v", gpu.Name, gpu.Pullers)
	}
	// helper + base + cuda (twice, once) + torch = 15.101 GB, 60.404 GB on
	// disk: below 80% of 100 GB.
	wantGPU := v1alpha1.DiskVariant{Images: 4, CompressedBytes: 15_101_000_000, OnDiskBytes: 60_404_000_000, LimitBytes: 80_000_000_000, Verdict: v1alpha1.DiskFits}
	if gpu.Disk == nil || gpu.Disk.Size != "100G" || !reflect.DeepEqual(gpu.Variants, []v1alpha1.DiskVariant{wantGPU}) || gpu.Verdict != v1alpha1.DiskFits {
		t.Errorf("gpu pool disk %v variants %+v verdict %s, want %+v", gpu.Disk, gpu.Variants, gpu.Verdict, wantGPU)
	}
}

// TestVetUnknownSizes: an image the lock has no size for is named, not
// counted; the verdict is unknown while the rest fits, and does not fit
// once the rest alone is too much.
func TestVetUnknownSizes(t *testing.T) {
	t.Parallel()
	src := helper + `
images: {
	a: reference: "reg.example/a:1"
	b: reference: "reg.example/b:1"
}
profiles: p: {
	nodeDisk: {size: "%s", imageGCHighThresholdPercent: 50}
	pullers: [{name: "x", namespace: "n", images: ["a", "b"]}]
}
`
	sizes := map[string]any{"reg.example/helper:1": 100, "reg.example/a:1": 200, "reg.example/b:1": 0}
	for _, c := range []struct{ size, verdict string }{{"3000", v1alpha1.DiskUnknown}, {"2000", v1alpha1.DiskDoesNotFit}} {
		pools := budget(t, strings.Replace(src, "%s", c.size, 1), sizes)
		v := pools[0].Variants[0]
		if v.Images != 3 || v.CompressedBytes != 300 || v.OnDiskBytes != 1200 || !reflect.DeepEqual(v.Unknown, []string{"reg.example/b:1@" + digest('b')}) || v.Verdict != c.verdict {
			t.Errorf("size %s: %+v, want 3 images, 300 bytes, 1200 on disk, b unknown, %s", c.size, v, c.verdict)
		}
	}
}

// TestVetThresholdEdge: exactly the limit fits, one compressed byte more
// (four on disk) does not.
func TestVetThresholdEdge(t *testing.T) {
	t.Parallel()
	src := helper + `
images: a: reference: "reg.example/a:1"
profiles: p: {
	nodeDisk: {size: "1000", imageGCHighThresholdPercent: 90}
	pullers: [{name: "x", namespace: "n", images: ["a"]}]
}
`
	for _, c := range []struct {
		a       int
		onDisk  int64
		verdict string
	}{{125, 900, v1alpha1.DiskFits}, {126, 904, v1alpha1.DiskDoesNotFit}} {
		v := budget(t, src, map[string]any{"reg.example/helper:1": 100, "reg.example/a:1": c.a})[0].Variants[0]
		if v.OnDiskBytes != c.onDisk || v.LimitBytes != 900 || v.Verdict != c.verdict {
			t.Errorf("a %d bytes: on disk %d, limit %d, %s; want %d, 900, %s", c.a, v.OnDiskBytes, v.LimitBytes, v.Verdict, c.onDisk, c.verdict)
		}
	}
}

// TestVetIndexAndArch: an index pin counts its largest child, or the
// child of the arch a pool's selector names.
func TestVetIndexAndArch(t *testing.T) {
	t.Parallel()
	pools := budget(t, helper+`
images: a: reference: "reg.example/a:1"
profiles: p: pullers: [
	{name: "any", namespace: "n", images: ["a"]},
	{name: "arm", namespace: "n", images: ["a"], nodeSelector: "kubernetes.io/arch": "arm64"},
]
`, map[string]any{"reg.example/helper:1": 1, "reg.example/a:1": map[string]int{"linux/amd64": 700, "linux/arm64": 500}})
	// The arm64 pool holds both pullers' a, one digest.
	if got := []int64{pools[0].Variants[0].CompressedBytes, pools[1].Variants[0].CompressedBytes}; !reflect.DeepEqual(got, []int64{501, 701}) || pools[0].Name != "kubernetes.io/arch=arm64,kubernetes.io/os=linux" {
		t.Errorf("compressed bytes %v of %s, %s; want 501 (arm64) and 701 (largest child)", got, pools[0].Name, pools[1].Name)
	}
}

// TestLimitNoOverflow: the limit of the largest sizes is exact and does
// not wrap; sums saturate.
func TestLimitNoOverflow(t *testing.T) {
	t.Parallel()
	for _, pct := range []int{1, 85, 99, 100} {
		want := new(big.Int).Mul(big.NewInt(math.MaxInt64), big.NewInt(int64(pct)))
		want.Quo(want, big.NewInt(100))
		if got := Limit(math.MaxInt64, pct); got != want.Int64() {
			t.Errorf("Limit(MaxInt64, %d) = %d, want %d", pct, got, want.Int64())
		}
	}
	if Limit(-5, 85) != 0 || Limit(100, 0) != 0 || Limit(100, 250) != 100 {
		t.Errorf("Limit of a negative size, a zero or too large percent: %d %d %d", Limit(-5, 85), Limit(100, 0), Limit(100, 250))
	}
	v := Sum([]Item{{Digest: "a", Bytes: math.MaxInt64, Known: true}, {Digest: "b", Bytes: math.MaxInt64, Known: true}}, math.MaxInt64, 100)
	if v.CompressedBytes != math.MaxInt64 || v.OnDiskBytes != math.MaxInt64 || v.Verdict != v1alpha1.DiskFits {
		t.Errorf("saturated sum %+v", v)
	}
}

// TestVetWorstCase: per-image selectors other than byNodeLabel's are
// taken at their worst case: two environments for two GPU products never
// meet on one node, so the pool's line holds the larger (8 GB) beside the
// helper, not both; an environment selecting on another label (a region)
// adds to it, since a node may carry both labels.
func TestVetWorstCase(t *testing.T) {
	t.Parallel()
	pools := budget(t, helper+`
environments: {
	t4: {image: "reg.example/t4:1", nodeSelector: "nvidia.com/gpu.product": "Tesla-T4"}
	a100: {image: "reg.example/a100:1", nodeSelector: "nvidia.com/gpu.product": "A100"}
	eu: {image: "reg.example/eu:1", nodeSelector: "topology.kubernetes.io/region": "eu"}
}
profiles: p: pullers: [{name: "gpu", namespace: "n", environments: ["t4", "a100", "eu"]}]
`, map[string]any{"reg.example/helper:1": 1_000, "reg.example/t4:1": 5_000_000_000, "reg.example/a100:1": 8_000_000_000, "reg.example/eu:1": 2_000_000_000})
	want := []v1alpha1.DiskVariant{{Images: 3, CompressedBytes: 10_000_001_000, OnDiskBytes: 40_000_004_000, Verdict: v1alpha1.DiskNoDisk}}
	if len(pools) != 1 || !reflect.DeepEqual(pools[0].Variants, want) {
		t.Errorf("variants %+v, want %+v", pools, want)
	}
}

// TestPlacementAgreesWithRender: the selector the budget gives each use
// (the puller's, then plan.Use.Placement) is the nodeSelector of the
// DaemonSet render puts it in, for byNodeLabel choices, environments'
// selectors and single platforms.
func TestPlacementAgreesWithRender(t *testing.T) {
	t.Parallel()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/c.cue", Data: []byte(helper + `
environments: {
	driver: {nodeSelector: gpu: "yes", byNodeLabel: {label: "kernel", references: {"5.15": "reg.example/driver:5.15", "6.8": "reg.example/driver:6.8"}}}
	lab: {image: "reg.example/lab:1", nodeSelector: zone: "a"}
}
images: {
	arm: {reference: "reg.example/arm:1", platforms: ["linux/arm64"]}
	tool: reference: "reg.example/tool:1"
}
profiles: p: pullers: [{name: "x", namespace: "n", nodeSelector: pool: "gpu", environments: ["driver", "lab"], images: ["arm", "tool"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{}
	c := byte('a')
	for _, ref := range []string{"reg.example/helper:1", "reg.example/driver:5.15", "reg.example/driver:6.8", "reg.example/lab:1", "reg.example/tool:1"} {
		r, _ := imageref.Parse(ref)
		l.Put(lock.Entry{Name: r.Key(), Reference: ref, Digest: digest(c), Kind: lock.KindManifest, Size: 1})
		c++
	}
	l.Put(lock.Entry{Name: "reg.example/arm:1", Reference: "reg.example/arm:1", Digest: digest('0'), Kind: lock.KindIndex,
		Platforms: []lock.Platform{{Platform: "linux/amd64", Digest: digest('1'), Size: 1}, {Platform: "linux/arm64", Digest: digest('2'), Size: 1}}})
	p, err := plan.Build(cfg, "", l)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := placeholderRender(t, "cfg", cfg, "", l)
	if err != nil {
		t.Fatal(err)
	}
	// Each pinned image to the selector of the DaemonSet pulling it.
	rendered := map[string]map[string]string{}
	for _, o := range objs {
		ds, ok := o.Object.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		for _, ct := range ds.Spec.Template.Spec.InitContainers {
			rendered[ct.Image] = ds.Spec.Template.Spec.NodeSelector
		}
	}
	pool := Pools(p)[0]
	checked := 0
	for _, pu := range placements(pool) {
		if pu.use.Kind == plan.KindHelper {
			continue // in every DaemonSet
		}
		got, ok := rendered[pu.use.Pinned()]
		if !ok {
			t.Errorf("%s: no DaemonSet pulls %s", pu.use.Item(), pu.use.Pinned())
			continue
		}
		checked++
		if !maps.Equal(got, pu.sel) {
			t.Errorf("%s: budget's selector %v, render's %v", pu.use.Item(), pu.sel, got)
		}
	}
	if checked != 5 {
		t.Errorf("%d uses checked, want 5 (two drivers, lab, arm, tool)", checked)
	}
}

// placeholderRender renders profile of cfg with l through the public
// pipeline as status and vet do: placeholder passwords, the trust files
// read from dir.
func placeholderRender(t *testing.T, dir string, cfg *v1alpha1.Config, profile string, l *lock.Lock) ([]render.Object, error) {
	t.Helper()
	pw, trust, err := render.ReadNeeded(dir, cfg, profile, nil, render.Placeholders(false))
	if err != nil {
		return nil, err
	}
	return render.Render(render.Input{Config: cfg, Lock: l.Object(), Profile: profile, Passwords: pw, Trust: trust})
}
