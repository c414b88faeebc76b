package e2e

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestStatusDiskBudget applies the rendered Submarine example to a real
// API server, creates three nodes with the ephemeral-storage capacity a
// kubelet reports (100Gi; 10^30 bytes, which the API server takes; 20k),
// and runs the real `stowage status` binary twice: as a user holding only
// examples/status/rbac.yaml's ClusterRole (nodes/proxy refused) and as a
// cluster admin (nodes/proxy allowed, but no kubelet answers here). Each
// node's bytes come from the example's lock at the node's architecture:
// amd64 nodes hold the helper (2395), the notebook (2407) and the Chinese
// notebook (2415); the arm64 GPU node the helper (2410), both notebooks
// (2407, 2430) and the GPU notebook (2436). Both runs assume the kubelet's
// 85% and say so; the 20k node cannot hold its 28868 bytes on disk.
func TestStatusDiskBudget(t *testing.T) {
	c := startAPIServer(t)
	bin := buildStowage(t)
	ctx := context.Background()
	dir := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	cfg, l := loadExample(t, dir)
	objs := manifests(t, renderProfile(t, cfg, dir, "notebooks", l, exampleEnv))
	c.createNamespaces(t, objs)
	c.apply(t, objs)
	c.apply(t, readManifests(t, filepath.Join(repoRoot, "examples", "status", "rbac.yaml")))
	core, err := coreclient.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := rbacclient.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := c.env.AddUser(envtest.User{Name: "stowage-disk-e2e"}, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "stowage-disk-e2e"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "stowage-status"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "stowage-disk-e2e"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admin, err := c.env.AddUser(envtest.User{Name: "stowage-disk-admin", Groups: []string{"system:masters"}}, c.cfg)
	if err != nil {
		t.Fatal(err)
	}

	for _, n := range []struct {
		name, arch, capacity, allocatable string
		gpu                               bool
	}{
		{"cpu-1", "amd64", "100Gi", "90Gi", false},
		{"gpu-1", "arm64", "1e30", "1e30", true},
		{"tiny-1", "amd64", "20k", "20k", false},
	} {
		labels := map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: n.arch}
		if n.gpu {
			labels["nvidia.com/gpu.present"] = "true"
		}
		node, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Ready, as a kubelet and the node lifecycle controller (neither
		// runs here) would leave it: no not-ready taint.
		node.Spec.Taints = nil
		if node, err = core.Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(n.capacity)}
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(n.allocatable)}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := core.Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node %s status: %v", n.name, err)
		}
	}

	type facts struct {
		images                int
		compressed, onDisk    int64
		capacity, allocatable int64
		limit                 int64
		percent               int
		read                  bool
		verdict               string
	}
	want := map[string]facts{
		"cpu-1":  {3, 7217, 28868, 107_374_182_400, 96_636_764_160, 91_268_055_040, 85, false, v1alpha1.DiskFits},
		"gpu-1":  {4, 9683, 38732, math.MaxInt64, math.MaxInt64, 7_839_866_231_326_559_435, 85, false, v1alpha1.DiskFits},
		"tiny-1": {3, 7217, 28868, 20_000, 20_000, 17_000, 85, false, v1alpha1.DiskDoesNotFit},
	}
	for _, run := range []struct {
		name string
		user *envtest.AuthenticatedUser
	}{{"rbac.yaml's reader", reader}, {"cluster admin", admin}} {
		kubeconfig := writeKubeconfig(t, run.user)
		start := time.Now()
		stdout, stderr, code := runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "-o", "json")
		took := time.Since(start)
		rep := decodeReport(t, stdout)
		if code != 1 || len(rep.DiskBudget) != 1 {
			t.Fatalf("%s: exit %d (want 1: no DaemonSet observed), disk budget %+v\n%s", run.name, code, rep.DiskBudget, stderr)
		}
		p := rep.DiskBudget[0]
		if p.Name != "kubernetes.io/os=linux" || p.Verdict != v1alpha1.DiskDoesNotFit || len(p.Nodes) != 3 {
			t.Errorf("%s: pool %s verdict %s with %d nodes", run.name, p.Name, p.Verdict, len(p.Nodes))
		}
		for _, n := range p.Nodes {
			got := facts{n.Images, n.CompressedBytes, n.OnDiskBytes, n.CapacityBytes, n.AllocatableBytes, n.LimitBytes, n.HighThresholdPercent, n.ThresholdRead, n.Verdict}
			if got != want[n.Node] {
				t.Errorf("%s: node %s\n got %+v\nwant %+v", run.name, n.Node, got, want[n.Node])
			}
		}
		t.Logf("%s: status in %v", run.name, took.Round(time.Millisecond))

		stdout, _, _ = runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig)
		for _, line := range []string{
			"kubernetes.io/os=linux  3      38.73kB       17.00kB         does not fit",
			"disk: node tiny-1 (pool kubernetes.io/os=linux): 3 images, about 28.87kB on disk (7.22kB compressed); capacity 20.00kB × 85% (kubelet default assumed) = 17.00kB: does not fit",
			"disk: image GC thresholds unknown on 3 nodes",
		} {
			if !strings.Contains(stdout, line) {
				t.Errorf("%s: the table lacks %q:\n%s", run.name, line, stdout)
			}
		}
	}
}
