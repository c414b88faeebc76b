package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	irender "github.com/stowage/stowage/internal/render"
)

// startupEnv is a cluster with a profile's startup gate applied, and the
// clients and files the tests use.
type startupEnv struct {
	c      *cluster
	admin  kubernetes.Interface
	ns, sa string
	policy string
	// main is the main container of the rendered DaemonSets, by name.
	main map[string]corev1.Container
}

// applyStartup renders profile of the GPU example, applies it (without the
// kinds this server does not serve) and returns what the tests need.
func applyStartup(t *testing.T, c *cluster, profile string) *startupEnv {
	t.Helper()
	dir := filepath.Join(repoRoot, "examples", "gpu-platform")
	cfg, l := loadExample(t, dir)
	objs := renderProfile(t, cfg, dir, profile, l, exampleEnv)
	want := c.served(t, manifests(t, objs))
	c.createNamespaces(t, want)
	c.apply(t, want)
	admin, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &startupEnv{c: c, admin: admin, main: map[string]corev1.Container{}}
	for _, o := range objs {
		switch obj := o.Object.(type) {
		case *corev1.ServiceAccount:
			e.ns, e.sa = obj.Namespace, obj.Name
		case *appsv1.DaemonSet:
			e.main[obj.Name] = obj.Spec.Template.Spec.Containers[0]
		}
		if o.Kind == "ValidatingAdmissionPolicy" {
			e.policy = o.Name
		}
	}
	if e.sa == "" || e.policy == "" || len(e.main) == 0 {
		t.Fatalf("profile %s renders no startup gate (ServiceAccount %q, policy %q, %d DaemonSets)", profile, e.sa, e.policy, len(e.main))
	}
	return e
}

// restricted enforces the restricted Pod Security Standard on the gate's
// namespace and creates (dry run: no controller runs here) a pod of every
// rendered DaemonSet's template there: the projected token and the
// startup container must keep the pods restricted.
func (e *startupEnv) restricted(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns, err := e.admin.CoreV1().Namespaces().Get(ctx, e.ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := e.admin.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dss, err := e.admin.AppsV1().DaemonSets(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(dss.Items) == 0 {
		t.Fatalf("no DaemonSets in %s: %v", e.ns, err)
	}
	for _, ds := range dss.Items {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-dry", Namespace: e.ns, Labels: ds.Spec.Template.Labels},
			Spec: ds.Spec.Template.Spec}
		if _, err := e.admin.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("a pod of %s is refused in a namespace enforcing restricted Pod Security: %v", ds.Name, err)
		}
	}
	t.Logf("pods of %d DaemonSets admitted under restricted Pod Security", len(dss.Items))
}

// node creates a Node object (no kubelet behind it) with labels and taints.
func (e *startupEnv) node(t *testing.T, name string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	if _, err := e.admin.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podOn creates a pod of ds (its instance label) on node, running as the
// gate's ServiceAccount, with the main container started when started is
// true (status written as the kubelet would).
func (e *startupEnv) podOn(t *testing.T, ds, node string, started bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	no, yes := false, true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ds + "-" + node, Namespace: e.ns,
			Labels: map[string]string{irender.LabelName: "stowage", irender.LabelInstance: ds}},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: e.sa, AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "startup", Image: "registry.example/helper:1", SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}}},
	}
	p, err := e.admin.CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if started {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "startup", Started: &yes, Ready: true,
			Image: "registry.example/helper:1", ImageID: "", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
		if p, err = e.admin.CoreV1().Pods(e.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// token mints the gate ServiceAccount's token bound to pod, as the
// kubelet does for the projected volume, and checks that the API server
// puts the pod's node name in the user's extra.
func (e *startupEnv) token(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	ctx := context.Background()
	expiry := int64(600)
	tr, err := e.admin.CoreV1().ServiceAccounts(e.ns).CreateToken(ctx, e.sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiry,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(e.asToken(tr.Status.Token))
	if err != nil {
		t.Fatal(err)
	}
	review, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := review.Status.UserInfo
	if want := "system:serviceaccount:" + e.ns + ":" + e.sa; u.Username != want {
		t.Fatalf("the token is %q's, want %q", u.Username, want)
	}
	if got := u.Extra[irender.NodeNameExtra]; !slices.Equal(got, []string{pod.Spec.NodeName}) {
		t.Fatalf("the token's %s is %q, want [%q]: a pod-bound token must carry its node's name", irender.NodeNameExtra, got, pod.Spec.NodeName)
	}
	return tr.Status.Token
}

// asToken is the API server's client configuration with token instead of
// the admin's credentials.
func (e *startupEnv) asToken(token string) *rest.Config {
	return &rest.Config{Host: e.c.cfg.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: e.c.cfg.CAData}}
}

// denied checks that err is the gate policy's refusal.
func (e *startupEnv) denied(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: admitted, want denied by ValidatingAdmissionPolicy %s", what, e.policy)
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+e.policy+"'") {
		t.Fatalf("%s: %v (%#v); want the refusal of ValidatingAdmissionPolicy %s", what, err, err, e.policy)
	}
	t.Logf("%s: denied (%s): %v", what, apierrors.ReasonForError(err), err)
}

// active waits (at most 30 s) until the API server enforces the gate's
// policy, which it loads some time after the apply: a dry run of a label
// change on node by the helper's user is denied. It fails the test with
// the policy's type-checking status otherwise.
func (e *startupEnv) active(t *testing.T, nodes interface {
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.Node, error)
}, node, subresource string) {
	t.Helper()
	ctx := context.Background()
	probe := []byte(`{"metadata":{"labels":{"stowage.dev/probe":"x"}}}`)
	if subresource == "status" {
		probe = []byte(`{"status":{"conditions":[{"type":"StowageProbe","status":"True"}]}}`)
	}
	var err error
	if until(30*time.Second, func() bool {
		_, err = nodes.Patch(ctx, node, types.StrategicMergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, subresources(subresource)...)
		return err != nil && strings.Contains(err.Error(), e.policy)
	}) {
		return
	}
	p, gerr := e.admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, e.policy, metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	st, _ := json.Marshal(p.Status)
	t.Fatalf("the policy %s is not enforced within 30 s (last answer: %v); its status: %s", e.policy, err, st)
}

func subresources(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// removeTaintPatch is the JSON patch removing taint key from node as it
// is now, with the test op the helper sends. (The API server adds taints
// of its own to a new node: node.kubernetes.io/not-ready.)
func (e *startupEnv) removeTaintPatch(t *testing.T, node, key string) []byte {
	t.Helper()
	n, err := e.admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(taintKeys(n), key)
	if i < 0 {
		t.Fatalf("node %s has no taint %s: %v", node, key, n.Spec.Taints)
	}
	b, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/spec/taints", "value": n.Spec.Taints},
		{"op": "remove", "path": fmt.Sprintf("/spec/taints/%d", i)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// helperBinary builds cmd/stowage-helper of the main module.
func helperBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stowage-helper")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/stowage-helper")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/stowage-helper: %v\n%s", err, out)
	}
	return bin
}

// runHelper starts the helper binary as the main container main of a
// DaemonSet would run on node, with token and the API server's CA in a
// ServiceAccount directory of its own. It returns the process and its
// output.
func (e *startupEnv) runHelper(t *testing.T, bin string, main corev1.Container, node, token string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	sa := t.TempDir()
	if err := os.WriteFile(filepath.Join(sa, "token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sa, "ca.crt"), e.c.cfg.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(e.c.cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	if main.Command[0] != irender.HelperBinary || main.Command[1] != "startup" {
		t.Fatalf("the main container runs %q, want %s startup", main.Command, irender.HelperBinary)
	}
	args := append(append([]string(nil), main.Command[2:]...), "--serviceaccount-dir", sa, "--poll", "200ms", "--timeout", "1m")
	cmd := exec.Command(bin, append([]string{"startup"}, args...)...)
	cmd.Env = []string{"NODE_NAME=" + node, "POD_NAMESPACE=" + e.ns, "KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out
}

// stop sends SIGTERM to a helper that opened its gate and waits for its
// exit 0.
func stop(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the helper exited with %v after SIGTERM:\n%s", err, out)
	}
}

// until polls cond every 100 ms for at most d.
func until(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func taintKeys(n *corev1.Node) []string {
	var keys []string
	for _, t := range n.Spec.Taints {
		keys = append(keys, t.Key)
	}
	return keys
}

// TestStartupGate applies the GPU example's startup gate (profile gpu) to
// a real kube-apiserver (ValidatingAdmissionPolicy on, as it is by
// default), checks that the gated DaemonSets' pods pass restricted Pod
// Security (the API server's PodSecurity admission, dry run), mints the helper's ServiceAccount token bound to a pod on
// node gpu-a as the kubelet does, and with that token: lifting another
// taint of its own node, lifting the startup taint of another node and
// changing its node's label are each denied by the rendered policy; the
// real helper binary, run with the rendered DaemonSet's command, removes
// the startup taint from its own node and nothing else; on a node of a
// kernel that has a DaemonSet of its own, it waits until that
// DaemonSet's pod there has started.
func TestStartupGate(t *testing.T) {
	c := startAPIServer(t)
	e := applyStartup(t, c, "gpu")
	ctx := context.Background()
	e.restricted(t)
	gate := corev1.Taint{Key: "stowage.dev/gpu-images", Effect: corev1.TaintEffectNoSchedule}
	keep := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	gpu := map[string]string{"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
	e.node(t, "gpu-a", gpu, gate, keep)
	e.node(t, "gpu-b", gpu, gate, keep)
	token := e.token(t, e.podOn(t, "gpu-platform", "gpu-a", true))
	as, err := kubernetes.NewForConfig(e.asToken(token))
	if err != nil {
		t.Fatal(err)
	}
	nodes := as.CoreV1().Nodes()
	e.active(t, nodes, "gpu-a", "")

	_, err = nodes.Patch(ctx, "gpu-a", types.JSONPatchType, e.removeTaintPatch(t, "gpu-a", keep.Key), metav1.PatchOptions{})
	e.denied(t, "removing another taint (nvidia.com/gpu) of its own node", err)
	_, err = nodes.Patch(ctx, "gpu-b", types.JSONPatchType, e.removeTaintPatch(t, "gpu-b", gate.Key), metav1.PatchOptions{})
	e.denied(t, "removing the startup taint of another node", err)
	_, err = nodes.Patch(ctx, "gpu-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"nvidia.com/gpu.present":"false"}}}`), metav1.PatchOptions{})
	e.denied(t, "changing a label of its own node", err)
	cordon := e.removeTaintPatch(t, "gpu-a", gate.Key)
	cordon = append(cordon[:len(cordon)-1], []byte(`,{"op":"add","path":"/spec/unschedulable","value":true}]`)...)
	_, err = nodes.Patch(ctx, "gpu-a", types.JSONPatchType, cordon, metav1.PatchOptions{})
	e.denied(t, "removing the startup taint and cordoning its own node at once", err)
	err = nodes.Delete(ctx, "gpu-a", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("deleting its node: %v, want forbidden by RBAC", err)
	}

	bin := helperBinary(t)
	cmd, out := e.runHelper(t, bin, e.main["gpu-platform"], "gpu-a", token)
	if !until(30*time.Second, func() bool {
		n, err := e.admin.CoreV1().Nodes().Get(ctx, "gpu-a", metav1.GetOptions{})
		return err == nil && !slices.Contains(taintKeys(n), gate.Key) && slices.Contains(taintKeys(n), keep.Key)
	}) {
		t.Fatalf("the helper did not lift %s from gpu-a within 30 s:\n%s", gate.Key, out)
	}
	stop(t, cmd, out)
	if !strings.Contains(out.String(), "removed taint stowage.dev/gpu-images from node gpu-a") {
		t.Errorf("the helper's output does not say what it removed:\n%s", out)
	}
	if n, err := e.admin.CoreV1().Nodes().Get(ctx, "gpu-b", metav1.GetOptions{}); err != nil || !slices.Contains(taintKeys(n), gate.Key) {
		t.Fatalf("gpu-b changed: %v %v", n.Spec.Taints, err)
	}
	t.Logf("helper on gpu-a:\n%s", out)

	// A node of kernel 5.15 also runs that kernel's DaemonSet: the
	// default part's helper waits for it.
	kernel := "gpu-platform-5-15-0-91-generic-212095"
	if _, ok := e.main[kernel]; !ok {
		t.Fatalf("no DaemonSet %s among %v", kernel, slices.Sorted(keys(e.main)))
	}
	k515 := map[string]string{"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/kernel-version.full": "5.15.0-91-generic"}
	e.node(t, "gpu-c", k515, gate)
	tokenC := e.token(t, e.podOn(t, "gpu-platform", "gpu-c", true))
	cmd, out = e.runHelper(t, bin, e.main["gpu-platform"], "gpu-c", tokenC)
	if !until(10*time.Second, func() bool { return strings.Contains(out.String(), "waiting for") }) {
		t.Fatalf("the helper on gpu-c does not wait for %s:\n%s", kernel, out)
	}
	time.Sleep(time.Second)
	if n, _ := e.admin.CoreV1().Nodes().Get(ctx, "gpu-c", metav1.GetOptions{}); !slices.Contains(taintKeys(n), gate.Key) {
		t.Fatalf("the helper lifted the gate of gpu-c before %s's pod there started:\n%s", kernel, out)
	}
	sibling := e.podOn(t, kernel, "gpu-c", false)
	time.Sleep(time.Second)
	if n, _ := e.admin.CoreV1().Nodes().Get(ctx, "gpu-c", metav1.GetOptions{}); !slices.Contains(taintKeys(n), gate.Key) {
		t.Fatalf("the helper lifted the gate of gpu-c while %s's pod there is still pulling:\n%s", kernel, out)
	}
	yes := true
	sibling.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "startup", Started: &yes, Image: "registry.example/helper:1",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if _, err := e.admin.CoreV1().Pods(e.ns).UpdateStatus(ctx, sibling, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !until(10*time.Second, func() bool {
		n, err := e.admin.CoreV1().Nodes().Get(ctx, "gpu-c", metav1.GetOptions{})
		return err == nil && !slices.Contains(taintKeys(n), gate.Key)
	}) {
		t.Fatalf("the helper did not lift the gate of gpu-c once %s's pod started:\n%s", kernel, out)
	}
	stop(t, cmd, out)
	t.Logf("helper on gpu-c:\n%s", out)
}

// nodeReadinessRuleCRD is a CustomResourceDefinition of the
// NodeReadinessRule as facts from kubernetes-sigs/node-readiness-controller
// v0.5.0 (api/v1alpha1): group readiness.node.x-k8s.io, version v1alpha1,
// cluster-scoped, spec with conditions (type, requiredStatus True, False
// or Unknown), enforcementMode bootstrap-only or continuous, a taint whose
// key starts with readiness.k8s.io/ and a nodeSelector.
const nodeReadinessRuleCRD = `{
 "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "nodereadinessrules.readiness.node.x-k8s.io"},
 "spec": {"group": "readiness.node.x-k8s.io", "scope": "Cluster",
  "names": {"kind": "NodeReadinessRule", "listKind": "NodeReadinessRuleList", "plural": "nodereadinessrules", "singular": "nodereadinessrule"},
  "versions": [{"name": "v1alpha1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
   "type": "object", "required": ["spec"],
   "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
    "spec": {"type": "object", "required": ["conditions", "enforcementMode", "taint", "nodeSelector"], "properties": {
     "conditions": {"type": "array", "minItems": 1, "maxItems": 32, "items": {"type": "object", "required": ["type", "requiredStatus"], "properties": {
       "type": {"type": "string", "minLength": 1, "maxLength": 316},
       "requiredStatus": {"type": "string", "enum": ["True", "False", "Unknown"]},
       "defaultStatus": {"type": "string", "enum": ["True", "False", "Unknown"]}}}},
     "enforcementMode": {"type": "string", "enum": ["bootstrap-only", "continuous"]},
     "taint": {"type": "object", "required": ["key", "effect"], "properties": {
       "key": {"type": "string"}, "value": {"type": "string"}, "effect": {"type": "string"}},
      "x-kubernetes-validations": [
       {"rule": "self.key.startsWith('readiness.k8s.io/')", "message": "taint key must start with 'readiness.k8s.io/'"},
       {"rule": "self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']", "message": "taint effect must be one of 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"}]},
     "nodeSelector": {"type": "object", "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
     "dryRun": {"type": "boolean"}}}}}}}]}}`

// TestStartupGateReadiness applies the GPU example's NodeReadinessRule
// variant (profile gpu-readiness) with a CRD of the rule's facts: the rule
// is accepted; with the helper's pod-bound token, setting another
// condition and setting its condition on another node are denied by the
// policy on nodes/status, and lifting the taint itself is forbidden (no
// nodes patch); the real helper binary sets its condition to True on its
// own node and leaves the taint to the controller.
func TestStartupGateReadiness(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(nodeReadinessRuleCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	c.apply(t, []*unstructured.Unstructured{crd})
	if !until(30*time.Second, func() bool {
		if r, ok := c.mapper.(interface{ Reset() }); ok {
			r.Reset()
		}
		_, err := c.mapper.RESTMapping(schema.GroupKind{Group: "readiness.node.x-k8s.io", Kind: "NodeReadinessRule"}, "v1alpha1")
		return err == nil
	}) {
		t.Fatal("the NodeReadinessRule CRD is not served within 30 s")
	}
	e := applyStartup(t, c, "gpu-readiness")
	// The rule was applied (served now), so the API server accepted it.
	rule := &unstructured.Unstructured{}
	rule.SetAPIVersion(irender.NodeReadinessAPIVersion)
	rule.SetKind(irender.NodeReadinessKind)
	rule.SetName(e.policy)
	if _, err := c.resource(t, rule).Get(ctx, e.policy, metav1.GetOptions{}); err != nil {
		t.Fatalf("the rendered NodeReadinessRule is not on the server: %v", err)
	}

	gate := corev1.Taint{Key: "readiness.k8s.io/stowage-models", Effect: corev1.TaintEffectNoSchedule}
	gpu := map[string]string{"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
	e.node(t, "gpu-a", gpu, gate)
	e.node(t, "gpu-b", gpu, gate)
	token := e.token(t, e.podOn(t, "models", "gpu-a", true))
	as, err := kubernetes.NewForConfig(e.asToken(token))
	if err != nil {
		t.Fatal(err)
	}
	nodes := as.CoreV1().Nodes()
	e.active(t, nodes, "gpu-a", "status")
	cond := func(typ string) []byte {
		return []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"R","message":"m"}]}}`, typ))
	}
	_, err = nodes.PatchStatus(ctx, "gpu-a", cond("Ready"))
	e.denied(t, "setting another condition (Ready) of its own node", err)
	_, err = nodes.PatchStatus(ctx, "gpu-b", cond("stowage.dev/models-images"))
	e.denied(t, "setting its condition on another node", err)
	_, err = nodes.Patch(ctx, "gpu-a", types.JSONPatchType, e.removeTaintPatch(t, "gpu-a", gate.Key), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("lifting the taint itself: %v, want forbidden by RBAC (no nodes patch)", err)
	}

	bin := helperBinary(t)
	cmd, out := e.runHelper(t, bin, e.main["models"], "gpu-a", token)
	if !until(30*time.Second, func() bool {
		n, err := e.admin.CoreV1().Nodes().Get(ctx, "gpu-a", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == "stowage.dev/models-images" && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the helper did not set its condition on gpu-a within 30 s:\n%s", out)
	}
	stop(t, cmd, out)
	n, err := e.admin.CoreV1().Nodes().Get(ctx, "gpu-a", metav1.GetOptions{})
	if err != nil || !slices.Contains(taintKeys(n), gate.Key) {
		t.Fatalf("gpu-a's taints %v (%v): the helper must leave the taint to the controller", n.Spec.Taints, err)
	}
	t.Logf("helper on gpu-a:\n%s", out)
}
