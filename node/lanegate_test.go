package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/stowage/stowage/internal/lock"
)

// laneImageRefs are the images of the lanes puller's lanes, in lane order:
// by the lock's sizes the larger (lane-a, 6 MiB of data) goes to lane 1,
// the other to lane 2 (docs/new-nodes.md, "Pulling in parallel lanes").
var laneImageRefs = []string{laneARef, laneBRef}

// checkLaneDaemonSets checks the rendered output of the puller "lanes"
// (lanes: 2, startup taint laneTaint): two DaemonSets, lanes-l1 and
// lanes-l2, each pulling one of the images (pinned to the lock), each
// tolerating the startup taint and running the startup helper, which names
// both lanes as the parts it waits for. It returns them in lane order.
func checkLaneDaemonSets(t *testing.T, dss []*appsv1.DaemonSet, l *lock.Lock) []*appsv1.DaemonSet {
	t.Helper()
	slices.SortFunc(dss, func(a, b *appsv1.DaemonSet) int { return strings.Compare(a.Name, b.Name) })
	var names []string
	for _, ds := range dss {
		names = append(names, ds.Name)
	}
	if want := []string{"lanes-l1", "lanes-l2"}; !slices.Equal(names, want) {
		t.Fatalf("the lanes puller (lanes: 2) renders DaemonSets %v, want %v", names, want)
	}
	for i, ds := range dss {
		e, err := locked(l, laneImageRefs[i])
		if err != nil {
			t.Fatal(err)
		}
		var pulls []string
		for _, ic := range ds.Spec.Template.Spec.InitContainers {
			if strings.HasPrefix(ic.Name, "pull-") {
				pulls = append(pulls, ic.Image)
			}
		}
		if want := []string{laneImageRefs[i] + "@" + e.Digest}; !slices.Equal(pulls, want) {
			t.Errorf("DaemonSet %s pulls %v, want %v", ds.Name, pulls, want)
		}
		tolerated := false
		for _, tol := range ds.Spec.Template.Spec.Tolerations {
			tolerated = tolerated || tol.Key == laneTaint && tol.Effect == corev1.TaintEffectNoSchedule
		}
		if !tolerated {
			t.Errorf("DaemonSet %s does not tolerate %s: %v", ds.Name, laneTaint, ds.Spec.Template.Spec.Tolerations)
		}
		var cmd []string
		for _, ct := range ds.Spec.Template.Spec.Containers {
			if ct.Name == "startup" {
				cmd = ct.Command
			}
		}
		i := slices.Index(cmd, "--parts")
		if i < 0 || i+1 >= len(cmd) || !slices.Contains(cmd, laneTaint) || !slices.Contains(cmd, ds.Name) {
			t.Fatalf("DaemonSet %s's startup helper runs %q, want --self %s, --parts and --taint %s", ds.Name, cmd, ds.Name, laneTaint)
		}
		var parts []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(cmd[i+1]), &parts); err != nil {
			t.Fatalf("DaemonSet %s: --parts %s: %v", ds.Name, cmd[i+1], err)
		}
		var got []string
		for _, p := range parts {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, names) {
			t.Errorf("DaemonSet %s's helper waits for parts %v, want both lanes %v", ds.Name, got, names)
		}
	}
	return dss
}

// checkLanes proves the lanes on the running kubelet of TestNewNode (its
// startup gate done, every registry stopped): the kubelet runs with
// serializeImagePulls false (its configz, read through nodes/proxy as
// stowage status reads it). The site registry starts again (same storage)
// behind a new hold proxy on the address containerd knows, which holds the
// layer of each lane's image; the node gets the lanes puller's startup
// taint; the rendered output out is applied. Both held layers are asked
// for while neither is answered: the two lanes' pods pull at once (one
// pod's images are pulled one after another, so one pod would never ask
// for the second). The site stops; a user's Deployment of both images
// stays Pending. Lane 1's layer is released: lane 1 finishes, its helper
// says it waits for lane 2, and the taint stays. Lane 2's layer is
// released and the proxy stops: the taint is lifted and the Deployment
// starts with every registry stopped, every image already on the node.
func (c *cluster) checkLanes(t *testing.T, ns *namespace, out string, dss []*appsv1.DaemonSet, imgs map[string]v1.Image, l *lock.Lock, record func(string, time.Duration)) {
	ctx := context.Background()
	raw, err := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", nodeName, "proxy", "configz").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the kubelet's configz: %v", err)
	}
	var cz struct {
		KubeletConfig kubeletv1beta1.KubeletConfiguration `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cz); err != nil {
		t.Fatalf("the kubelet's configz: %v", err)
	}
	kc := cz.KubeletConfig
	if kc.SerializeImagePulls == nil || *kc.SerializeImagePulls || kc.MaxParallelImagePulls == nil {
		t.Fatalf("the kubelet runs with serializeImagePulls %v, maxParallelImagePulls %v; want false and a limit", kc.SerializeImagePulls, kc.MaxParallelImagePulls)
	}
	t.Logf("the kubelet's configz: serializeImagePulls false, maxParallelImagePulls %d", *kc.MaxParallelImagePulls)

	site := startRegistry(t, ns, siteHost, "")
	proxy := startHoldProxy(t, ns, gateHost, siteHost)
	var held []*heldBlob
	for _, ref := range laneImageRefs {
		held = append(held, proxy.holdBlob(layerDigest(t, imgs[ref])))
	}
	// The taint from the admin, as a node pool would register it (that
	// path is the startup gate's).
	c.kubectl(t, "taint", "nodes", nodeName, laneTaint+"=:NoSchedule")
	start := time.Now()
	c.kubectl(t, "apply", "--server-side", "-k", out)
	deadline := time.After(3 * time.Minute)
	for i, h := range held {
		select {
		case <-h.arrived:
		case <-deadline:
			var asked []string
			for k, o := range held {
				if !proxy.arrivedAt(o).IsZero() {
					asked = append(asked, fmt.Sprintf("lane %d", k+1))
				}
			}
			t.Fatalf("the layer of lane %d (%s) was not asked for within 3 minutes while the others are held (asked for: %v): the lanes did not pull in parallel; pods: %s",
				i+1, laneImageRefs[i], asked, c.podSummary(t, laneNS))
		}
	}
	record("lanes: apply to both lanes' layers asked for, both held", time.Since(start))
	a, b := proxy.arrivedAt(held[0]), proxy.arrivedAt(held[1])
	t.Logf("both lanes' layers asked for while both are held: lane 1 at +%.1fs, lane 2 at +%.1fs after the apply",
		a.Sub(start).Seconds(), b.Sub(start).Seconds())
	waitFor(t, 30*time.Second, "the proxy's other requests done", func() (bool, string) {
		n := proxy.passing()
		return n == 0, fmt.Sprintf("%d requests in flight", n)
	})
	stopRegistries(t, ns, site)
	lanePod := func(k int) *corev1.Pod {
		return c.onePod(t, laneNS, "app.kubernetes.io/instance="+dss[k].Name)
	}
	for k := range dss {
		if p := lanePod(k); p == nil || p.Status.Phase != corev1.PodPending || startedMain(p) {
			t.Fatalf("while its layer is held lane %d's pod is not waiting in its init containers: %s", k+1, c.podSummary(t, laneNS))
		}
	}

	images := map[string]string{}
	for i, ref := range laneImageRefs {
		e, err := locked(l, ref)
		if err != nil {
			t.Fatal(err)
		}
		images[fmt.Sprintf("lane-%d", i+1)] = ref + "@" + e.Digest
	}
	dep := deployment("lane-notebook", labNS, "", images)
	if _, err := c.client.AppsV1().Deployments(labNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the lanes' notebook pod unschedulable for the startup taint", func() (bool, string) {
		p := c.onePod(t, labNS, "app=lane-notebook")
		if p == nil {
			return false, "no pod yet"
		}
		return unschedulable(p), c.podSummary(t, labNS) + " " + scheduledCondition(p)
	})

	// Lane 1 done, lane 2 still held: lane 1's helper waits, the taint
	// stays.
	released := time.Now()
	held[0].releaseBlob()
	select {
	case <-held[0].served:
	case <-time.After(2 * time.Minute):
		t.Fatalf("lane 1's layer was not taken within 2 minutes after its release; pods: %s", c.podSummary(t, laneNS))
	}
	waiting := fmt.Sprintf("startup: waiting for [%q] on node %s", dss[1].Name, nodeName)
	waitFor(t, 2*time.Minute, "lane 1's helper waiting for lane 2", func() (bool, string) {
		p := lanePod(0)
		if p == nil || !startedMain(p) {
			return false, c.podSummary(t, laneNS)
		}
		logs := c.helperLog(t, p)
		return strings.Contains(logs, waiting), logs
	})
	record("lanes: lane 1 released to its helper waiting for lane 2", time.Since(released))
	if n := c.node(t); !slices.Contains(taintKeys(n), laneTaint) {
		t.Fatalf("the startup taint %s was lifted with lane 2 still pulling: %v; pods: %s", laneTaint, n.Spec.Taints, c.podSummary(t, laneNS))
	}
	if p := lanePod(1); p == nil || startedMain(p) {
		t.Fatalf("lane 2 finished while its layer is held: %s", c.podSummary(t, laneNS))
	}
	if p := c.onePod(t, labNS, "app=lane-notebook"); p == nil || p.Spec.NodeName != "" || !unschedulable(p) {
		t.Fatalf("with lane 2 still pulling the lanes' notebook pod is not held off the node: %s", c.podSummary(t, labNS))
	}
	if c.ctrImages(t)[configID(t, imgs[laneBRef])] {
		t.Fatalf("%s is on the node while its layer is held", laneBRef)
	}
	t.Logf("lane 1 done, lane 2 held: taint %s stays; lane 1's helper: %q", laneTaint, waiting)

	released = time.Now()
	held[1].releaseBlob()
	select {
	case <-held[1].served:
	case <-time.After(2 * time.Minute):
		t.Fatalf("lane 2's layer was not taken within 2 minutes after its release; pods: %s", c.podSummary(t, laneNS))
	}
	proxy.srv.Close()
	for _, host := range []string{siteHost, gateHost} {
		if (&registry{host: host}).reachable(ns) {
			t.Fatalf("%s still answers", host)
		}
	}
	waitFor(t, 3*time.Minute, "the lanes' startup taint lifted", func() (bool, string) {
		n := c.node(t)
		return !slices.Contains(taintKeys(n), laneTaint), fmt.Sprintf("taints %v; %s", n.Spec.Taints, c.podSummary(t, laneNS))
	})
	record("lanes: lane 2 released to the startup taint lifted", time.Since(released))
	var lifted []string
	for k, ds := range dss {
		c.waitRendered(t, ds, time.Minute)
		if strings.Contains(c.helperLog(t, lanePod(k)), "removed taint "+laneTaint+" from node "+nodeName) {
			lifted = append(lifted, ds.Name)
		}
	}
	if len(lifted) != 1 {
		t.Errorf("the helpers that say they removed %s: %v, want one", laneTaint, lifted)
	}
	liftedAt := time.Now()
	got := c.waitStarts(t, labNS, "app=lane-notebook", 3*time.Minute, "both lanes' images must be on the node when the gate opens")
	record("lanes: taint lifted to the lanes' notebook Running (offline)", time.Since(liftedAt))
	c.checkPulledFromCache(t, labNS, got.Name, got)
	c.checkImageIDs(t, got, l)
	t.Logf("taint %s lifted by %v's helper after both lanes were done; the lanes' notebook runs offline", laneTaint, lifted)
}

// helperLog returns the log of pod's startup helper ("" while it has none).
func (c *cluster) helperLog(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	b, err := c.client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "startup"}).DoRaw(context.Background())
	if err != nil {
		return ""
	}
	return string(b)
}
