package kubecheck

import (
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The objects of a puller's startup gate (render's startup.go): a
// ServiceAccount, RBAC, a ValidatingAdmissionPolicy and its binding, and
// a NodeReadinessRule. kubecheck checks their metadata, the fields an API
// server requires and, for RBAC and the policy, what stowage relies on
// (rules with verbs, a role reference, CEL expressions present); the API
// server's own validation, CEL compilation included, is e2e's
// (TestStartupGate).
var startupKinds = []kindInfo{
	{
		gvk:       corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		newObject: func() runtime.Object { return new(corev1.ServiceAccount) },
		validate: func(o runtime.Object) field.ErrorList {
			return validateObjectMeta(&o.(*corev1.ServiceAccount).ObjectMeta, apivalidation.NameIsDNSSubdomain)
		},
	},
	{
		gvk:       rbacv1.SchemeGroupVersion.WithKind("Role"),
		newObject: func() runtime.Object { return new(rbacv1.Role) },
		validate: func(o runtime.Object) field.ErrorList {
			r := o.(*rbacv1.Role)
			return append(validateObjectMeta(&r.ObjectMeta, apivalidation.NameIsDNSSubdomain), validateRules(r.Rules)...)
		},
	},
	{
		gvk:       rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		newObject: func() runtime.Object { return new(rbacv1.ClusterRole) },
		validate: func(o runtime.Object) field.ErrorList {
			r := o.(*rbacv1.ClusterRole)
			return append(validateClusterMeta(r.Namespace, r.Name), validateRules(r.Rules)...)
		},
	},
	{
		gvk:       rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		newObject: func() runtime.Object { return new(rbacv1.RoleBinding) },
		validate: func(o runtime.Object) field.ErrorList {
			b := o.(*rbacv1.RoleBinding)
			return append(validateObjectMeta(&b.ObjectMeta, apivalidation.NameIsDNSSubdomain), validateBinding(b.RoleRef, b.Subjects)...)
		},
	},
	{
		gvk:       rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		newObject: func() runtime.Object { return new(rbacv1.ClusterRoleBinding) },
		validate: func(o runtime.Object) field.ErrorList {
			b := o.(*rbacv1.ClusterRoleBinding)
			return append(validateClusterMeta(b.Namespace, b.Name), validateBinding(b.RoleRef, b.Subjects)...)
		},
	},
	{
		gvk:       admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"),
		newObject: func() runtime.Object { return new(admissionv1.ValidatingAdmissionPolicy) },
		validate: func(o runtime.Object) field.ErrorList {
			p := o.(*admissionv1.ValidatingAdmissionPolicy)
			errs := validateClusterMeta(p.Namespace, p.Name)
			sp := field.NewPath("spec")
			if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
				errs = append(errs, field.Required(sp.Child("matchConstraints", "resourceRules"), ""))
			}
			if len(p.Spec.Validations) == 0 {
				errs = append(errs, field.Required(sp.Child("validations"), ""))
			}
			for i, v := range p.Spec.Validations {
				if strings.TrimSpace(v.Expression) == "" {
					errs = append(errs, field.Required(sp.Child("validations").Index(i).Child("expression"), ""))
				}
			}
			for i, m := range p.Spec.MatchConditions {
				if strings.TrimSpace(m.Expression) == "" || len(validation.IsQualifiedName(m.Name)) > 0 {
					errs = append(errs, field.Invalid(sp.Child("matchConditions").Index(i), m.Name, "a qualified name and an expression"))
				}
			}
			return errs
		},
	},
	{
		gvk:       admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"),
		newObject: func() runtime.Object { return new(admissionv1.ValidatingAdmissionPolicyBinding) },
		validate: func(o runtime.Object) field.ErrorList {
			b := o.(*admissionv1.ValidatingAdmissionPolicyBinding)
			errs := validateClusterMeta(b.Namespace, b.Name)
			if b.Spec.PolicyName == "" {
				errs = append(errs, field.Required(field.NewPath("spec", "policyName"), ""))
			}
			if len(b.Spec.ValidationActions) == 0 {
				errs = append(errs, field.Required(field.NewPath("spec", "validationActions"), ""))
			}
			return errs
		},
	},
}

func init() { kinds = append(kinds, startupKinds...) }

// validateClusterMeta: a cluster-scoped object's name is a DNS subdomain
// and it has no namespace.
func validateClusterMeta(ns, name string) field.ErrorList {
	var errs field.ErrorList
	if ns != "" {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), "not allowed on a cluster-scoped object"))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, msg))
	}
	return errs
}

func validateRules(rules []rbacv1.PolicyRule) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(field.NewPath("rules").Index(i).Child("verbs"), ""))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(field.NewPath("rules").Index(i).Child("resources"), ""))
		}
	}
	return errs
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName || ref.Name == "" || (ref.Kind != "Role" && ref.Kind != "ClusterRole") {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), ref, "a Role or ClusterRole of rbac.authorization.k8s.io by name"))
	}
	for i, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Name == "" || s.Namespace == "" {
			errs = append(errs, field.Invalid(field.NewPath("subjects").Index(i), s, "a ServiceAccount by name and namespace"))
		}
	}
	return errs
}

// NodeReadinessRule (readiness.node.x-k8s.io/v1alpha1), as facts from
// kubernetes-sigs/node-readiness-controller v0.5.0 (api/v1alpha1,
// nodereadinessrule_types.go), cluster-scoped: conditions (1 to 32, a type
// of 1 to 316 characters, requiredStatus and the optional defaultStatus
// True, False or Unknown, no defaultStatus with bootstrap-only), the
// enforcementMode bootstrap-only or continuous, a taint whose key starts
// with readiness.k8s.io/ and whose effect is NoSchedule, PreferNoSchedule
// or NoExecute, and a nodeSelector (a LabelSelector; render writes
// matchLabels).
var nodeReadinessRuleSpec = func() *node {
	status := enum("True", "False", "Unknown")
	cond := object(map[string]*node{
		"type":           {typ: "string", minLength: 1, maxLength: 316},
		"requiredStatus": status,
		"defaultStatus":  status,
	}, "type", "requiredStatus")
	conds := arrayOf(cond, 1)
	conds.check = func(v any, p *field.Path) field.ErrorList {
		if a := v.([]any); len(a) > 32 {
			return field.ErrorList{field.TooMany(p, len(a), 32)}
		}
		return nil
	}
	taint := object(map[string]*node{
		"key": withCheck(nonEmpty(), func(v any, p *field.Path) field.ErrorList {
			k := v.(string)
			if !strings.HasPrefix(k, "readiness.k8s.io/") {
				return field.ErrorList{field.Invalid(p, k, "taint key must start with 'readiness.k8s.io/'")}
			}
			var errs field.ErrorList
			for _, msg := range validation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(p, k, msg))
			}
			return errs
		}),
		"value":  {typ: "string", maxLength: 63},
		"effect": enum("NoSchedule", "PreferNoSchedule", "NoExecute"),
	}, "key", "effect")
	spec := object(map[string]*node{
		"conditions":      conds,
		"enforcementMode": enum("bootstrap-only", "continuous"),
		"taint":           taint,
		"nodeSelector":    object(map[string]*node{"matchLabels": {typ: "object", values: str()}}),
		"dryRun":          boolean(),
	}, "conditions", "enforcementMode", "taint", "nodeSelector")
	spec.check = func(v any, p *field.Path) field.ErrorList {
		m := v.(map[string]any)
		if m["enforcementMode"] != "bootstrap-only" {
			return nil
		}
		for i, c := range m["conditions"].([]any) {
			if _, ok := c.(map[string]any)["defaultStatus"]; ok {
				return field.ErrorList{field.Forbidden(p.Child("conditions").Index(i).Child("defaultStatus"), "must not be set when enforcementMode is bootstrap-only")}
			}
		}
		return nil
	}
	return spec
}()

var nodeReadinessRuleKind = customKind{
	gvk:  schema.GroupVersionKind{Group: "readiness.node.x-k8s.io", Version: "v1alpha1", Kind: "NodeReadinessRule"},
	spec: nodeReadinessRuleSpec,
}
