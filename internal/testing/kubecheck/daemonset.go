package kubecheck

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateDaemonSet follows k8s.io/kubernetes/pkg/apis/apps/validation
// ValidateDaemonSet: metadata with ValidateDaemonSetName (a DNS-1123
// subdomain, apimachinery NameIsDNSSubdomain), then the spec.
// Object reference: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/
func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	errs := validateObjectMeta(&ds.ObjectMeta, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

// validateDaemonSetSpec follows upstream ValidateDaemonSetSpec: the selector
// is required, valid (metav1 validation.ValidateLabelSelector), not empty
// ("empty selector is invalid for daemonset") and matches the template's
// labels; the template's metadata and pod spec are valid; restartPolicy is
// Always (empty is defaulted to Always); activeDeadlineSeconds is unset;
// minReadySeconds and revisionHistoryLimit are not negative; and the update
// strategy is valid.
func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath := fldPath.Child("selector")
	tmplPath := fldPath.Child("template")
	if spec.Selector == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil {
			if sel.Empty() {
				errs = append(errs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for daemonset"))
			} else if !sel.Matches(labels.Set(spec.Template.Labels)) {
				errs = append(errs, field.Invalid(tmplPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
			}
		}
	}

	errs = append(errs, validateTemplateMeta(&spec.Template.ObjectMeta, tmplPath.Child("metadata"))...)
	podPath := tmplPath.Child("spec")
	errs = append(errs, validatePodSpec(&spec.Template.Spec, podPath)...)
	if rp := spec.Template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(podPath.Child("restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(podPath.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in DaemonSet is not Supported"))
	}

	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	return append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
}

// validateDaemonSetUpdateStrategy follows upstream
// ValidateDaemonSetUpdateStrategy and ValidateRollingUpdateDaemonSet, before
// defaulting: type is RollingUpdate, OnDelete or empty (defaulted to
// RollingUpdate); maxUnavailable (default 1) and maxSurge (default 0) are
// non-negative integers or percentages of at most 100%, and exactly one of
// them is non-zero.
func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case "", appsv1.RollingUpdateDaemonSetStrategyType:
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), s.Type,
			[]appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType})}
	}
	if s.RollingUpdate == nil {
		return nil
	}
	ruPath := fldPath.Child("rollingUpdate")
	maxUnavailable := intstr.FromInt32(1)
	if s.RollingUpdate.MaxUnavailable != nil {
		maxUnavailable = *s.RollingUpdate.MaxUnavailable
	}
	maxSurge := intstr.FromInt32(0)
	if s.RollingUpdate.MaxSurge != nil {
		maxSurge = *s.RollingUpdate.MaxSurge
	}
	var errs field.ErrorList
	unavailable, uErrs := intOrPercent(maxUnavailable, ruPath.Child("maxUnavailable"))
	surge, sErrs := intOrPercent(maxSurge, ruPath.Child("maxSurge"))
	errs = append(append(errs, uErrs...), sErrs...)
	if len(errs) > 0 {
		return errs
	}
	switch {
	case unavailable != 0 && surge != 0:
		errs = append(errs, field.Invalid(ruPath.Child("maxSurge"), maxSurge.String(), "may not be set when maxUnavailable is non-zero"))
	case unavailable == 0 && surge == 0:
		errs = append(errs, field.Required(ruPath.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

// intOrPercent follows upstream ValidatePositiveIntOrPercent and
// IsNotMoreThan100Percent: an integer >= 0 or a percentage string
// (validation.IsValidPercent) of at most 100%. It returns the number.
func intOrPercent(v intstr.IntOrString, fldPath *field.Path) (int, field.ErrorList) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, field.ErrorList{field.Invalid(fldPath, v.IntVal, apivalidation.IsNegativeErrorMsg)}
		}
		return int(v.IntVal), nil
	}
	if msgs := validation.IsValidPercent(v.StrVal); len(msgs) > 0 {
		return 0, field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be an integer or percentage (e.g '5%')")}
	}
	var pct int
	if _, err := fmt.Sscanf(v.StrVal, "%d%%", &pct); err != nil || pct > 100 {
		return 0, field.ErrorList{field.Invalid(fldPath, v.StrVal, "must not be greater than 100%")}
	}
	return pct, nil
}
