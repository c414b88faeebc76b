package e2e

import (
	"github.com/stowage/stowage/internal/testing/testbin"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/status"
)

// buildStowage returns the stowage binary of the main module the tests
// share (testbin.Stowage: make test's, or built once).
func buildStowage(t *testing.T) string {
	t.Helper()
	return testbin.Stowage(t)
}

// runStowage runs the binary with args and a 2-minute limit, and returns
// stdout, stderr and the exit code.
func runStowage(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// No KUBECONFIG, HOME or in-cluster variables from the machine: the
	// cluster is the one --kubeconfig names.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running stowage %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// readManifests decodes a multi-document YAML file of the repository.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, u)
	}
	return out
}

// TestStatusBinary applies the rendered Submarine example to a real API
// server, creates two nodes (one with a GPU label) and the DaemonSets' pods
// with statuses written through the status subresource, as a kubelet
// would, and runs the real `stowage status` binary with a kubeconfig of a
// user that holds only examples/status/rbac.yaml's ClusterRole.
func TestStatusBinary(t *testing.T) {
	c := startAPIServer(t)
	bin := buildStowage(t)
	ctx := context.Background()
	dir := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	cfg, l := loadExample(t, dir)
	objs := manifests(t, renderProfile(t, cfg, dir, "notebooks", l, exampleEnv))
	c.createNamespaces(t, objs)
	c.apply(t, objs)
	c.apply(t, readManifests(t, filepath.Join(repoRoot, "examples", "status", "rbac.yaml")))
	// The example Jobs are valid objects for this API server (nothing runs
	// them here: envtest has no controllers).
	jobs := readManifests(t, filepath.Join(repoRoot, "examples", "status", "job.yaml"))
	hook := readManifests(t, filepath.Join(repoRoot, "examples", "status", "argocd-postsync-job.yaml"))
	hook[0].SetName("stowage-status-postsync")
	c.apply(t, append(jobs, hook...))

	core, err := coreclient.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	apps, err := appsclient.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := rbacclient.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}

	// A user bound to the example's ClusterRole, and its kubeconfig.
	user, err := c.env.AddUser(envtest.User{Name: "stowage-status-e2e"}, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "stowage-status-e2e"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "stowage-status"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "stowage-status-e2e"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeKubeconfig(t, user)

	// Nodes, their status through the status subresource.
	linux := map[string]string{corev1.LabelOSStable: "linux"}
	gpuLabels := map[string]string{corev1.LabelOSStable: "linux", "nvidia.com/gpu.present": "true"}
	for name, labels := range map[string]map[string]string{"cpu-1": linux, "gpu-1": gpuLabels} {
		n, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := core.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node %s status: %v", name, err)
		}
	}

	// Just applied: the DaemonSet controller (envtest runs none) has not
	// observed any DaemonSet, so status fails, though nothing failed
	// and no node has a pod yet; `status --wait` started now passes once
	// the pods and the observed status below are written.
	stdout, stderr, code := runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "-o", "json")
	if rep := decodeReport(t, stdout); code != 1 || rep.Ready || len(rep.DaemonSets) != 3 || rep.DaemonSets[0].Observed || rep.DaemonSets[1].Observed || rep.DaemonSets[2].Observed {
		t.Fatalf("status right after apply: exit %d, want 1 with no DaemonSet observed\n%s%s", code, stdout, stderr)
	}
	type result struct {
		stdout, stderr string
		code           int
	}
	waited := make(chan result, 1)
	go func() {
		o, e, c := runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "--wait", "90s")
		waited <- result{o, e, c}
	}()
	// Let the waiting run read the cluster before the status is written.
	time.Sleep(3 * time.Second)

	// One pod per DaemonSet and node it targets, every container pulled.
	// The public notebook and the one behind the existing Secret
	// submarine-dockerhub are pulled by DaemonSets of their own.
	targets := map[string][]string{"jupyter-image-puller": {"cpu-1", "gpu-1"}, "jupyter-image-puller-jupyter-gpu": {"gpu-1"},
		"jupyter-image-puller-submarine-dockerhub": {"cpu-1", "gpu-1"}}
	pods := map[string]*corev1.Pod{}
	for dsName, nodes := range targets {
		ds, err := apps.DaemonSets("submarine").Get(ctx, dsName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, node := range nodes {
			pods[dsName+"/"+node] = createDaemonPod(t, core, ds, node)
		}
		n := int32(len(nodes))
		ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n, UpdatedNumberScheduled: n,
			NumberReady: n, NumberAvailable: n, ObservedGeneration: ds.Generation}
		if _, err := apps.DaemonSets("submarine").UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("DaemonSet %s status: %v", dsName, err)
		}
	}

	if w := <-waited; w.code != 0 || !strings.Contains(w.stdout, "4 of 4 images present on every targeted node") {
		t.Fatalf("status --wait 90s: exit %d, want 0 once the DaemonSets are observed\n%s%s", w.code, w.stdout, w.stderr)
	}

	const gpuImage = "harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0"
	// The Docker Hub notebook as the example's site registry (its Harbor)
	// serves it.
	const jupyterImage = "harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0"

	t.Run("all present", func(t *testing.T) {
		stdout, stderr, code := runStowage(t, bin, "status", dir, "--profile", "notebooks", "--kubeconfig", kubeconfig, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rep := decodeReport(t, stdout)
		if !rep.Ready || len(rep.Images) != 4 || !slices.Equal(rep.Nodes, []string{"cpu-1", "gpu-1"}) {
			t.Fatalf("report = %s", stdout)
		}
		for _, im := range rep.Images {
			wantNodes := []string{"cpu-1", "gpu-1"}
			if im.Name == gpuImage {
				wantNodes = []string{"gpu-1"}
			}
			if im.State != status.Success || !slices.Equal(im.Nodes, wantNodes) || !strings.HasPrefix(im.Digest, "sha256:") {
				t.Errorf("%s: state %s nodes %v digest %s, want success on %v", im.Name, im.State, im.Nodes, im.Digest, wantNodes)
			}
		}
		cell := rep.Image(gpuImage).On("cpu-1")
		if cell == nil || cell.State != status.NotScheduled || cell.Reason != "NodeSelector" ||
			cell.Message != "node lacks the nodeSelector label nvidia.com/gpu.present=true" {
			t.Errorf("GPU image on cpu-1 = %+v", cell)
		}
		want := []status.Rollout{
			{Namespace: "submarine", Name: "jupyter-image-puller", InCluster: true, Observed: true, Current: true, Desired: 2, Updated: 2, Ready: 2, Available: 2},
			{Namespace: "submarine", Name: "jupyter-image-puller-jupyter-gpu", InCluster: true, Observed: true, Current: true, Desired: 1, Updated: 1, Ready: 1, Available: 1},
			{Namespace: "submarine", Name: "jupyter-image-puller-submarine-dockerhub", InCluster: true, Observed: true, Current: true, Desired: 2, Updated: 2, Ready: 2, Available: 2},
		}
		if !slices.Equal(rep.DaemonSets, want) {
			t.Errorf("rollouts = %+v\nwant %+v", rep.DaemonSets, want)
		}
		if !rep.Sources.Complete {
			t.Errorf("sources = %+v", rep.Sources)
		}

		// The table says the same on a terminal.
		stdout, _, code = runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig)
		if code != 0 || !strings.Contains(stdout, "profile notebooks: 4 of 4 images present on every targeted node, 2 nodes") {
			t.Errorf("table, exit %d:\n%s", code, stdout)
		}
		t.Logf("stowage status:\n%s", stdout)
	})

	t.Run("401 failed", func(t *testing.T) {
		const msg = `failed to pull and unpack image "` + gpuImage + `": failed to resolve reference: pull access denied, repository does not exist or may require authorization: authorization failed: 401 Unauthorized`
		p := pods["jupyter-image-puller-jupyter-gpu/gpu-1"]
		p, err := core.Pods("submarine").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// As after a kubelet restart during the back-off: the waiting
		// message lacks the registry's answer, the pod's last Failed event
		// (read through the events API, a field selector and the example's
		// RBAC) has it.
		var eventMsg string
		for i := range p.Status.InitContainerStatuses {
			cs := &p.Status.InitContainerStatuses[i]
			if cs.Name == "pull-jupyter-gpu" {
				cs.ImageID = ""
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
					Message: `Back-off pulling image "` + cs.Image + `"`}}
				eventMsg = `Failed to pull image "` + cs.Image + `": ` + msg
			}
		}
		seen := metav1.NewTime(time.Now().Truncate(time.Second))
		if _, err := core.Events("submarine").Create(ctx, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name + ".pull-failed", Namespace: "submarine"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "submarine", Name: p.Name, UID: p.UID, APIVersion: "v1",
				FieldPath: "spec.initContainers{pull-jupyter-gpu}"},
			Reason: "Failed", Message: eventMsg, Type: corev1.EventTypeWarning, Count: 3,
			Source:         corev1.EventSource{Component: "kubelet", Host: "gpu-1"},
			FirstTimestamp: seen, LastTimestamp: seen,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			p.Status.ContainerStatuses[i].Ready = false
			p.Status.ContainerStatuses[i].ImageID = ""
		}
		p.Status.Phase = corev1.PodPending
		if _, err := core.Pods("submarine").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "-o", "json")
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rep := decodeReport(t, stdout)
		im := rep.Image(gpuImage)
		cell := im.On("gpu-1")
		if rep.Ready || im.State != status.Failure || cell == nil || cell.State != status.Failed || cell.Reason != "ImagePullBackOff" ||
			cell.Message != eventMsg || cell.DaemonSet != "submarine/jupyter-image-puller-jupyter-gpu" {
			t.Errorf("GPU image = %+v, on gpu-1 %+v", im, cell)
		}
		// The main DaemonSet's images are unaffected.
		if im := rep.Image(jupyterImage); im.State != status.Success {
			t.Errorf("jupyter = %+v", im)
		}
		stdout, _, _ = runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig)
		if !strings.Contains(stdout, "gpu-1  failed") || !strings.Contains(stdout, "401 Unauthorized") {
			t.Errorf("table:\n%s", stdout)
		}
		t.Logf("stowage status:\n%s", stdout)
	})

	t.Run("a new node without its pod", func(t *testing.T) {
		n, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-2", Labels: linux}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The API server taints a new node not-ready:NoSchedule, which
		// daemon pods do not tolerate: the DaemonSet controller leaves the
		// node alone until it is Ready.
		stdout, stderr, code := runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "-o", "json")
		if code != 1 { // the 401 of the case before
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		cell := decodeReport(t, stdout).Image(jupyterImage).On("cpu-2")
		if cell == nil || cell.State != status.NotScheduled || cell.Reason != "Taint" ||
			cell.Message != "taint node.kubernetes.io/not-ready:NoSchedule not tolerated" {
			t.Errorf("jupyter on the new node = %+v", cell)
		}
		// Ready: the node lifecycle controller (not running here) removes
		// the taint; now the DaemonSet targets the node and its pod is due.
		n.Spec.Taints = nil
		if _, err := core.Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code = runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "-o", "json")
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rep := decodeReport(t, stdout)
		im := rep.Image(jupyterImage)
		if cell := im.On("cpu-2"); cell == nil || cell.State != status.Pulling || cell.Reason != "NoPod" ||
			im.State != status.InProgress || im.Message != "present on 2 of 3 targeted nodes" {
			t.Errorf("jupyter = %+v", im)
		}
		if cell := rep.Image(gpuImage).On("cpu-2"); cell == nil || cell.State != status.NotScheduled {
			t.Errorf("GPU image on cpu-2 = %+v", cell)
		}
	})

	t.Run("a kustomization as DIR", func(t *testing.T) {
		// The Argo CD example: the profile is its functionConfig's, the
		// lock the file its resources list; its DaemonSet is not applied.
		argo := filepath.Join(repoRoot, "examples", "gitops-argo", "prepull")
		stdout, stderr, code := runStowage(t, bin, "status", argo, "--kubeconfig", kubeconfig, "-o", "json")
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rep := decodeReport(t, stdout)
		var got []string
		for _, r := range rep.DaemonSets {
			got = append(got, fmt.Sprintf("%s/%s in cluster %v", r.Namespace, r.Name, r.InCluster))
		}
		want := "submarine/notebook-images in cluster false, submarine/notebook-images-jupyter-gpu in cluster false"
		if rep.Profile != "notebooks" || strings.Join(got, ", ") != want {
			t.Errorf("profile %q, DaemonSets %s; want notebooks, %s", rep.Profile, strings.Join(got, ", "), want)
		}
		if _, stderr, code := runStowage(t, bin, "status", argo, "--profile", "x", "--kubeconfig", kubeconfig); code != 2 {
			t.Errorf("--profile on a kustomization: exit %d, want 2: %s", code, stderr)
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		if _, stderr, code := runStowage(t, bin, "status", dir, "--kubeconfig", kubeconfig, "-o", "xml"); code != 2 {
			t.Errorf("-o xml: exit %d, want 2: %s", code, stderr)
		}
		// A user without the ClusterRole: exit 1, saying what it needs.
		other, err := c.env.AddUser(envtest.User{Name: "nobody"}, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runStowage(t, bin, "status", dir, "--kubeconfig", writeKubeconfig(t, other))
		if code != 1 || !strings.Contains(stderr, "forbidden") || !strings.Contains(stderr, "examples/status/rbac.yaml") {
			t.Errorf("without rights: exit %d, stderr %s", code, stderr)
		}
	})
}

// writeKubeconfig writes user's kubeconfig into a temporary file.
func writeKubeconfig(t *testing.T, user *envtest.AuthenticatedUser) string {
	t.Helper()
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// createDaemonPod creates the pod ds's controller would create on node
// (owned by ds, its template's spec) and writes the status a kubelet
// reports once every container ran: init containers terminated, the main
// one running, each with the imageID containerd reports (repository and
// the digest it was pulled by).
func createDaemonPod(t *testing.T, core coreclient.CoreV1Interface, ds *appsv1.DaemonSet, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + node, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node
	p, err := core.Pods(ds.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod of %s on %s: %v", ds.Name, node, err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	for _, c := range p.Spec.InitContainers {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: containerdImageID(t, c.Image),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started}},
		})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: containerdImageID(t, c.Image), Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		})
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started}}
	p, err = core.Pods(ds.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status of pod %s: %v", p.Name, err)
	}
	return p
}

// containerdImageID is what containerd's CRI reports as a container's
// imageID for a pinned reference: the normalised repository and the digest.
func containerdImageID(t *testing.T, pinned string) string {
	ref, err := imageref.Parse(pinned)
	if err != nil {
		t.Fatal(err)
	}
	return imageref.RepositoryName(ref.Repository) + "@" + ref.Digest
}

func decodeReport(t *testing.T, s string) *status.Report {
	t.Helper()
	var rep status.Report
	if err := json.Unmarshal([]byte(s), &rep); err != nil {
		t.Fatalf("stowage status -o json printed no report: %v\n%s", err, s)
	}
	return &rep
}
