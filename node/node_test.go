package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/helperimage"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/status"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// The suite's images, as a platform team would list them: a scratch image
// with no shell, a multi-arch index, a private image behind htpasswd, and
// the project's own helper image (internal/helperimage), whose wait mode is
// every DaemonSet's main container. pause is only containerd's sandbox
// image.
const (
	dataRef   = plainHost + "/tools/scratch-data:1.0"
	multiRef  = plainHost + "/lib/multi:2.0"
	modelRef  = privateHost + "/private/model:1.0"
	otherRef  = privateHost + "/private/other:1.0" // profile "status": its Secret gets a wrong password
	gpuRef    = plainHost + "/tools/gpu-data:1.0"  // profile "status": only on GPU nodes, which this cluster lacks
	helperRef = plainHost + "/stowage/stowage-helper:v0.1.0"
	pauseRef  = plainHost + "/k8s/pause:3.10"

	pullerNS    = "stowage-node"
	pullerName  = "prepull"
	tenantNS    = "tenant-b" // a tenant of the puller: gets its pull Secret
	outsideNS   = "outsider" // not a tenant: no copy of the Secret
	passwordEnv = "NODE_REGISTRY_PASSWORD"
	otherEnv    = "NODE_OTHER_PASSWORD" // right for lock and bump, wrong for the status profile's render
	statusNS    = "status-check"
	siteNS      = "site-check"
)

// measure is one timing the suite prints and README.md quotes.
type measure struct {
	what string
	took time.Duration
	load string
}

// TestNode runs the whole story on one real node, in order: the cluster
// starts; a profile of the examples' kind is locked against the registries,
// rendered and applied, its DaemonSet becomes Ready and every locked digest
// is on the node (images absent, then present); `stowage bump` rolls it to
// a moved tag; then, with every registry stopped, workloads pinned to the
// locked digests start, a tenant's pod starts only with matching
// credentials, and a tag-only reference shows what it does.
func TestNode(t *testing.T) {
	requireParts(t)
	var measures []measure
	defer func() {
		if len(measures) == 0 {
			return
		}
		var b strings.Builder
		b.WriteString("real-node measurements (2 cores; load average 1/5/15 min at the end of each step):\n")
		for _, m := range measures {
			fmt.Fprintf(&b, "  %-52s %6.1fs   load %s\n", m.what, m.took.Seconds(), m.load)
		}
		fmt.Print(b.String())
		t.Log(b.String())
	}()
	record := func(what string, d time.Duration) {
		measures = append(measures, measure{what, d, loadAvg()})
	}

	bins := buildBinaries(t)
	c := startCluster(t, pauseRef, []string{plainHost, privateHost, siteHost})
	record("cluster start to node Ready", c.startToReady)

	password := randomHex(t)
	// The operator names the password variables the configs may read.
	env := []string{passwordEnv + "=" + password, otherEnv + "=" + password, "STOWAGE_ALLOW_ENV=" + passwordEnv + "," + otherEnv, "DOCKER_CONFIG=" + filepath.Join(c.ns.state, "docker-config")}
	plain := startRegistry(t, c.ns, plainHost, "")
	private := startRegistry(t, c.ns, privateHost, password)
	site := startRegistry(t, c.ns, siteHost, "")
	p := &pusher{ns: c.ns, auth: map[string]authn.Authenticator{privateHost: &authn.Basic{Username: privateUser, Password: password}}}

	pauseBin := readFile(t, bins.pause)
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	p.push(t, pauseRef, image(t, amd64, []string{"/pause"}, file{"pause", 0o555, pauseBin}))
	// The project's helper image, built as `make helper-image` builds it.
	helper, err := helperimage.Build(context.Background(), helperimage.Options{ModuleDir: ".."})
	if err != nil {
		t.Fatal(err)
	}
	p.pushIndex(t, helperRef, helper)
	// Workload images hold the static pause as their program and a data
	// file: no shell, no libc, nothing the DaemonSet could run of theirs.
	workload := func(what string, p v1.Platform) v1.Image {
		return image(t, p, []string{"/pause"}, file{"pause", 0o555, pauseBin}, file{"data/" + strings.ReplaceAll(what, "/", "_"), 0o444, []byte(what + "\n")})
	}
	p.push(t, dataRef, workload("data 1", amd64))
	arm64 := v1.Platform{OS: "linux", Architecture: "arm64"}
	p.pushIndex(t, multiRef, index(t, map[string]v1.Image{"linux/amd64": workload("multi amd64", amd64), "linux/arm64": workload("multi arm64", arm64)}))
	p.push(t, modelRef, workload("model 1", amd64))
	p.push(t, otherRef, workload("other 1", amd64))
	p.push(t, gpuRef, workload("gpu 1", amd64))

	cfgDir := writeConfig(t)
	out := filepath.Join(t.TempDir(), "prepull")
	stowage := func(args ...string) string {
		return c.ns.run(t, env, bins.stowage, args...)
	}
	insecure := []string{"--insecure-registry", plainHost, "--insecure-registry", privateHost, "--insecure-registry", siteHost}
	stowage(append([]string{"lock", cfgDir}, insecure...)...)
	stowage("render", cfgDir, "--profile", "node", "--output-dir", out)
	l, err := lock.Read(filepath.Join(cfgDir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	l = only(t, l, dataRef, multiRef, modelRef, helperRef)

	c.kubectl(t, "create", "namespace", pullerNS)
	c.kubectl(t, "create", "namespace", tenantNS)
	c.kubectl(t, "create", "namespace", outsideNS)
	ctx := context.Background()

	if !t.Run("prepull", func(t *testing.T) {
		start := time.Now()
		c.kubectl(t, "apply", "--server-side", "-k", out)
		c.waitAll(t, out, 5*time.Minute)
		record("apply to DaemonSet Ready, images absent", time.Since(start))
		c.checkOnNode(t, l)
		c.checkStatus(t, bins.stowage, cfgDir, l)

		// Again with every image on the node: delete the DaemonSets, wait
		// for their pods to go, apply the same output.
		for _, ds := range renderedDaemonSets(t, out) {
			if err := c.client.AppsV1().DaemonSets(ds.Namespace).Delete(ctx, ds.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 2*time.Minute, "the DaemonSets' pods deleted", func() (bool, string) {
			pods := c.pods(t, pullerNS)
			return len(pods) == 0, fmt.Sprintf("%d pods left", len(pods))
		})
		start = time.Now()
		c.kubectl(t, "apply", "--server-side", "-k", out)
		c.waitAll(t, out, 3*time.Minute)
		record("apply to DaemonSet Ready, images present", time.Since(start))
		for _, pod := range c.pods(t, pullerNS) {
			c.checkPulledFromCache(t, pullerNS, pod.Name, &pod)
		}
	}) {
		t.FailNow()
	}

	t.Run("bump", func(t *testing.T) {
		old, err := locked(l, dataRef)
		if err != nil {
			t.Fatal(err)
		}
		moved := p.push(t, dataRef, workload("data 2", amd64))
		if moved == old.Digest {
			t.Fatal("the moved tag has the old digest")
		}
		stdout := stowage(append([]string{"bump", cfgDir, "--profile", "node", "--render", out}, insecure...)...)
		if !strings.Contains(stdout, dataRef) {
			t.Errorf("bump's output does not name %s:\n%s", dataRef, stdout)
		}
		l, err = lock.Read(filepath.Join(cfgDir, lock.FileName))
		if err != nil {
			t.Fatal(err)
		}
		l = only(t, l, dataRef, multiRef, modelRef, helperRef)
		e, err := locked(l, dataRef)
		if err != nil {
			t.Fatal(err)
		}
		if e.Digest != moved {
			t.Fatalf("after bump the lock has %s for %s, want the pushed %s", e.Digest, dataRef, moved)
		}
		start := time.Now()
		c.kubectl(t, "apply", "--server-side", "-k", out)
		c.waitAll(t, out, 5*time.Minute)
		record("bump: apply to the rolled DaemonSet Ready", time.Since(start))
		c.checkOnNode(t, l)
		c.checkStatus(t, bins.stowage, cfgDir, l)
		if !c.ctrImages(t)[repoOf(t, dataRef)+"@"+old.Digest] {
			t.Errorf("the old digest %s left the node after the bump (image garbage collection is off)", old.Digest)
		}
	})

	t.Run("status/failed-and-not-scheduled", func(t *testing.T) {
		// The status profile rendered with a wrong password for other's
		// registry, as after a rotation the Secret missed: the kubelet gets
		// a 401. gpu's DaemonSet selects GPU nodes, and there is none.
		out := filepath.Join(t.TempDir(), "status")
		wrong := append(slices.Clone(env), otherEnv+"=wrong-"+randomHex(t))
		c.ns.run(t, wrong, bins.stowage, "render", cfgDir, "--profile", "status", "--output-dir", out)
		c.kubectl(t, "create", "namespace", statusNS)
		c.kubectl(t, "apply", "--server-side", "-k", out)
		var r status.Report
		waitFor(t, 3*time.Minute, "stowage status reporting the 401", func() (bool, string) {
			stdout, stderr, err := c.ns.output(nil, time.Minute, bins.stowage, "status", cfgDir, "--profile", "status", "--kubeconfig", c.kubeconfig, "-o", "json")
			if err == nil {
				t.Fatalf("stowage status exited 0 with an image failing:\n%s", stdout)
			}
			r = status.Report{}
			if jerr := json.Unmarshal([]byte(stdout), &r); jerr != nil {
				return false, fmt.Sprintf("%v: %s", jerr, stderr)
			}
			on := onNode(r, otherRef)
			return on.State == status.Failed && strings.Contains(on.Message, "401"), fmt.Sprintf("%s on the node: %s %s", otherRef, on.State, on.Message)
		})
		if r.Ready {
			t.Errorf("stowage status says ready with an image failing")
		}
		if on := onNode(r, gpuRef); on.State != status.NotScheduled {
			t.Errorf("stowage status: %s is %q on %s (%s), want %q", gpuRef, on.State, nodeName, on.Message, status.NotScheduled)
		}
		table, _, _ := c.ns.output(nil, time.Minute, bins.stowage, "status", cfgDir, "--profile", "status", "--kubeconfig", c.kubeconfig)
		t.Logf("stowage status (exit 1):\n%s", table)
		c.kubectl(t, "delete", "namespace", statusNS, "--wait=false")
	})

	t.Run("site", func(t *testing.T) {
		// `stowage mirror` copies the site profile's images to the site
		// registry; then the source registries stop, and the site profile,
		// rendered with site references, is applied: its DaemonSet can only
		// pull from the site.
		c.ns.run(t, env, bins.stowage, append([]string{"mirror", cfgDir, "--profile", "site", "--to", siteHost + "/site"}, insecure...)...)
		stopRegistries(t, c.ns, plain, private)
		out := filepath.Join(t.TempDir(), "site")
		c.ns.run(t, env, bins.stowage, "render", cfgDir, "--profile", "site", "--output-dir", out)
		c.kubectl(t, "create", "namespace", siteNS)
		c.kubectl(t, "apply", "--server-side", "-k", out)
		dss := renderedDaemonSets(t, out)
		var inits []corev1.Container
		for _, ds := range dss {
			spec := ds.Spec.Template.Spec
			for _, ct := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				if !strings.HasPrefix(ct.Image, siteHost+"/site/") {
					t.Errorf("the site DaemonSet %s's container %s pulls %s, not from %s", ds.Name, ct.Name, ct.Image, siteHost+"/site")
				}
			}
			c.waitRendered(t, ds, 3*time.Minute)
			inits = append(inits, spec.InitContainers...)
		}
		images := c.ctrImages(t)
		for _, ct := range inits {
			repo, digest, _ := strings.Cut(ct.Image, "@")
			if !images[repoOf(t, repo)+"@"+digest] {
				t.Errorf("%s is not on the node under the site's name", ct.Image)
			}
		}
		if !t.Failed() {
			t.Logf("with the source registries stopped, the site DaemonSets pulled their %d init containers' images from %s, e.g. %s", len(inits), siteHost, inits[len(inits)-1].Image)
		}
	})

	// The offline proof: no registry answers from here on.
	stopRegistries(t, c.ns, plain, private, site)

	t.Run("offline/pinned-workload", func(t *testing.T) {
		secret := c.renderedSecret(t)
		dep := pinWithFn(t, c, bins.stowage, cfgDir, deployment("workload", pullerNS, secret, map[string]string{
			"data": dataRef, "multi": multiRef, "model": modelRef,
		}))
		for _, ct := range dep.Spec.Template.Spec.Containers {
			e, err := locked(l, strings.SplitN(ct.Image, "@", 2)[0])
			if err != nil || !strings.HasSuffix(ct.Image, "@"+e.Digest) {
				t.Fatalf("stowage fn did not pin %s to the locked digest (%v)", ct.Image, err)
			}
		}
		if _, err := c.client.AppsV1().Deployments(pullerNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := c.waitPodRunning(t, pullerNS, "app=workload", 3*time.Minute)
		c.checkImageIDs(t, pod, l)
		c.checkPulledFromCache(t, pullerNS, pod.Name, pod)
	})

	t.Run("offline/tenant-private-image", func(t *testing.T) {
		e, err := locked(l, modelRef)
		if err != nil {
			t.Fatal(err)
		}
		pinned := modelRef + "@" + e.Digest
		secret := c.renderedSecret(t)
		// A namespace that is not a tenant has no copy of the Secret:
		// KubeletEnsureSecretPulledImages (on by default since 1.35) does
		// not let its pod use an image pulled with credentials it does not
		// present, so the kubelet goes to the registry, which is gone.
		bare := pod("no-secret", outsideNS, "", pinned)
		if _, err := c.client.CoreV1().Pods(outsideNS).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reason := c.waitPodWaiting(t, outsideNS, bare.Name, []string{"ErrImagePull", "ImagePullBackOff"}, 3*time.Minute)
		t.Logf("a pod outside the tenants, without a pull Secret: %s (the image is on the node)", reason)

		// The tenant has the Secret stowage rendered for it (same name,
		// same credentials): its pod starts from the node, registry stopped.
		if _, err := c.client.CoreV1().Secrets(tenantNS).Get(ctx, secret, metav1.GetOptions{}); err != nil {
			t.Fatalf("stowage rendered no copy of the pull Secret %s into the tenant %s: %v", secret, tenantNS, err)
		}
		with := pod("with-secret", tenantNS, secret, pinned)
		if _, err := c.client.CoreV1().Pods(tenantNS).Create(ctx, with, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := c.waitPodRunning(t, tenantNS, "", 3*time.Minute, with.Name)
		c.checkImageIDs(t, got, l)
		c.checkPulledFromCache(t, tenantNS, got.Name, got)
	})

	t.Run("offline/tag-only-reference", func(t *testing.T) {
		// containerd's CRI keeps an image pulled as repo:tag@sha256:… under
		// its digest reference only: the tag is not on the node.
		images := c.ctrImages(t)
		if images[dataRef] {
			t.Fatalf("containerd lists %s by tag after a pull by tag and digest", dataRef)
		}
		tagOnly := pod("tag-only", pullerNS, "", dataRef)
		if _, err := c.client.CoreV1().Pods(pullerNS).Create(ctx, tagOnly, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reason := c.waitPodWaiting(t, pullerNS, tagOnly.Name, []string{"ErrImagePull", "ImagePullBackOff"}, 3*time.Minute)
		t.Logf("a pod naming %s (tag only, IfNotPresent) with the registry stopped: %s; pin it by digest (stowage fn) to start from the node", dataRef, reason)
	})
}

// writeConfig writes the suite's config directory: one profile "node"
// with one puller of every image, the private one with credentials from
// $NODE_REGISTRY_PASSWORD, serving the tenant namespace tenantNS (which
// gets a copy of the pull Secret), the helper image from the plain
// registry (no helper.pause: the helper waits in the main container). A
// second profile "status" pulls another private image and a GPU-only
// environment, for stowage status's failure and not-scheduled states.
func writeConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`images:
  data:
    reference: %q
  multi:
    reference: %q
  model:
    reference: %q
    auth:
      username: %q
      password: "env:%s"
  other:
    reference: %q
    auth:
      username: %q
      password: "env:%s"
environments:
  gpu:
    image: %q
    nodeSelector:
      example.com/gpu: "true"
profiles:
  node:
    helper:
      image: %q
    pullers:
    - name: %s
      namespace: %s
      tenants: [%s]
      images: [data, multi, model]
  status:
    helper:
      image: %q
    pullers:
    - name: status-check
      namespace: %s
      images: [other]
      environments: [gpu]
  site:
    helper:
      image: %q
    site:
      registry: %q
    pullers:
    - name: site-images
      namespace: %s
      images: [data, multi]
`, dataRef, multiRef, modelRef, privateUser, passwordEnv, otherRef, privateUser, otherEnv, gpuRef, helperRef, pullerName, pullerNS, tenantNS, helperRef, statusNS, helperRef, siteHost+"/site", siteNS)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitAll waits until the cluster runs every DaemonSet of the render
// output folder out (waitRendered).
func (c *cluster) waitAll(t *testing.T, out string, limit time.Duration) {
	t.Helper()
	for _, ds := range renderedDaemonSets(t, out) {
		c.waitRendered(t, ds, limit)
	}
}

// checkOnNode checks that every locked digest is on the node: in
// containerd's k8s.io namespace as repository@digest, and in the node's
// status.images (the kubelet refreshes its image list every 30 s and
// reports it with the node status, so that one is waited for, at most 2
// minutes).
func (c *cluster) checkOnNode(t *testing.T, l *lock.Lock) {
	t.Helper()
	images := c.ctrImages(t)
	var want []string
	for _, e := range l.Entries {
		ref := repoOf(t, e.Reference) + "@" + e.Digest
		want = append(want, ref)
		if !images[ref] {
			t.Errorf("%s (%s) is not in `ctr -n k8s.io images ls`", ref, e.Name)
		}
	}
	waitFor(t, 2*time.Minute, "every locked digest in the node's status.images", func() (bool, string) {
		node, err := c.client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		status := map[string]bool{}
		for _, im := range node.Status.Images {
			for _, n := range im.Names {
				status[n] = true
			}
		}
		var missing []string
		for _, ref := range want {
			if !status[ref] {
				missing = append(missing, ref)
			}
		}
		return len(missing) == 0, "missing " + strings.Join(missing, ", ")
	})
	if !t.Failed() {
		t.Logf("all %d locked digests are on the node (ctr -n k8s.io and status.images)", len(l.Entries))
	}
}

// checkStatus runs `stowage status` inside the namespace with the admin
// kubeconfig: it must exit 0 and report every locked image present on the
// node, with its locked digest. Its table is logged.
func (c *cluster) checkStatus(t *testing.T, stowage, cfgDir string, l *lock.Lock) {
	t.Helper()
	table := c.ns.run(t, nil, stowage, "status", cfgDir, "--profile", "node", "--kubeconfig", c.kubeconfig)
	t.Logf("stowage status:\n%s", table)
	out := c.ns.run(t, nil, stowage, "status", cfgDir, "--profile", "node", "--kubeconfig", c.kubeconfig, "-o", "json")
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stowage status -o json: %v\n%s", err, out)
	}
	if !r.Ready || len(r.Images) != len(l.Entries) {
		t.Errorf("stowage status: ready %v with %d images, want ready with the %d locked ones:\n%s", r.Ready, len(r.Images), len(l.Entries), out)
	}
	for _, im := range r.Images {
		e, err := locked(l, im.Name)
		if err != nil {
			t.Errorf("stowage status reports %s: %v", im.Name, err)
			continue
		}
		if im.State != status.Success || im.Digest != e.Digest || !slices.Equal(im.Nodes, []string{nodeName}) {
			t.Errorf("stowage status: %s is %s with %s on %v, want success with %s on [%s]", im.Name, im.State, im.Digest, im.Nodes, e.Digest, nodeName)
		}
		for _, on := range im.OnNodes {
			if on.Node == nodeName && on.State != status.Present {
				t.Errorf("stowage status: %s is %s on %s, want present", im.Name, on.State, on.Node)
			}
		}
	}
}

// checkImageIDs checks that every container of pod runs the locked digest
// of the reference its spec names.
func (c *cluster) checkImageIDs(t *testing.T, pod *corev1.Pod, l *lock.Lock) {
	t.Helper()
	spec := map[string]string{}
	for _, ct := range pod.Spec.Containers {
		spec[ct.Name] = ct.Image
	}
	for _, st := range pod.Status.ContainerStatuses {
		ref, _, _ := strings.Cut(spec[st.Name], "@")
		e, err := locked(l, ref)
		if err != nil {
			t.Errorf("container %s runs %s, not in the lock: %v", st.Name, spec[st.Name], err)
			continue
		}
		if !strings.HasSuffix(st.ImageID, "@"+e.Digest) {
			t.Errorf("container %s runs imageID %s, want the locked %s", st.Name, st.ImageID, e.Digest)
		}
	}
}

// checkPulledFromCache checks the kubelet's events of the pod: every one
// of its images was "already present on machine", none was pulled.
func (c *cluster) checkPulledFromCache(t *testing.T, namespace, podName string, pod *corev1.Pod) {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": podName}
	var present, pulled []string
	waitFor(t, time.Minute, "the kubelet's image events of "+namespace+"/"+podName, func() (bool, string) {
		evs, err := c.client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
		if err != nil {
			return false, err.Error()
		}
		present, pulled = nil, nil
		for _, ev := range evs.Items {
			if ev.Reason != "Pulled" && ev.Reason != "Pulling" {
				continue
			}
			if strings.Contains(ev.Message, "already present on machine") {
				present = append(present, ev.Message)
			} else {
				pulled = append(pulled, ev.Message)
			}
		}
		want := len(pod.Spec.Containers) + len(pod.Spec.InitContainers)
		return len(present) >= want, fmt.Sprintf("%d already present, %d pulled", len(present), len(pulled))
	})
	if len(pulled) > 0 {
		t.Errorf("the kubelet pulled images, want every one already present:\n%s", strings.Join(pulled, "\n"))
	}
	t.Logf("kubelet events of %s/%s: %d images already present on the node, none pulled", namespace, podName, len(present))
}

// pods lists the pods of namespace.
func (c *cluster) pods(t *testing.T, namespace string) []corev1.Pod {
	t.Helper()
	list, err := c.client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// podSummary describes every pod of namespace and its containers' states,
// for messages.
func (c *cluster) podSummary(t *testing.T, namespace string) string {
	var parts []string
	for _, p := range c.pods(t, namespace) {
		s := p.Name + " " + string(p.Status.Phase)
		for _, st := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			switch {
			case st.State.Waiting != nil:
				s += fmt.Sprintf(" %s:waiting(%s: %s)", st.Name, st.State.Waiting.Reason, st.State.Waiting.Message)
			case st.State.Terminated != nil:
				s += fmt.Sprintf(" %s:terminated(%d %s)", st.Name, st.State.Terminated.ExitCode, st.State.Terminated.Reason)
			case st.State.Running != nil:
				s += " " + st.Name + ":running"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// waitPodRunning waits until the pod named name (or the one pod matching
// the label selector) is Running with every container ready, and returns it.
func (c *cluster) waitPodRunning(t *testing.T, namespace, selector string, limit time.Duration, name ...string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	waitFor(t, limit, "pod "+namespace+"/"+selector+strings.Join(name, "")+" Running", func() (bool, string) {
		list, err := c.client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			p := &list.Items[i]
			if len(name) > 0 && p.Name != name[0] {
				continue
			}
			ready := p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == len(p.Spec.Containers)
			for _, st := range p.Status.ContainerStatuses {
				ready = ready && st.Ready && st.State.Running != nil
			}
			if ready {
				got = p
				return true, ""
			}
		}
		return false, c.podSummary(t, namespace)
	})
	return got
}

// waitPodWaiting waits until a container of the pod waits for one of
// reasons and returns that reason with its message; the pod must not run.
func (c *cluster) waitPodWaiting(t *testing.T, namespace, name string, reasons []string, limit time.Duration) string {
	t.Helper()
	var got string
	waitFor(t, limit, "pod "+namespace+"/"+name+" waiting with "+strings.Join(reasons, " or "), func() (bool, string) {
		p, err := c.client.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Status.Phase == corev1.PodRunning {
			t.Fatalf("pod %s/%s is Running, want it waiting with %v", namespace, name, reasons)
		}
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && slices.Contains(reasons, w.Reason) {
				got = w.Reason + ": " + w.Message
				return true, ""
			}
		}
		return false, c.podSummary(t, namespace)
	})
	return got
}

// renderedSecret returns the name of the pull Secret stowage rendered into
// the puller's namespace.
func (c *cluster) renderedSecret(t *testing.T) string {
	t.Helper()
	list, err := c.client.CoreV1().Secrets(pullerNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=stowage"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeDockerConfigJson {
			names = append(names, s.Name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("want one rendered dockerconfigjson Secret in %s, got %v", pullerNS, names)
	}
	return names[0]
}

// deployment is a one-replica workload running one container per image
// (by the images' own entrypoint), pulling with secret when not empty.
func deployment(name, namespace, secret string, images map[string]string) *appsv1.Deployment {
	one := int32(1)
	spec := podSpec(secret)
	keys := make([]string, 0, len(images))
	for k := range images {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		spec.Containers = append(spec.Containers, container(k, images[k]))
	}
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// pod is a bare pod running image, pulling with secret when not empty.
func pod(name, namespace, secret, image string) *corev1.Pod {
	spec := podSpec(secret)
	spec.Containers = []corev1.Container{container("main", image)}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
}

func podSpec(secret string) corev1.PodSpec {
	no := false
	grace := int64(1)
	spec := corev1.PodSpec{AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace, EnableServiceLinks: &no}
	if secret != "" {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
	}
	return spec
}

func container(name, image string) corev1.Container {
	uid := int64(65534)
	no, yes := false, true
	return corev1.Container{
		Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: &uid, RunAsNonRoot: &yes, ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// pinWithFn runs `stowage fn` (pin mode: a Stowage functionConfig with an
// empty spec) on a ResourceList holding dep and the config directory's
// lock, inside the namespace, and returns the pinned Deployment.
func pinWithFn(t *testing.T, c *cluster, stowage, cfgDir string, dep *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	return pinWithFnSite(t, c, stowage, cfgDir, nil, dep)
}

// pinWithFnSite is pinWithFn with a site: the functionConfig's spec is
// {site: site} (pin mode still: no profiles), so the function writes each
// image as its site reference, pinned.
func pinWithFnSite(t *testing.T, c *cluster, stowage, cfgDir string, site map[string]any, dep *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	var lockItem map[string]any
	if err := yaml.Unmarshal(readFile(t, filepath.Join(cfgDir, lock.FileName)), &lockItem); err != nil {
		t.Fatal(err)
	}
	depJSON, err := yaml.Marshal(dep)
	if err != nil {
		t.Fatal(err)
	}
	var depItem map[string]any
	if err := yaml.Unmarshal(depJSON, &depItem); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{}
	if site != nil {
		spec["site"] = site
	}
	rl := map[string]any{
		"apiVersion":     "config.kubernetes.io/v1",
		"kind":           "ResourceList",
		"items":          []any{lockItem, depItem},
		"functionConfig": map[string]any{"apiVersion": "stowage.dev/v1alpha1", "kind": "Stowage", "metadata": map[string]any{"name": "pin"}, "spec": spec},
	}
	in, err := yaml.Marshal(rl)
	if err != nil {
		t.Fatal(err)
	}
	cmd := c.ns.command(stowage, "fn")
	cmd.Stdin = strings.NewReader(string(in))
	outB, err := cmd.Output()
	if err != nil {
		t.Fatalf("stowage fn: %v\n%s", err, outB)
	}
	var res struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(outB, &res); err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it["kind"] != "Deployment" {
			continue
		}
		b, err := yaml.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		var got appsv1.Deployment
		if err := yaml.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for k := range got.Annotations {
			if strings.HasPrefix(k, "config.kubernetes.io/") || strings.HasPrefix(k, "internal.config.kubernetes.io/") {
				delete(got.Annotations, k)
			}
		}
		return &got
	}
	t.Fatalf("stowage fn returned no Deployment:\n%s", outB)
	return nil
}

// repoOf returns the repository of a reference, as containerd names it.
func repoOf(t *testing.T, ref string) string {
	t.Helper()
	return registrytest.Ref(t, ref).Context().Name()
}

// randomHex returns a fresh password for the private registry.
func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// only returns the entries of l for refs: the images of profile "node".
func only(t *testing.T, l *lock.Lock, refs ...string) *lock.Lock {
	t.Helper()
	out := &lock.Lock{}
	for _, r := range refs {
		e, err := locked(l, r)
		if err != nil {
			t.Fatal(err)
		}
		out.Put(e)
	}
	return out
}

// onNode returns the state stowage status reports for the image named ref
// on the suite's node (the zero value when it reports none).
func onNode(r status.Report, ref string) status.NodeImage {
	for _, im := range r.Images {
		if im.Name != ref {
			continue
		}
		for _, on := range im.OnNodes {
			if on.Node == nodeName {
				return on
			}
		}
	}
	return status.NodeImage{}
}

// stopRegistries stops the registries and checks that nothing answers on
// their addresses any more.
func stopRegistries(t *testing.T, ns *namespace, rs ...*registry) {
	t.Helper()
	for _, r := range rs {
		r.proc.stop(10 * time.Second)
		if r.reachable(ns) {
			t.Fatalf("the registry on %s still answers after it was stopped", r.host)
		}
	}
}

// locked returns the lock entry of the image ref names (its lock key, as
// stowage computes it).
func locked(l *lock.Lock, ref string) (lock.Entry, error) {
	r, err := imageref.Parse(ref)
	if err != nil {
		return lock.Entry{}, err
	}
	e, ok := l.Lookup(r.Key())
	if !ok {
		return lock.Entry{}, fmt.Errorf("no lock entry %s", r.Key())
	}
	return e, nil
}
