package status

import (
	"bytes"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestDiskBudget: each node of the Submarine example's one pool holds the
// images its DaemonSets target, sized from the example's lock at the
// node's architecture (the helper and the Chinese notebook are indexes:
// amd64 2395 and 2415 bytes, arm64 2410 and 2430; the notebook 2407, the
// GPU notebook 2436), against its ephemeral-storage capacity times its
// kubelet's threshold. What a hostile API server may send is held: a
// capacity of 1e30 bytes saturates, a negative one counts as none, a
// threshold of 500% is not believed (the default 85% is assumed).
func TestDiskBudget(t *testing.T) {
	t.Parallel()
	exp, _ := submarine(t)
	f := newFixture(t, exp)
	node := func(name, arch, capacity string, extra map[string]string) {
		labels := map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: arch}
		for k, v := range extra {
			labels[k] = v
		}
		n := f.node(name, labels)
		if capacity != "" {
			n.Status.Capacity = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(capacity)}
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(capacity)}
		}
	}
	node("cpu-1", "amd64", "100Gi", nil)
	node("gpu-1", "arm64", "1e30", map[string]string{gpuKey: "true"})
	node("odd-1", "amd64", "-5Gi", nil)
	node("tiny-1", "amd64", "20k", nil)
	f.c.ImageGCHighThreshold = map[string]int{"cpu-1": 90, "gpu-1": 500}
	rep := Evaluate(f.exp, f.c)

	if len(rep.DiskBudget) != 1 {
		t.Fatalf("disk budget %+v, want one pool", rep.DiskBudget)
	}
	p := rep.DiskBudget[0]
	if p.Name != "kubernetes.io/os=linux" || p.Verdict != v1alpha1.DiskDoesNotFit || len(p.Pullers) != 1 || p.Pullers[0] != "submarine/jupyter-image-puller" {
		t.Errorf("pool %s verdict %s pullers %v", p.Name, p.Verdict, p.Pullers)
	}
	amd := v1alpha1.DiskVariant{Images: 3, CompressedBytes: 2395 + 2407 + 2415, OnDiskBytes: 4 * 7217}
	want := []DiskNode{
		{Node: "cpu-1", DiskVariant: withLimit(amd, 96_636_764_160, v1alpha1.DiskFits), CapacityBytes: 107_374_182_400, AllocatableBytes: 107_374_182_400, HighThresholdPercent: 90, ThresholdRead: true},
		// gpu-1's limit is MaxInt64 × 85 / 100 rounded down, exactly.
		{Node: "gpu-1", DiskVariant: v1alpha1.DiskVariant{Images: 4, CompressedBytes: 2410 + 2407 + 2430 + 2436, OnDiskBytes: 4 * 9683,
			LimitBytes: 7_839_866_231_326_559_435, Verdict: v1alpha1.DiskFits}, CapacityBytes: math.MaxInt64, AllocatableBytes: math.MaxInt64, HighThresholdPercent: 85},
		{Node: "odd-1", DiskVariant: withLimit(amd, 0, v1alpha1.DiskNoDisk), HighThresholdPercent: 85},
		{Node: "tiny-1", DiskVariant: withLimit(amd, 17_000, v1alpha1.DiskDoesNotFit), CapacityBytes: 20_000, AllocatableBytes: 20_000, HighThresholdPercent: 85},
	}
	if len(p.Nodes) != len(want) {
		t.Fatalf("nodes %+v", p.Nodes)
	}
	for i := range want {
		if got := p.Nodes[i]; !equalNode(got, want[i]) {
			t.Errorf("node %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}

	var out bytes.Buffer
	if err := WriteTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"NODE POOL               NODES  MOST ON DISK  SMALLEST LIMIT  VERDICT\n",
		"kubernetes.io/os=linux  4      38.73kB       17.00kB         does not fit\n",
		"disk: node odd-1 (pool kubernetes.io/os=linux): 3 images, about 28.87kB on disk (7.22kB compressed); the node reports no ephemeral-storage capacity\n",
		"disk: node tiny-1 (pool kubernetes.io/os=linux): 3 images, about 28.87kB on disk (7.22kB compressed); capacity 20.00kB × 85% (kubelet default assumed) = 17.00kB: does not fit, the kubelet's image GC would remove pre-pulled images\n",
		"disk: image GC thresholds unknown on 3 nodes (the kubelet's configz, read through nodes/proxy, refused or absent): kubelet default 85% assumed\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the table lacks %q:\n%s", line, out.String())
		}
	}
}

func withLimit(v v1alpha1.DiskVariant, limit int64, verdict string) v1alpha1.DiskVariant {
	v.LimitBytes, v.Verdict = limit, verdict
	return v
}

func equalNode(a, b DiskNode) bool {
	return a.Node == b.Node && a.Images == b.Images && a.CompressedBytes == b.CompressedBytes && a.OnDiskBytes == b.OnDiskBytes &&
		len(a.Unknown) == len(b.Unknown) && a.LimitBytes == b.LimitBytes && a.Verdict == b.Verdict && a.CapacityBytes == b.CapacityBytes &&
		a.AllocatableBytes == b.AllocatableBytes && a.HighThresholdPercent == b.HighThresholdPercent && a.ThresholdRead == b.ThresholdRead
}
