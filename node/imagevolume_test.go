package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stowage/stowage/internal/helperimage"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/status"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// requireImageVolumeEnv turns TestImageVolume's skip for a missing
// containerd 2 into a failure (.ci/run sets it).
const requireImageVolumeEnv = "STOWAGE_REQUIRE_IMAGE_VOLUME"

// The image-volume run's names. The model artifacts and the model server
// come from the anonymous upstream registry plainHost; the site is
// siteHost under the prefix site (render's default mapping:
// <prefix>/<source registry, ':' as '_'>/<repository>).
const (
	modelArtifactRef = plainHost + "/models/llm-stand-in:1.0"      // pre-staged by the DaemonSet
	coldArtifactRef  = plainHost + "/models/llm-stand-in-cold:1.0" // pulled at pod start, for the comparison
	serverRef        = plainHost + "/serving/model-server:1.0"
	modelsNS         = "models"  // the puller
	servingNS        = "serving" // the workloads
	modelMount       = "/models"
	// modelArtifactType is the manifests' artifactType.
	modelArtifactType = "application/vnd.stowage.test.model.v1"
	// shardSize and shards: the artifact's weights, 200 MB in all.
	shardSize = 50_000_000
	shards    = 4
)

// ivSite is the image-volume config's site: everything under siteHost/site.
var ivSite = siteMapping{registry: siteHost + "/site"}

// modelConfig is the known small file of each artifact, which the
// workload prints.
func modelConfig(seed string) string {
	return fmt.Sprintf("{\"model_type\": \"stowage-test\", \"seed\": %q, \"shards\": %d}\n", seed, shards)
}

// modelFiles are an artifact's files: config.json and the weight shards
// (deterministic bytes of seed, incompressible as weights are).
func modelFiles(seed string) []registrytest.ArtifactFile {
	files := []registrytest.ArtifactFile{{Name: "config.json", Data: []byte(modelConfig(seed))}}
	for i := 1; i <= shards; i++ {
		files = append(files, registrytest.ArtifactFile{
			Name: fmt.Sprintf("model-%05d-of-%05d.safetensors", i, shards),
			Data: registrytest.PseudoRandom(fmt.Sprintf("%s shard %d", seed, i), shardSize),
		})
	}
	return files
}

// requireImageVolume runs `parts.sh image-volume` and returns containerd
// 2's folder; without it the test is skipped with its one line, or fails
// when STOWAGE_REQUIRE_IMAGE_VOLUME is set.
func requireImageVolume(t *testing.T) string {
	t.Helper()
	dir, msg := findContainerd2()
	if dir == "" {
		if os.Getenv(requireImageVolumeEnv) != "" {
			t.Fatalf("%s is set, but the image-volume test cannot run: %s", requireImageVolumeEnv, msg)
		}
		t.Skipf("image-volume test skipped: %s (set %s=1 to make this a failure)", msg, requireImageVolumeEnv)
	}
	return dir
}

// findContainerd2 runs `parts.sh image-volume` and returns containerd 2's
// folder, or "" and the line saying what is missing.
func findContainerd2() (dir, missing string) {
	out, err := exec.Command("bash", "parts.sh", "image-volume").CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return "", msg
	}
	if d := os.Getenv("STOWAGE_CONTAINERD2_DIR"); d != "" {
		return d, ""
	}
	cache := os.Getenv("STOWAGE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "stowage")
	}
	return filepath.Join(cache, "containerd-v2.4.2"), ""
}

// TestImageVolume is issue 24's proof on a real node, on containerd 2
// (hack/containerd/build.sh) beside Debian's runc: a 200 MB model
// artifact (an OCI image whose tar layers are the model files, with an OCI
// image config and an artifactType) is locked upstream, carried to an
// empty site registry through a bundle (`mirror --to oci:`, the upstream
// registry stopped, `mirror --from oci:`), pre-staged by the rendered
// DaemonSet (an image volume of the pinned site reference; the kubelet
// pulls it, with no feature gate: image volumes are GA and locked on in
// 1.36), and reported present by `stowage status`; a second artifact of
// the same size is pulled at a workload pod's start, for the comparison;
// then every registry is stopped and a workload pod with nothing but its
// own spec (the pinned references, no pull Secret) mounts the pre-staged
// artifact and prints a known file of it and the weights' digests.
//
// The API server and the kubelet run with ImageVolumeWithDigest (alpha in
// 1.37) on, so that the pods' status shows which digest the runtime
// reports for a mounted volume: stowage status must count the artifact
// present from that or, where it is not the manifest's, from the node's
// status.images.
func TestImageVolume(t *testing.T) {
	requireParts(t)
	containerd2 := requireImageVolume(t)
	var measures []measure
	defer func() {
		if len(measures) == 0 {
			return
		}
		var b strings.Builder
		b.WriteString("image-volume measurements (2 cores; 200 MB artifact; load average 1/5/15 min at the end of each step):\n")
		for _, m := range measures {
			fmt.Fprintf(&b, "  %-66s %6.1fs   load %s\n", m.what, m.took.Seconds(), m.load)
		}
		fmt.Print(b.String())
		t.Log(b.String())
	}()
	record := func(what string, d time.Duration) {
		measures = append(measures, measure{what, d, loadAvg()})
	}
	ctx := context.Background()

	bins := buildBinaries(t)
	readfiles := filepath.Join(t.TempDir(), "readfiles")
	if out, err := goBuild(readfiles, "./cmd/readfiles"); err != nil {
		t.Fatalf("go build ./cmd/readfiles: %v\n%s", err, out)
	}
	ns := newNamespace(t)
	env := []string{"DOCKER_CONFIG=" + filepath.Join(ns.state, "docker-config")}
	stowage := func(args ...string) string {
		t.Helper()
		return ns.run(t, env, bins.stowage, args...)
	}
	upstream := startRegistry(t, ns, plainHost, "")

	// Upstream: the helper and pause images, the model server and the two
	// artifacts.
	start := time.Now()
	p := &pusher{ns: ns}
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	pauseDigest := p.push(t, pauseRef, image(t, amd64, []string{"/pause"}, file{"pause", 0o555, readFile(t, bins.pause)}))
	helper, err := helperimage.Build(ctx, helperimage.Options{ModuleDir: ".."})
	if err != nil {
		t.Fatal(err)
	}
	p.pushIndex(t, helperRef, helper)
	p.push(t, serverRef, image(t, amd64, []string{"/readfiles"}, file{"readfiles", 0o555, readFile(t, readfiles)}))
	want := map[string][]registrytest.ArtifactFile{}
	pushed := map[string]string{}
	for ref, seed := range map[string]string{modelArtifactRef: "stowage model", coldArtifactRef: "stowage cold model"} {
		want[ref] = modelFiles(seed)
		img, err := registrytest.Artifact(registrytest.ArtifactImage, modelArtifactType, want[ref])
		if err != nil {
			t.Fatal(err)
		}
		pushed[ref] = p.push(t, ref, img)
	}
	record("build and push two 200 MB artifacts upstream", time.Since(start))

	// Connected side: lock, then one bundle.
	cfg := writeImageVolumeConfig(t)
	insecure := []string{"--insecure-registry", plainHost}
	stowage(append([]string{"lock", cfg}, insecure...)...)
	l := readLock(t, cfg)
	for ref, d := range pushed {
		if got := lockedDigest(t, l, ref); got != d {
			t.Fatalf("the lock pins %s at %s, want the pushed manifest %s", ref, got, d)
		}
	}
	bundle := filepath.Join(ns.state, "bundle")
	start = time.Now()
	stowage(append([]string{"mirror", cfg, "--to", "oci:" + bundle}, insecure...)...)
	record("mirror --to oci: (bundle written from upstream)", time.Since(start))
	checkBundle(t, bundle, map[*lock.Lock]siteMapping{l: ivSite})

	// Air gap: upstream stops; an empty site takes the bundle.
	stopRegistries(t, ns, upstream)
	site := startRegistryLog(t, ns, siteHost, "", true)
	start = time.Now()
	stowage("mirror", "--from", "oci:"+bundle, "--insecure-registry", siteHost)
	record("mirror --from oci: (bundle pushed to the site)", time.Since(start))

	out := filepath.Join(t.TempDir(), "models")
	stowage("render", cfg, "--profile", "models", "--output-dir", out)
	modelAtSite := ivSite.ref(t, modelArtifactRef, pushed[modelArtifactRef])
	coldAtSite := ivSite.ref(t, coldArtifactRef, pushed[coldArtifactRef])
	serverAtSite := ivSite.ref(t, serverRef, lockedDigest(t, l, serverRef))
	dss := renderedDaemonSets(t, out)
	var volumes []string
	for _, ds := range dss {
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.Image != nil {
				volumes = append(volumes, v.Image.Reference+" "+string(v.Image.PullPolicy))
			}
		}
	}
	if !slices.Equal(volumes, []string{modelAtSite + " IfNotPresent"}) {
		t.Fatalf("the rendered DaemonSets' image volumes are %q, want the artifact pinned at the site: %s IfNotPresent", volumes, modelAtSite)
	}

	// The node knows only the site; its sandbox image is the site's pause.
	c := startClusterWith(t, ns, ivSite.ref(t, pauseRef, pauseDigest), []string{siteHost}, clusterOptions{
		containerd2:  containerd2,
		featureGates: map[string]bool{"ImageVolumeWithDigest": true},
	})
	record("cluster on containerd 2 start to node Ready", c.startToReady)
	version := c.ns.run(t, nil, filepath.Join(containerd2, "containerd"), "--version")
	t.Logf("runtime: %s", strings.TrimSpace(version))
	for _, n := range []string{modelsNS, servingNS} {
		c.kubectl(t, "create", "namespace", n)
	}

	onNode := func(ref string) bool {
		repo, digest, _ := strings.Cut(ref, "@")
		return c.ctrImages(t)[repoOf(t, repo)+"@"+digest]
	}
	if onNode(modelAtSite) || onNode(coldAtSite) {
		t.Fatal("an artifact is on the node before anything asked for it")
	}

	if !t.Run("prestage", func(t *testing.T) {
		start := time.Now()
		c.kubectl(t, "apply", "--server-side", "-k", out)
		waitFor(t, 5*time.Minute, "the artifact "+modelAtSite+" in containerd", func() (bool, string) {
			return onNode(modelAtSite), c.podSummary(t, modelsNS)
		})
		record("pre-staged: apply to the artifact on the node (ctr)", time.Since(start))
		for _, ds := range dss {
			c.waitRendered(t, ds, 5*time.Minute)
		}
		record("pre-staged: apply to the DaemonSet Ready", time.Since(start))
		c.checkArtifactStatus(t, bins.stowage, cfg, modelAtSite, pushed[modelArtifactRef])
	}) {
		t.FailNow()
	}

	t.Run("pulled-at-pod-start", func(t *testing.T) {
		// The comparison: a workload mounting an artifact nothing
		// pre-staged, the site up. Its server image is on the node.
		cold := modelPod("cold-start", coldAtSite, serverAtSite)
		start := time.Now()
		if _, err := c.client.CoreV1().Pods(servingNS).Create(ctx, cold, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Minute, "the artifact "+coldAtSite+" in containerd", func() (bool, string) {
			return onNode(coldAtSite), c.podSummary(t, servingNS)
		})
		record("pulled at pod start: pod created to the artifact on the node (ctr)", time.Since(start))
		c.waitStarts(t, servingNS, "", 5*time.Minute, "", cold.Name)
		record("pulled at pod start: pod created to Running", time.Since(start))
		c.checkModelLogs(t, cold.Name, want[coldArtifactRef])
	})

	// Offline: no registry answers from here on.
	stopRegistries(t, ns, site)

	t.Run("offline/workload", func(t *testing.T) {
		w := modelPod("model-server", modelAtSite, serverAtSite)
		start := time.Now()
		if _, err := c.client.CoreV1().Pods(servingNS).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := c.waitStarts(t, servingNS, "", 3*time.Minute, "the artifact and the server were pre-staged", w.Name)
		record("pre-staged, every registry stopped: pod created to Running", time.Since(start))
		c.checkModelLogs(t, w.Name, want[modelArtifactRef])
		c.checkPulledFromCache(t, servingNS, w.Name, got)
		for _, cs := range got.Status.ContainerStatuses {
			for _, vm := range cs.VolumeMounts {
				if vm.VolumeStatus != nil && vm.VolumeStatus.Image != nil {
					t.Logf("the workload's volume %s: the kubelet reports imageRef %s", vm.Name, vm.VolumeStatus.Image.ImageRef)
				}
			}
		}
		// Still on the node, and still reported so.
		if !onNode(modelAtSite) {
			t.Errorf("%s left the node", modelAtSite)
		}
		c.checkArtifactStatus(t, bins.stowage, cfg, modelAtSite, pushed[modelArtifactRef])
	})
}

// goBuild builds pkg of this module into out, static, with the Go
// toolchain that runs the test; it returns go's output.
func goBuild(out, pkg string) ([]byte, error) {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd.CombinedOutput()
}

// writeImageVolumeConfig writes the image-volume config: the project's
// helper image and helper.pause, the model artifact (artifact: true) and
// the model server in puller models, the cold artifact in a profile of its
// own (mirrored to the site, never rendered), and the site.
func writeImageVolumeConfig(t *testing.T) string {
	t.Helper()
	cfg := fmt.Sprintf(`helper:
  image: %q
  pause: %q
site:
  registry: %q
images:
  model:
    reference: %q
    artifact: true
  cold-model:
    reference: %q
    artifact: true
  server:
    reference: %q
profiles:
  models:
    pullers:
    - name: models
      namespace: %s
      images: [model, server]
  cold:
    pullers:
    - name: cold
      namespace: %s
      images: [cold-model]
`, helperRef, pauseRef, ivSite.registry, modelArtifactRef, coldArtifactRef, serverRef, modelsNS, modelsNS)
	return writeConfigDir(t, cfg)
}

// modelPod is a workload as a user writes it: the model server, pinned,
// mounting the artifact (pinned, IfNotPresent) as an image volume at
// modelMount and reading its files; no pull Secret.
func modelPod(name, artifact, server string) *corev1.Pod {
	spec := podSpec("")
	ct := container("server", server)
	ct.Args = []string{modelMount + "/config.json"}
	for i := 1; i <= shards; i++ {
		ct.Args = append(ct.Args, fmt.Sprintf("%s/model-%05d-of-%05d.safetensors", modelMount, i, shards))
	}
	ct.VolumeMounts = []corev1.VolumeMount{{Name: "model", MountPath: modelMount, ReadOnly: true}}
	spec.Containers = []corev1.Container{ct}
	spec.Volumes = []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: artifact, PullPolicy: corev1.PullIfNotPresent},
	}}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: servingNS}, Spec: spec}
}

// checkModelLogs reads the pod's log (the readfiles program's lines) until
// it says ready, and checks that it read every file of the artifact with
// the artifact's bytes: config.json's content, every shard's size and
// SHA-256.
func (c *cluster) checkModelLogs(t *testing.T, podName string, files []registrytest.ArtifactFile) {
	t.Helper()
	var log string
	waitFor(t, time.Minute, "the log of "+servingNS+"/"+podName+" saying ready", func() (bool, string) {
		b, err := c.client.CoreV1().Pods(servingNS).GetLogs(podName, &corev1.PodLogOptions{}).DoRaw(context.Background())
		if err != nil {
			return false, err.Error()
		}
		log = string(b)
		return strings.Contains(log, "\nready\n"), log
	})
	for _, f := range files {
		path := modelMount + "/" + f.Name
		sum := sha256.Sum256(f.Data)
		if line := fmt.Sprintf("file %s %d sha256:%s\n", path, len(f.Data), hex.EncodeToString(sum[:])); !strings.Contains(log, line) {
			t.Errorf("the workload's log lacks %q:\n%s", line, log)
		}
		if f.Name == "config.json" {
			if line := fmt.Sprintf("content %s %q\n", path, f.Data); !strings.Contains(log, line) {
				t.Errorf("the workload's log lacks config.json's content %q:\n%s", line, log)
			}
		}
	}
	if !t.Failed() {
		t.Logf("%s/%s read the artifact from its image volume: config.json %q and %d weight shards, sizes and SHA-256 as pushed", servingNS, podName, strings.TrimSpace(string(files[0].Data)), len(files)-1)
	}
}

// checkArtifactStatus checks what the node and `stowage status` say of the
// artifact ref (pinned at digest): on the node in containerd and in the
// node's status.images, and stowage status (waiting at most 2 minutes for
// the kubelet's image list) reporting it success, present on the node,
// with the locked digest. It logs where status read it from and what the
// pre-pull pod's volume status says.
func (c *cluster) checkArtifactStatus(t *testing.T, stowage, cfg, ref, digest string) {
	t.Helper()
	repo, _, _ := strings.Cut(ref, "@")
	byDigest := repoOf(t, repo) + "@" + digest
	if !c.ctrImages(t)[byDigest] {
		t.Errorf("%s is not in `ctr -n k8s.io images ls`", byDigest)
	}
	waitFor(t, 2*time.Minute, byDigest+" in the node's status.images", func() (bool, string) {
		node, err := c.client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, im := range node.Status.Images {
			names = append(names, im.Names...)
		}
		return slices.Contains(names, byDigest), strings.Join(names, " ")
	})
	out, errOut, err := c.ns.output(nil, 3*time.Minute, stowage, "status", cfg, "--profile", "models", "--kubeconfig", c.kubeconfig, "--wait", "2m", "-o", "json")
	if err != nil {
		t.Fatalf("stowage status: %v\n%s%s", err, out, errOut)
	}
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stowage status -o json: %v\n%s", err, out)
	}
	im := r.Image(ref)
	if im == nil {
		t.Fatalf("stowage status does not report %s:\n%s", ref, out)
	}
	on := im.On(nodeName)
	if !im.Artifact || im.State != status.Success || im.Digest != digest || on == nil || on.State != status.Present {
		t.Fatalf("stowage status: %s artifact %v, %s with %s, on %s %+v; want an artifact, success with %s, present:\n%s", ref, im.Artifact, im.State, im.Digest, nodeName, on, digest, out)
	}
	// Which digest the kubelet reports for the mounted volume (the
	// ImageVolumeWithDigest gate is on): the manifest's, which status
	// takes, or the runtime's own image ID, which it must not.
	var reported []string
	for _, pod := range c.pods(t, modelsNS) {
		for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
			for _, vm := range cs.VolumeMounts {
				if vm.VolumeStatus != nil && vm.VolumeStatus.Image != nil {
					reported = append(reported, vm.VolumeStatus.Image.ImageRef)
				}
			}
		}
	}
	manifest := slices.ContainsFunc(reported, func(s string) bool { return strings.HasSuffix(s, digest) })
	switch {
	case manifest && on.Source != "volume status" && on.Source != "node status.images":
		t.Errorf("stowage status read the artifact from %q; the pod's volume status names its manifest digest", on.Source)
	case !manifest && on.Source != "node status.images":
		t.Errorf("stowage status read the artifact from %q, but the pod's volume status names %v, not its manifest %s: only the node's status.images proves it", on.Source, reported, digest)
	}
	t.Logf("stowage status: %s present on %s (source: %s); the pre-pull pod's volume status names %v (the manifest is %s)", ref, nodeName, on.Source, reported, digest)
	if len(reported) == 0 {
		// The kubelet (v1.37.2) looks for each image volume among the
		// mounts the runtime reports by volume name, which the CRI does
		// not carry, and logs this instead of setting the digest.
		n := strings.Count(string(readFile(t, filepath.Join(c.ns.state, "log", "kubelet.log"))), `"image was not found"`)
		t.Logf("no volume status: the kubelet logged %q %d times (ImageVolumeWithDigest on)", "image was not found", n)
	}
}
