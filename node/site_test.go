package node

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
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
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/helperimage"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/status"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// The site acceptance suite's names. Its images are those of TestNode
// (the upstream registries plainHost and privateHost), plus the Submarine
// notebooks' three environments; the site is siteHost, anonymous, the one
// registry containerd knows.
const (
	acceptNS      = "stowage-site" // the site config's puller
	acceptPuller  = "prepull"
	submarineNS   = "submarine"
	tenantA       = "tenant-a" // a tenant of the Submarine puller only
	existingPull  = "submarine-dockerhub"
	harborEnv     = "SUBMARINE_HARBOR_PASSWORD"
	jupyterRef    = plainHost + "/apache/submarine:jupyter-notebook-0.7.0"
	jupyterZhRef  = plainHost + "/apache/submarine:jupyter-notebook-0.7.0-chinese"
	jupyterGPURef = privateHost + "/apache/submarine:jupyter-notebook-gpu-0.7.0"
)

// siteMapping is where a config's site puts each source registry, written
// here independently of stowage (internal/site): a registry of registries
// goes to its prefix, any other to <registry>/<source registry with ':' as
// '_'>.
type siteMapping struct {
	registry   string
	registries map[string]string
}

// The two configs' sites: the acceptance config maps each source registry
// to a project of its own; the Submarine shape maps the public registry (its
// Docker Hub) to "dockerhub" and leaves the rest to the default prefix.
var (
	acceptSite    = siteMapping{siteHost + "/mirror", map[string]string{plainHost: siteHost + "/public", privateHost: siteHost + "/private"}}
	submarineSite = siteMapping{siteHost + "/mirror", map[string]string{plainHost: siteHost + "/dockerhub"}}
)

// repo returns the site repository of ref (a reference on plainHost or
// privateHost, tag allowed).
func (m siteMapping) repo(t *testing.T, ref string) string {
	t.Helper()
	r := registrytest.Ref(t, ref).Context()
	host, path := r.RegistryStr(), r.RepositoryStr()
	if p, ok := m.registries[host]; ok {
		return p + "/" + path
	}
	return m.registry + "/" + strings.ReplaceAll(host, ":", "_") + "/" + path
}

// ref returns the pinned site reference render names for ref at digest.
func (m siteMapping) ref(t *testing.T, ref, digest string) string {
	t.Helper()
	tag := ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		tag = ref[i:]
	}
	return m.repo(t, ref) + tag + "@" + digest
}

// fnSite is the mapping as a functionConfig's site field.
func (m siteMapping) fnSite() map[string]any {
	regs := map[string]any{}
	for k, v := range m.registries {
		regs[k] = v
	}
	return map[string]any{"registry": m.registry, "registries": regs}
}

// yaml writes the mapping as a config's top-level site.
func (m siteMapping) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "site:\n  registry: %q\n  registries:\n", m.registry)
	keys := make([]string, 0, len(m.registries))
	for k := range m.registries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "    %q: %q\n", k, m.registries[k])
	}
	return b.String()
}

// TestSite is the site acceptance run, as an operator takes it: a config
// of the usual shape (public images, one private image behind htpasswd, a
// multi-arch index, the project's helper image, helper.pause, site.registries
// mapping each source registry, tenants) and the Submarine notebooks' shape
// are locked against the upstream registries and written into one bundle
// (`mirror --to oci:`); the upstream registries stop; the site registry
// starts empty and the bundle is pushed to it (`mirror --from oci:`, no
// config); `vet --site` finds everything there; a cluster whose containerd
// knows only the site (its sandbox_image the site's copy of the pause the
// mirror carried) gets both renders applied, every DaemonSet Ready, and
// `status` success; then the site registry stops too, and workloads start
// or do not, as vet and status said they would.
func TestSite(t *testing.T) {
	requireParts(t)
	var measures []measure
	defer func() {
		if len(measures) == 0 {
			return
		}
		var b strings.Builder
		b.WriteString("site acceptance measurements (2 cores; load average 1/5/15 min at the end of each step):\n")
		for _, m := range measures {
			fmt.Fprintf(&b, "  %-58s %6.1fs   load %s\n", m.what, m.took.Seconds(), m.load)
		}
		fmt.Print(b.String())
		t.Log(b.String())
	}()
	record := func(what string, d time.Duration) {
		measures = append(measures, measure{what, d, loadAvg()})
	}
	ctx := context.Background()

	bins := buildBinaries(t)
	ns := newNamespace(t)
	password := randomHex(t)
	// The operator names the password variables the configs may read.
	env := []string{passwordEnv + "=" + password, harborEnv + "=" + password, "STOWAGE_ALLOW_ENV=" + passwordEnv + "," + harborEnv, "DOCKER_CONFIG=" + filepath.Join(ns.state, "docker-config")}
	stowage := func(args ...string) string {
		t.Helper()
		return ns.run(t, env, bins.stowage, args...)
	}
	upstream := []string{"--insecure-registry", plainHost, "--insecure-registry", privateHost}
	public := startRegistry(t, ns, plainHost, "")
	private := startRegistry(t, ns, privateHost, password)

	// The upstream images.
	start := time.Now()
	p := &pusher{ns: ns, auth: map[string]authn.Authenticator{privateHost: &authn.Basic{Username: privateUser, Password: password}}}
	pauseBin := readFile(t, bins.pause)
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := v1.Platform{OS: "linux", Architecture: "arm64"}
	pauseDigest := p.push(t, pauseRef, image(t, amd64, []string{"/pause"}, file{"pause", 0o555, pauseBin}))
	helper, err := helperimage.Build(ctx, helperimage.Options{ModuleDir: ".."})
	if err != nil {
		t.Fatal(err)
	}
	p.pushIndex(t, helperRef, helper)
	workload := func(what string, p v1.Platform) v1.Image {
		return image(t, p, []string{"/pause"}, file{"pause", 0o555, pauseBin}, file{"data/" + strings.ReplaceAll(what, "/", "_"), 0o444, []byte(what + "\n")})
	}
	p.push(t, dataRef, workload("data 1", amd64))
	p.pushIndex(t, multiRef, index(t, map[string]v1.Image{"linux/amd64": workload("multi amd64", amd64), "linux/arm64": workload("multi arm64", arm64)}))
	p.push(t, modelRef, workload("model 1", amd64))
	p.push(t, jupyterRef, workload("notebook", amd64))
	p.pushIndex(t, jupyterZhRef, index(t, map[string]v1.Image{"linux/amd64": workload("notebook zh amd64", amd64), "linux/arm64": workload("notebook zh arm64", arm64)}))
	p.push(t, jupyterGPURef, workload("notebook gpu", amd64))

	// Connected side: lock both configs against upstream, one bundle.
	accept := writeAcceptConfig(t)
	sub := writeSubmarineConfig(t)
	stowage(append([]string{"lock", accept}, upstream...)...)
	stowage(append([]string{"lock", sub}, upstream...)...)
	acceptLock := readLock(t, accept)
	subLock := readLock(t, sub)
	bundle := filepath.Join(ns.state, "bundle")
	stowage(append([]string{"mirror", accept, "--to", "oci:" + bundle}, upstream...)...)
	stowage(append([]string{"mirror", sub, "--to", "oci:" + bundle}, upstream...)...)
	record("lock and bundle both configs (upstream)", time.Since(start))
	t.Run("bundle", func(t *testing.T) {
		checkBundle(t, bundle, map[*lock.Lock]siteMapping{acceptLock: acceptSite, subLock: submarineSite})
	})

	// Air gap: upstream stops; the site starts empty and takes the bundle.
	stopRegistries(t, ns, public, private)
	site := startRegistryLog(t, ns, siteHost, "", true)
	start = time.Now()
	pushOut := stowage("mirror", "--from", "oci:"+bundle, "--insecure-registry", siteHost)
	record("bundle pushed to the site (mirror --from oci:)", time.Since(start))
	t.Logf("stowage mirror --from oci:%s:\n%s", bundle, pushOut)

	var vetAccess map[string]string
	t.Run("vet-site", func(t *testing.T) {
		for _, dir := range []string{accept, sub} {
			out, errOut, err := ns.output(env, 2*time.Minute, bins.stowage, "vet", dir, "--site", "--insecure-registry", siteHost)
			if err != nil {
				t.Errorf("stowage vet %s --site (waits on issue 18 item 4, vet --site): %v\n%s%s", filepath.Base(dir), err, out, errOut)
			}
		}
		// Who can use each pre-pulled image offline, as vet says it.
		out, errOut, err := ns.output(env, 2*time.Minute, bins.stowage, "vet", accept, "-o", "json")
		if err != nil {
			t.Fatalf("stowage vet -o json: %v\n%s%s", err, out, errOut)
		}
		vetAccess = accessSummaries(t, out)
	})

	// Render on the site: every reference names the site.
	acceptOut := filepath.Join(t.TempDir(), "accept")
	subOut := filepath.Join(t.TempDir(), "submarine")
	stowage("render", accept, "--output-dir", acceptOut)
	stowage("render", sub, "--output-dir", subOut)
	acceptDS := renderedDaemonSets(t, acceptOut)
	subDS := renderedDaemonSets(t, subOut)
	pauseAtSite := acceptSite.ref(t, pauseRef, pauseDigest)
	for _, ds := range append(slices.Clone(acceptDS), subDS...) {
		spec := ds.Spec.Template.Spec
		for _, ct := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			if !strings.HasPrefix(ct.Image, siteHost+"/") || !strings.Contains(ct.Image, "@sha256:") {
				t.Errorf("DaemonSet %s/%s container %s pulls %s: not a pinned reference on the site %s", ds.Namespace, ds.Name, ct.Name, ct.Image, siteHost)
			}
		}
	}
	if got := mainImages(acceptDS); !slices.Equal(got, []string{pauseAtSite}) {
		t.Fatalf("the site config's DaemonSets run %v as main container, want helper.pause at the site: %s", got, pauseAtSite)
	}

	// The node: containerd knows the site only, its sandbox image the
	// site's copy of the pause the mirror carried.
	c := startClusterIn(t, ns, pauseAtSite, []string{siteHost})
	record("cluster start to node Ready", c.startToReady)
	for _, n := range []string{acceptNS, submarineNS, tenantA, tenantNS, outsideNS} {
		c.kubectl(t, "create", "namespace", n)
	}
	// The Submarine shape's existing Secret (auth.secret), in the puller's
	// namespace and both tenants, as its README asks.
	for _, n := range []string{submarineNS, tenantA, tenantNS} {
		createDockerSecret(t, c, n, existingPull, siteHost, "submarine", randomHex(t))
	}

	if !t.Run("apply", func(t *testing.T) {
		start := time.Now()
		c.kubectl(t, "apply", "--server-side", "-k", acceptOut)
		c.kubectl(t, "apply", "--server-side", "-k", subOut)
		for _, ds := range append(slices.Clone(acceptDS), subDS...) {
			c.waitRendered(t, ds, 4*time.Minute)
		}
		record(fmt.Sprintf("apply to %d DaemonSets Ready, images from the site", len(acceptDS)+len(subDS)), time.Since(start))
		c.checkSiteOnNode(t, site, map[*lock.Lock]siteMapping{acceptLock: acceptSite, subLock: submarineSite}, jupyterGPURef)
	}) {
		t.FailNow()
	}

	var statusAccess map[string]string
	t.Run("status", func(t *testing.T) {
		for _, dir := range []string{accept, sub} {
			out, errOut, err := ns.output(nil, 2*time.Minute, bins.stowage, "status", dir, "--kubeconfig", c.kubeconfig, "--wait", "1m", "-o", "json")
			if err != nil {
				t.Errorf("stowage status %s: %v\n%s%s", filepath.Base(dir), err, out, errOut)
				continue
			}
			var r status.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("stowage status -o json: %v\n%s", err, out)
			}
			for _, im := range r.Images {
				if im.Name == jupyterGPURef {
					if on := onNode(r, im.Name); on.State != status.NotScheduled {
						t.Errorf("stowage status: %s is %s on %s, want %s (no GPU on this node)", im.Name, on.State, nodeName, status.NotScheduled)
					}
					continue
				}
				if im.State != status.Success {
					t.Errorf("stowage status %s: %s is %s (%s), want success", filepath.Base(dir), im.Name, im.State, im.Message)
				}
			}
			if dir == accept {
				statusAccess = accessSummaries(t, out)
			}
		}
		table, _, _ := ns.output(nil, time.Minute, bins.stowage, "status", accept, "--kubeconfig", c.kubeconfig)
		t.Logf("stowage status (site config):\n%s", table)
	})

	// What vet and status said beforehand: the public images are open to
	// any pod offline, the private one only to pods presenting its Secret.
	secret := c.renderedSecretIn(t, acceptNS)
	modelSite := acceptSite.ref(t, modelRef, lockedDigest(t, acceptLock, modelRef))
	t.Run("said-beforehand", func(t *testing.T) {
		for what, said := range map[string]map[string]string{"vet -o json": vetAccess, "status -o json": statusAccess} {
			if len(said) == 0 {
				t.Errorf("%s says per image nothing about who can use the pre-pulled copy offline (waits on issue 18 item 1, creds)", what)
				continue
			}
			for _, ref := range []string{dataRef, multiRef} {
				at := acceptSite.ref(t, ref, lockedDigest(t, acceptLock, ref))
				if s := said[at]; s != "any pod" {
					t.Errorf("%s: %s may be used offline by %q, want \"any pod\"", what, at, s)
				}
			}
			if s := said[modelSite]; !strings.Contains(s, secret) || strings.HasPrefix(s, "any pod") {
				t.Errorf("%s: %s may be used offline by %q, want pods presenting credentials equal to Secret %s", what, modelSite, s, secret)
			}
		}
		if !t.Failed() {
			t.Logf("vet and status: %s: %s", modelSite, vetAccess[modelSite])
		}
	})

	// Offline: the site stops too.
	stopRegistries(t, ns, site)

	t.Run("offline/public-workload-without-secret", func(t *testing.T) {
		dep := pinWithFnSite(t, c, bins.stowage, accept, acceptSite.fnSite(), deployment("workload", outsideNS, "", map[string]string{"data": dataRef, "multi": multiRef}))
		for _, ct := range dep.Spec.Template.Spec.Containers {
			ref := map[string]string{"data": dataRef, "multi": multiRef}[ct.Name]
			if want := acceptSite.ref(t, ref, lockedDigest(t, acceptLock, ref)); ct.Image != want {
				t.Fatalf("stowage fn wrote %s for %s, want the pinned site reference %s", ct.Image, ref, want)
			}
		}
		if len(dep.Spec.Template.Spec.ImagePullSecrets) != 0 {
			t.Fatalf("the pinned Deployment names pull Secrets %v", dep.Spec.Template.Spec.ImagePullSecrets)
		}
		if _, err := c.client.AppsV1().Deployments(outsideNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := c.waitStarts(t, outsideNS, "app=workload", 2*time.Minute,
			"a pod without imagePullSecrets may use a public image offline only if no pre-pull pod pulled it with credentials (waits on issue 18 item 1, creds)")
		c.checkPulledFromCache(t, outsideNS, pod.Name, pod)
	})

	t.Run("offline/tenant-private-image", func(t *testing.T) {
		if _, err := c.client.CoreV1().Secrets(tenantNS).Get(ctx, secret, metav1.GetOptions{}); err != nil {
			t.Fatalf("stowage rendered no copy of the pull Secret %s into the tenant %s: %v", secret, tenantNS, err)
		}
		with := pod("with-secret", tenantNS, secret, modelSite)
		if _, err := c.client.CoreV1().Pods(tenantNS).Create(ctx, with, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := c.waitStarts(t, tenantNS, "", 2*time.Minute, "", with.Name)
		c.checkPulledFromCache(t, tenantNS, got.Name, got)
	})

	t.Run("offline/outsider-private-image", func(t *testing.T) {
		bare := pod("no-secret", outsideNS, "", modelSite)
		if _, err := c.client.CoreV1().Pods(outsideNS).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reason := c.waitPodWaiting(t, outsideNS, bare.Name, []string{"ErrImagePull", "ImagePullBackOff"}, 2*time.Minute)
		if !strings.Contains(reason, siteHost) {
			t.Errorf("the pod waits with %q: want the kubelet asking the stopped site %s", reason, siteHost)
		}
		t.Logf("a pod outside the tenants, without credentials, naming %s (on the node): %s", modelSite, reason)
	})

	t.Run("offline/sandbox-from-site", func(t *testing.T) {
		images := c.ctrImages(t)
		if !images[acceptSite.repo(t, pauseRef)+"@"+pauseDigest] {
			t.Errorf("containerd's sandbox image %s is not on the node", pauseAtSite)
		}
		var pulled bool
		for _, r := range site.requests(t) {
			if strings.Contains(r.agent, "containerd") && r.status == 200 && r.path == "/v2/"+strings.TrimPrefix(acceptSite.repo(t, pauseRef), siteHost+"/")+"/manifests/"+pauseDigest {
				pulled = true
			}
		}
		if !pulled {
			t.Errorf("the site's access log shows no containerd request of the sandbox image's manifest %s", pauseAtSite)
		}
		// Every pod of this run got its sandbox from that image: the
		// offline pods above started with no registry up.
		t.Logf("sandbox image %s: pulled by containerd from the site, reused offline", pauseAtSite)
	})

	t.Run("offline/submarine-notebook", func(t *testing.T) {
		dep := pinWithFnSite(t, c, bins.stowage, sub, submarineSite.fnSite(), deployment("notebook", tenantA, "", map[string]string{"notebook": jupyterRef}))
		want := submarineSite.ref(t, jupyterRef, lockedDigest(t, subLock, jupyterRef))
		if got := dep.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Fatalf("stowage fn wrote %s, want %s", got, want)
		}
		if _, err := c.client.AppsV1().Deployments(tenantA).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := c.waitStarts(t, tenantA, "app=notebook", 2*time.Minute,
			"the Submarine shape's public notebook image is pulled with the Harbor Secret unless render gives it a pod without one (waits on issue 18 item 1, creds)")
		c.checkPulledFromCache(t, tenantA, pod.Name, pod)
	})
}

// writeAcceptConfig writes the acceptance config: a scratch image, a
// multi-arch index and a private image (basic auth from
// $NODE_REGISTRY_PASSWORD) in one puller with a tenant, the project's
// helper image and helper.pause, and a site mapping each source registry.
func writeAcceptConfig(t *testing.T) string {
	t.Helper()
	cfg := fmt.Sprintf(`helper:
  image: %q
  pause: %q
%simages:
  data:
    reference: %q
  multi:
    reference: %q
  model:
    reference: %q
    auth:
      username: %q
      password: "env:%s"
profiles:
  site:
    pullers:
    - name: %s
      namespace: %s
      tenants: [%s]
      images: [data, multi, model]
`, helperRef, pauseRef, acceptSite.yaml(), dataRef, multiRef, modelRef, privateUser, passwordEnv, acceptPuller, acceptNS, tenantNS)
	return writeConfigDir(t, cfg)
}

// writeSubmarineConfig writes examples/submarine-notebooks's shape with the
// suite's registries: one puller in submarine for tenant-a and tenant-b,
// a public notebook, a GPU notebook behind basic auth with its nodeSelector
// and toleration, a multi-arch notebook pulled with an existing Secret
// (auth.secret), refreshHours, and a site whose registries map the public
// registry (the example's docker.io) to its own project, the rest to the
// default prefix.
func writeSubmarineConfig(t *testing.T) string {
	t.Helper()
	cfg := fmt.Sprintf(`helper:
  image: %q
%senvironments:
  jupyter:
    image: %q
  jupyter-gpu:
    image: %q
    auth:
      username: %q
      password: "env:%s"
    nodeSelector:
      nvidia.com/gpu.present: "true"
    tolerations:
    - key: nvidia.com/gpu
      operator: Exists
      effect: NoSchedule
  jupyter-chinese:
    image: %q
    auth:
      secret: %s
profiles:
  notebooks:
    pullers:
    - name: jupyter-image-puller
      namespace: %s
      tenants: [%s, %s]
      environments: [jupyter, jupyter-gpu, jupyter-chinese]
      refreshHours: "2"
`, helperRef, submarineSite.yaml(), jupyterRef, jupyterGPURef, privateUser, harborEnv, jupyterZhRef, existingPull, submarineNS, tenantA, tenantNS)
	return writeConfigDir(t, cfg)
}

func writeConfigDir(t *testing.T, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readLock(t *testing.T, dir string) *lock.Lock {
	t.Helper()
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func lockedDigest(t *testing.T, l *lock.Lock, ref string) string {
	t.Helper()
	e, err := locked(l, ref)
	if err != nil {
		t.Fatal(err)
	}
	return e.Digest
}

// checkBundle reads the bundle's index.json: every entry of each lock is
// there, under its lock key, with the site repository its config's render
// names for it (the bundle's dev.stowage.site annotation).
func checkBundle(t *testing.T, dir string, locks map[*lock.Lock]siteMapping) {
	t.Helper()
	var idx struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "index.json")), &idx); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, m := range idx.Manifests {
		have[m.Annotations["org.opencontainers.image.ref.name"]+" "+m.Digest+" "+m.Annotations["dev.stowage.site"]] = true
	}
	n, missing := 0, 0
	for l, m := range locks {
		for _, e := range l.Entries {
			n++
			if !have[e.Name+" "+e.Digest+" "+m.repo(t, e.Reference)] {
				missing++
				t.Errorf("the bundle holds no %s at %s for the site repository %s (waits on issue 18 item 3, bundle)", e.Name, e.Digest, m.repo(t, e.Reference))
			}
		}
	}
	if missing > 0 {
		t.Logf("index.json (lock key, digest, dev.stowage.site):\n%s", strings.Join(slices.Sorted(maps.Keys(have)), "\n"))
	}
	if !t.Failed() {
		t.Logf("the bundle holds both configs' %d images, each with the site repository render names", n)
	}
}

// accessSummaries finds, anywhere in a JSON report, the objects that say
// who may use a pre-pulled image offline ({"reference": …, "offlineUse": {"summary": …}})
// and returns summary by reference.
func accessSummaries(t *testing.T, out string) map[string]string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]string{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			// vet and status give each image's reference beside its
			// offlineUse object, which holds the one-line summary.
			ref, ok1 := x["reference"].(string)
			use, _ := x["offlineUse"].(map[string]any)
			sum, ok2 := use["summary"].(string)
			if ok1 && ok2 {
				got[ref] = sum
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return got
}

// renderedDaemonSets reads the DaemonSets of a `render --output-dir` output folder,
// sorted by namespace and name.
func renderedDaemonSets(t *testing.T, dir string) []*appsv1.DaemonSet {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*appsv1.DaemonSet
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "kustomization.yaml" {
			continue
		}
		b := readFile(t, filepath.Join(dir, e.Name()))
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if meta.Kind != "DaemonSet" {
			continue
		}
		var ds appsv1.DaemonSet
		if err := yaml.Unmarshal(b, &ds); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out = append(out, &ds)
	}
	if len(out) == 0 {
		t.Fatalf("render wrote no DaemonSet into %s", dir)
	}
	slices.SortFunc(out, func(a, b *appsv1.DaemonSet) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// mainImages returns the images of the DaemonSets' main containers, each
// once, sorted.
func mainImages(dss []*appsv1.DaemonSet) []string {
	var out []string
	for _, ds := range dss {
		for _, c := range ds.Spec.Template.Spec.Containers {
			if !slices.Contains(out, c.Image) {
				out = append(out, c.Image)
			}
		}
	}
	slices.Sort(out)
	return out
}

// createDockerSecret creates a kubernetes.io/dockerconfigjson Secret for
// registry in namespace.
func createDockerSecret(t *testing.T, c *cluster, namespace, name, registry, user, password string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{registry: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
	if _, err := c.client.CoreV1().Secrets(namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRendered waits until the cluster runs the rendered DaemonSet ds:
// observed, and either targeting no node because its nodeSelector asks for
// a label this node lacks (a GPU), or updated, ready and available on the
// node with every init container of its pod run from its pinned digest.
func (c *cluster) waitRendered(t *testing.T, ds *appsv1.DaemonSet, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	onlyElsewhere := false
	for k := range ds.Spec.Template.Spec.NodeSelector {
		if k != "kubernetes.io/os" && k != "kubernetes.io/arch" {
			onlyElsewhere = true
		}
	}
	sel := labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).String()
	waitFor(t, limit, "DaemonSet "+ds.Namespace+"/"+ds.Name+" Ready", func() (bool, string) {
		got, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := got.Status
		msg := fmt.Sprintf("generation %d observed %d desired %d updated %d ready %d available %d; %s", got.Generation, s.ObservedGeneration,
			s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable, c.podSummary(t, ds.Namespace))
		if s.ObservedGeneration < got.Generation {
			return false, msg
		}
		if onlyElsewhere {
			return s.DesiredNumberScheduled == 0, msg
		}
		if s.DesiredNumberScheduled != 1 || s.UpdatedNumberScheduled != 1 || s.NumberReady != 1 || s.NumberAvailable != 1 || s.NumberUnavailable != 0 {
			return false, msg
		}
		pods, err := c.client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp != nil {
			return false, msg
		}
		want := map[string]string{}
		for _, ic := range got.Spec.Template.Spec.InitContainers {
			want[ic.Name] = ic.Image
		}
		for _, st := range pods.Items[0].Status.InitContainerStatuses {
			_, digest, _ := strings.Cut(want[st.Name], "@")
			if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 || digest == "" || !strings.HasSuffix(st.ImageID, "@"+digest) {
				return false, msg
			}
			delete(want, st.Name)
		}
		return len(want) == 0, msg
	})
}

// checkSiteOnNode checks that every image of the locks is on the node under
// its site repository (except those named in elsewhere, for nodes this one
// is not), that containerd holds no image of another registry, and that
// containerd asked the site registry for each (its access log).
func (c *cluster) checkSiteOnNode(t *testing.T, site *registry, locks map[*lock.Lock]siteMapping, elsewhere ...string) {
	t.Helper()
	images := c.ctrImages(t)
	for name := range images {
		if !strings.HasPrefix(name, "sha256:") && !strings.HasPrefix(name, siteHost+"/") {
			t.Errorf("containerd holds %s, from another registry than the site %s", name, siteHost)
		}
	}
	asked := map[string]bool{}
	for _, r := range site.requests(t) {
		if strings.Contains(r.agent, "containerd") && r.status == 200 && (r.method == "GET" || r.method == "HEAD") {
			asked[r.path] = true
		}
	}
	n := 0
	for l, m := range locks {
		for _, e := range l.Entries {
			if slices.Contains(elsewhere, e.Reference) {
				continue
			}
			n++
			repo := m.repo(t, e.Reference)
			if !images[repo+"@"+e.Digest] {
				t.Errorf("%s is not on the node as %s@%s", e.Name, repo, e.Digest)
			}
			if path := "/v2/" + strings.TrimPrefix(repo, siteHost+"/") + "/manifests/" + e.Digest; !asked[path] {
				t.Errorf("the site's access log shows no containerd request %s", path)
			}
		}
	}
	if !t.Failed() {
		t.Logf("all %d images are on the node under their site names, each fetched by containerd from the site (its access log); containerd holds nothing of another registry", n)
	}
}

// renderedSecretIn returns the name of the one dockerconfigjson Secret
// stowage rendered into namespace.
func (c *cluster) renderedSecretIn(t *testing.T, namespace string) string {
	t.Helper()
	list, err := c.client.CoreV1().Secrets(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=stowage"})
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
		t.Fatalf("want one rendered dockerconfigjson Secret in %s, got %v", namespace, names)
	}
	return names[0]
}

// waitStarts waits until the pod named name (or the one pod matching the
// selector) runs with every container ready, and returns it. A container
// waiting with ErrImagePull or ImagePullBackOff fails the test at once,
// with the kubelet's message and why (when given): offline, nothing will
// change that.
func (c *cluster) waitStarts(t *testing.T, namespace, selector string, limit time.Duration, why string, name ...string) *corev1.Pod {
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
			for _, st := range p.Status.ContainerStatuses {
				if w := st.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
					t.Fatalf("pod %s/%s cannot start offline: container %s: %s: %s; %s", namespace, p.Name, st.Name, w.Reason, w.Message, why)
				}
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
