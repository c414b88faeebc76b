package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	unstr "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stowage/stowage/api/v1alpha1"
)

// The startup gate's fixed parts (docs/new-nodes.md).
const (
	// ServiceAccountDir is where the main container of a gated puller
	// finds its projected ServiceAccount token, the cluster's CA and its
	// namespace: the path client libraries use in a pod.
	ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TokenSeconds is the projected token's lifetime, the shortest the
	// API server accepts; the kubelet renews it before it expires.
	TokenSeconds = 600
	// NodeNameExtra is the user info extra in which the API server puts
	// the name of the node a pod-bound ServiceAccount token's pod runs on
	// (k8s.io/apiserver serviceaccount.NodeNameKey; Kubernetes 1.32+).
	NodeNameExtra = "authentication.kubernetes.io/node-name"
	// tokenVolume is the projected volume of the token.
	tokenVolume = "stowage-token"
	// startupContainer names the helper's main container of a gated pod.
	startupContainer = "startup"
)

// startupPart is one DaemonSet of a gated puller as its helpers see it:
// its name and node selector. A node's helper waits for the pod of every
// part whose selector the node's labels match.
type startupPart struct {
	Name         string            `json:"name"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// startupGate completes the DaemonSets dss of puller p, which has a
// startup gate: each tolerates the taint, runs as the gate's
// ServiceAccount with its projected token on the main container only, and
// its main container is the helper's "startup" command, told every part
// of the puller. It returns the gate's other objects: the ServiceAccount,
// the Role that lists the puller's pods, the ClusterRole that reads nodes
// and patches them (nodes/status with a NodeReadinessRule), their
// bindings, the ValidatingAdmissionPolicy and its binding, and the
// NodeReadinessRule when that is the gate's way.
func (r *renderer) startupGate(p *v1alpha1.Puller, dss []*appsv1.DaemonSet) []Object {
	s := p.Startup
	sa := startupServiceAccount(p)
	var parts []startupPart
	for _, ds := range dss {
		parts = append(parts, startupPart{Name: ds.Name, NodeSelector: ds.Spec.Template.Spec.NodeSelector})
	}
	slices.SortFunc(parts, func(a, b startupPart) int { return strings.Compare(a.Name, b.Name) })
	partsJSON, err := json.Marshal(parts)
	if err != nil {
		r.fail("puller %q: startup parts: %v", p.Name, err)
		return nil
	}
	nrr := s.Via == v1alpha1.StartupViaNodeReadinessRule
	for _, ds := range dss {
		spec := &ds.Spec.Template.Spec
		spec.ServiceAccountName = sa
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
			Key: s.Taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffect(s.Taint.Effect),
		})
		expiry := int64(TokenSeconds)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: tokenVolume, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
			}},
		}})
		main := &spec.Containers[0]
		main.Name = startupContainer
		cmd := []string{HelperBinary, "startup", "--self", ds.Name, "--parts", string(partsJSON)}
		if nrr {
			cmd = append(cmd, "--condition", s.StartupCondition(p.Name))
		} else {
			cmd = append(cmd, "--taint", s.Taint.Key)
		}
		main.Command = cmd
		main.Env = []corev1.EnvVar{
			{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		}
		main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: tokenVolume, MountPath: ServiceAccountDir, ReadOnly: true})
	}

	name := StartupName(p)
	user := "system:serviceaccount:" + p.Namespace + ":" + sa
	noToken := false
	objs := []Object{
		{Kind: "ServiceAccount", Namespace: p.Namespace, Name: sa, Object: &corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   metav1.ObjectMeta{Name: sa, Namespace: p.Namespace, Labels: r.labels(p.Name, "startup")},
			AutomountServiceAccountToken: &noToken,
		}},
		{Kind: "Role", Namespace: p.Namespace, Name: sa, Object: &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: p.Namespace, Labels: r.labels(p.Name, "startup")},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
		}},
		{Kind: "RoleBinding", Namespace: p.Namespace, Name: sa, Object: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: p.Namespace, Labels: r.labels(p.Name, "startup")},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: p.Namespace}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
		}},
	}
	nodeRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}
	rules := []rbacv1.PolicyRule{nodeRule}
	if nrr {
		rules = []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
		}
	}
	objs = append(objs,
		Object{Kind: "ClusterRole", Name: name, Object: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.labels(p.Name, "startup")},
			Rules:      rules,
		}},
		Object{Kind: "ClusterRoleBinding", Name: name, Object: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.labels(p.Name, "startup")},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: p.Namespace}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		}},
	)
	objs = append(objs, r.startupPolicy(p, name, user)...)
	if nrr {
		objs = append(objs, r.nodeReadinessRule(p, name, dss))
	}
	return objs
}

// StartupName names the cluster-scoped objects of p's startup gate
// (ClusterRole, ClusterRoleBinding, ValidatingAdmissionPolicy and its
// binding, NodeReadinessRule): v1alpha1.StartupName of its namespace
// and name.
func StartupName(p *v1alpha1.Puller) string {
	return v1alpha1.StartupName(p.Namespace, p.Name)
}

// startupServiceAccount names the ServiceAccount (and Role) of p's gate.
func startupServiceAccount(p *v1alpha1.Puller) string { return p.Name + "-startup" }

// celString quotes s as a CEL string literal (a JSON string is one: the
// same escapes for quotes, backslashes and control characters).
func celString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The node's fields the gate's policy holds unchanged, besides the ones it
// lets the helper change. Metadata's and spec's as of Kubernetes 1.37;
// status's for nodes/status.
var (
	nodeMetaFields   = []string{"labels", "annotations", "ownerReferences", "finalizers"}
	nodeSpecFields   = []string{"podCIDR", "podCIDRs", "providerID", "unschedulable", "externalID", "configSource"}
	nodeStatusFields = []string{"capacity", "allocatable", "phase", "addresses", "daemonEndpoints", "nodeInfo",
		"images", "volumesInUse", "volumesAttached", "config", "runtimeHandlers", "features", "declaredFeatures"}
)

// unchanged is a CEL expression true when every field of fields under
// prefix ("metadata", "spec", "status") is the same in object and
// oldObject, set or not.
func unchanged(prefix string, fields []string) string {
	var terms []string
	for _, f := range fields {
		terms = append(terms, fmt.Sprintf("object.%s.?%s == oldObject.%s.?%s", prefix, f, prefix, f))
	}
	return strings.Join(terms, " && ")
}

// startupPolicy renders the ValidatingAdmissionPolicy (and its binding)
// that confines the gate's ServiceAccount user to its own node and the one
// change the gate makes: the removal of the startup taint (nodes), or the
// gate's condition set (nodes/status). The node's name comes from the
// user info extra NodeNameExtra of the pod-bound token.
func (r *renderer) startupPolicy(p *v1alpha1.Puller, name, user string) []Object {
	s := p.Startup
	nrr := s.Via == v1alpha1.StartupViaNodeReadinessRule
	resource := "nodes"
	if nrr {
		resource = "nodes/status"
	}
	fail := admissionv1.Fail
	own := fmt.Sprintf("has(request.userInfo.extra) && %s in request.userInfo.extra && request.userInfo.extra[%s] == [object.metadata.name]",
		celString(NodeNameExtra), celString(NodeNameExtra))
	validations := []admissionv1.Validation{
		{Expression: "request.operation == 'UPDATE'", Message: "the startup helper of puller " + p.Namespace + "/" + p.Name + " may only update nodes"},
		{Expression: own, Message: "the startup helper may change only the node its pod runs on (the node name of its bound token)"},
		{Expression: unchanged("metadata", nodeMetaFields), Message: "the startup helper may not change a node's labels, annotations, owners or finalizers"},
	}
	if nrr {
		cond := celString(s.StartupCondition(p.Name))
		validations = append(validations,
			admissionv1.Validation{Expression: unchanged("status", nodeStatusFields),
				Message: "the startup helper may change only its own node condition"},
			admissionv1.Validation{
				Expression: fmt.Sprintf("object.status.?conditions.orValue([]).filter(c, c.type != %s) == oldObject.status.?conditions.orValue([]).filter(c, c.type != %s) && object.status.?conditions.orValue([]).exists_one(c, c.type == %s && c.status == 'True')",
					cond, cond, cond),
				Message: "the startup helper may only set its node condition " + s.StartupCondition(p.Name) + " to True",
			})
	} else {
		key := celString(s.Taint.Key)
		validations = append(validations,
			admissionv1.Validation{Expression: unchanged("spec", nodeSpecFields),
				Message: "the startup helper may change only the node's taints"},
			admissionv1.Validation{
				Expression: fmt.Sprintf("oldObject.spec.?taints.orValue([]).exists(t, t.key == %s) && object.spec.?taints.orValue([]) == oldObject.spec.?taints.orValue([]).filter(t, t.key != %s)",
					key, key),
				Message: "the startup helper may only remove the taint " + s.Taint.Key,
			})
	}
	vap := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.labels(p.Name, "startup")},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "startup-helper", Expression: "request.userInfo.username == " + celString(user)}},
			Validations:     validations,
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.labels(p.Name, "startup")},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return []Object{
		{Kind: "ValidatingAdmissionPolicy", Name: name, Object: vap},
		{Kind: "ValidatingAdmissionPolicyBinding", Name: name, Object: binding},
	}
}

// NodeReadinessRule API facts (kubernetes-sigs/node-readiness-controller
// v0.5.0, api/v1alpha1): a cluster-scoped kind whose spec holds the
// conditions (type, requiredStatus), the enforcementMode, the taint and a
// nodeSelector (a LabelSelector).
const (
	NodeReadinessAPIVersion = "readiness.node.x-k8s.io/v1alpha1"
	NodeReadinessKind       = "NodeReadinessRule"
)

// nodeReadinessRule renders the rule under which the Node Readiness
// Controller lifts p's startup taint once the helper set its condition:
// bootstrap-only (a node that has passed once is never tainted again),
// for the nodes of p's node selector (the labels every DaemonSet of p
// requires).
func (r *renderer) nodeReadinessRule(p *v1alpha1.Puller, name string, dss []*appsv1.DaemonSet) Object {
	s := p.Startup
	common := map[string]any{}
	for i, ds := range dss {
		sel := ds.Spec.Template.Spec.NodeSelector
		if i == 0 {
			for k, v := range sel {
				common[k] = v
			}
			continue
		}
		for k, v := range common {
			if sel[k] != v {
				delete(common, k)
			}
		}
	}
	taint := map[string]any{"key": s.Taint.Key, "effect": s.Taint.Effect}
	if s.Taint.Value != "" {
		taint["value"] = s.Taint.Value
	}
	spec := map[string]any{
		"conditions":      []any{map[string]any{"type": s.StartupCondition(p.Name), "requiredStatus": "True"}},
		"enforcementMode": "bootstrap-only",
		"taint":           taint,
		"nodeSelector":    map[string]any{"matchLabels": common},
	}
	u := &unstr.Unstructured{Object: map[string]any{
		"apiVersion": NodeReadinessAPIVersion,
		"kind":       NodeReadinessKind,
		"metadata":   map[string]any{"name": name, "labels": toAny(r.labels(p.Name, "startup"))},
		"spec":       spec,
	}}
	return Object{Kind: NodeReadinessKind, Name: name, Object: u}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
