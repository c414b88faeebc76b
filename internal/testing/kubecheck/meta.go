package kubecheck

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateObjectMeta checks an object's metadata with apimachinery's
// ValidateObjectMeta (k8s.io/apimachinery/pkg/api/validation): name through
// nameFn (the kind's upstream ValidateXName), namespace a DNS-1123 label
// (ValidateNamespaceName), labels (metav1 validation.ValidateLabels),
// annotations (ValidateAnnotations, including TotalAnnotationSizeLimitB, 256
// KiB), ownerReferences and finalizers.
//
// Every kind stowage renders is namespaced; unlike the API server, which
// fills in the request's namespace before validating, a rendered object may
// leave metadata.namespace empty.
func validateObjectMeta(m *metav1.ObjectMeta, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMeta(m, m.Namespace != "", nameFn, field.NewPath("metadata"))
}

// validateTemplateMeta checks a pod template's metadata as upstream
// ValidatePodTemplateSpec does: labels (ValidateLabels) and annotations
// (ValidateAnnotations); a template has no name or namespace of its own.
func validateTemplateMeta(m *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(m.Labels, fldPath.Child("labels"))
	return append(errs, apivalidation.ValidateAnnotations(m.Annotations, fldPath.Child("annotations"))...)
}
