package kubecheck

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules below port parts of k8s.io/kubernetes/pkg/apis/core/validation
// (ValidatePodSpec and the functions it calls), applied to a v1.PodSpec as
// rendered, i.e. before the API server's defaulting. Reference:
// https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/

// validatePodSpec follows upstream ValidatePodSpec for the fields stowage
// renders: volumes, initContainers and containers (at least one; names unique
// across both lists), nodeSelector (ValidateLabels: qualified-name keys,
// label-value values), tolerations, imagePullSecrets, priorityClassName
// (ValidatePriorityClassName, a DNS-1123 subdomain) and the pod
// securityContext. Fields stowage never renders (ports, env, dnsPolicy, ...)
// are left to the real API server in e2e/.
func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))

	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(fldPath.Child("containers"), ""))
	}
	names := map[string]bool{}
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(&spec.InitContainers[i], spec, volumes, names, fldPath.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], spec, volumes, names, fldPath.Child("containers").Index(i))...)
	}

	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	errs = append(errs, validateImagePullSecrets(spec.ImagePullSecrets, fldPath.Child("imagePullSecrets"))...)
	if spec.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.PriorityClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	errs = append(errs, validatePodSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	return errs
}

// validateVolumes follows upstream ValidateVolumes for the volumes stowage
// renders: each name required, a DNS-1123 label (IsDNS1123Label) and unique,
// and the source exactly one of an emptyDir (the helper binary's copy)
// or an image volume (an artifact), whose reference is required and whose
// pullPolicy is Always, IfNotPresent, Never or empty (upstream
// validateImageVolumeSource). It returns the declared names for
// validateVolumeMounts.
func validateVolumes(vols []corev1.Volume, fldPath *field.Path) (map[string]bool, field.ErrorList) {
	names := map[string]bool{}
	var errs field.ErrorList
	pullPolicies := []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	for i, v := range vols {
		idxPath := fldPath.Index(i)
		errs = append(errs, validateName(v.Name, names, idxPath.Child("name"))...)
		switch {
		case v.EmptyDir != nil && v.Image != nil:
			errs = append(errs, field.Forbidden(idxPath.Child("image"), "may not specify more than 1 volume type"))
		case v.Image != nil:
			if v.Image.Reference == "" {
				errs = append(errs, field.Required(idxPath.Child("image", "reference"), ""))
			}
			if pp := v.Image.PullPolicy; pp != "" && !slices.Contains(pullPolicies, pp) {
				errs = append(errs, field.NotSupported(idxPath.Child("image", "pullPolicy"), pp, pullPolicies))
			}
		case v.Projected != nil:
			// A gated puller's token: a ServiceAccount token (a path, and
			// an expiry of at least 10 minutes, as upstream requires) and
			// the cluster's CA from a ConfigMap.
			for j, src := range v.Projected.Sources {
				sp := idxPath.Child("projected", "sources").Index(j)
				switch {
				case src.ServiceAccountToken != nil:
					t := src.ServiceAccountToken
					if t.Path == "" {
						errs = append(errs, field.Required(sp.Child("serviceAccountToken", "path"), ""))
					}
					if t.ExpirationSeconds != nil && *t.ExpirationSeconds < 600 {
						errs = append(errs, field.Invalid(sp.Child("serviceAccountToken", "expirationSeconds"), *t.ExpirationSeconds, "may not be less than 10 minutes"))
					}
				case src.ConfigMap != nil:
					if src.ConfigMap.Name == "" {
						errs = append(errs, field.Required(sp.Child("configMap", "name"), ""))
					}
				default:
					errs = append(errs, field.Forbidden(sp, "stowage projects only a ServiceAccount token and a ConfigMap"))
				}
			}
		case v.EmptyDir == nil:
			errs = append(errs, field.Required(idxPath.Child("emptyDir"), "stowage renders only emptyDir and image volumes"))
		}
	}
	return names, errs
}

// validateName checks a volume's or container's name at namePath:
// required, unique among names (which collects it) and a DNS-1123 label
// (IsDNS1123Label), as upstream does for both.
func validateName(name string, names map[string]bool, namePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(namePath, ""))
	case names[name]:
		errs = append(errs, field.Duplicate(namePath, name))
	default:
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(namePath, name, msg))
		}
	}
	if name != "" {
		names[name] = true
	}
	return errs
}

// validateContainer follows upstream validateContainers,
// validateInitContainers and validateContainerCommon for one container:
//   - name: required, a DNS-1123 label (IsDNS1123Label), unique across
//     initContainers and containers (names collects them);
//   - image: required (stricter than upstream for templates) and free of
//     whitespace (upstream rejects leading/trailing whitespace; an image
//     reference has none inside either);
//   - imagePullPolicy: Always, IfNotPresent, Never or empty (defaulted);
//   - command: if set, non-empty with a non-empty executable (stowage's rule:
//     an empty command fails at container start);
//   - resources, volumeMounts and securityContext as below.
func validateContainer(c *corev1.Container, spec *corev1.PodSpec, volumes, names map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateName(c.Name, names, fldPath.Child("name"))...)

	imagePath := fldPath.Child("image")
	switch {
	case c.Image == "":
		errs = append(errs, field.Required(imagePath, ""))
	case strings.ContainsFunc(c.Image, unicode.IsSpace):
		errs = append(errs, field.Invalid(imagePath, c.Image, "must not contain whitespace"))
	}

	pullPolicies := []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	if c.ImagePullPolicy != "" && !slices.Contains(pullPolicies, c.ImagePullPolicy) {
		errs = append(errs, field.NotSupported(fldPath.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies))
	}

	if c.Command != nil {
		cmdPath := fldPath.Child("command")
		switch {
		case len(c.Command) == 0:
			errs = append(errs, field.Invalid(cmdPath, c.Command, "must not be empty when set"))
		case strings.TrimSpace(c.Command[0]) == "":
			errs = append(errs, field.Invalid(cmdPath.Index(0), c.Command[0], "must name an executable"))
		}
	}

	errs = append(errs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, spec.SecurityContext, fldPath.Child("securityContext"))...)
	return errs
}

// validateResources follows upstream ValidateContainerResourceRequirements
// for the resources stowage renders: names cpu or memory, every quantity
// >= 0, and a request <= its limit ("must be less than or equal to cpu limit
// of 500m").
func validateResources(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	for _, name := range slices.Sorted(maps.Keys(req.Limits)) {
		errs = append(errs, validateResourceQuantity(name, req.Limits[name], limPath.Key(string(name)))...)
	}
	for _, name := range slices.Sorted(maps.Keys(req.Requests)) {
		q, p := req.Requests[name], reqPath.Key(string(name))
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if limit, ok := req.Limits[name]; ok && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// validateResourceQuantity checks that name is cpu or memory and q is not
// negative (upstream ValidateResourceQuantityValue).
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
		errs = append(errs, field.NotSupported(fldPath, name, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
	}
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	return errs
}

// validateVolumeMounts follows upstream ValidateVolumeMounts: name required
// and naming a volume of the pod (NotFound otherwise); mountPath required and
// unique in the container; subPath relative and without ".." elements
// (validateLocalDescendingPath).
func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPaths := map[string]bool{}
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		case !volumes[m.Name]:
			errs = append(errs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(idxPath.Child("mountPath"), ""))
		case mountPaths[m.MountPath]:
			errs = append(errs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths[m.MountPath] = true
		if m.SubPath != "" {
			if path.IsAbs(m.SubPath) {
				errs = append(errs, field.Invalid(idxPath.Child("subPath"), m.SubPath, "must be a relative path"))
			}
			if slices.Contains(strings.Split(m.SubPath, "/"), "..") {
				errs = append(errs, field.Invalid(idxPath.Child("subPath"), m.SubPath, "must not contain '..'"))
			}
		}
	}
	return errs
}

// validateTolerations follows upstream ValidateTolerations:
//   - key, when set, is a qualified name (ValidateLabelName); an empty key
//     needs operator Exists;
//   - operator is Equal (or empty, meaning Equal), whose value must be a
//     valid label value, or Exists, whose value must be empty; Lt and Gt are
//     behind the alpha TaintTolerationComparisonOperators gate, which stowage
//     cannot assume, so they are rejected;
//   - effect is NoSchedule, PreferNoSchedule, NoExecute or empty;
//   - tolerationSeconds requires effect NoExecute.
//
// Upstream reports value problems at .operator; here they are at .value.
func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		} else if t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(idxPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range content.IsLabelValue(t.Value) {
				errs = append(errs, field.Invalid(idxPath.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(idxPath.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(idxPath.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
		if t.Effect != "" && !slices.Contains(effects, t.Effect) {
			errs = append(errs, field.NotSupported(idxPath.Child("effect"), t.Effect, effects))
		}
	}
	return errs
}

// validateImagePullSecrets checks each imagePullSecrets[i].name is set and a
// DNS-1123 subdomain (ValidateSecretName). Upstream only forbids fields other
// than name and warns on empty names; a rendered reference to no Secret is a
// bug, so stowage rejects it.
func validateImagePullSecrets(refs []corev1.LocalObjectReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ref := range refs {
		namePath := fldPath.Index(i).Child("name")
		if ref.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
			continue
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(ref.Name, false) {
			errs = append(errs, field.Invalid(namePath, ref.Name, msg))
		}
	}
	return errs
}

// validatePodSecurityContext follows upstream validatePodSecurityContext:
// runAsUser is a valid user ID (IsValidUserID: 0 to 2^31-1); runAsGroup,
// fsGroup and supplementalGroups are valid group IDs (IsValidGroupID); and,
// as the kubelet enforces at container start (verifyRunAsNonRoot),
// runAsNonRoot true cannot go with runAsUser 0.
func validatePodSecurityContext(sc *corev1.PodSecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, fldPath)
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(fldPath.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	if isTrue(sc.RunAsNonRoot) && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, "must be non-zero when `runAsNonRoot` is true"))
	}
	return errs
}

// validateSecurityContext follows upstream ValidateSecurityContext for a
// container: runAsUser and runAsGroup are valid IDs; privileged true and
// allowPrivilegeEscalation false contradict, as do capabilities.add
// CAP_SYS_ADMIN and allowPrivilegeEscalation false; and runAsNonRoot true
// with runAsUser 0 fails at container start (kubelet verifyRunAsNonRoot),
// counting the values the container inherits from the pod.
func validateSecurityContext(sc *corev1.SecurityContext, pod *corev1.PodSecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, fldPath)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if isTrue(sc.Privileged) {
			errs = append(errs, invalid(fldPath, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && slices.ContainsFunc(sc.Capabilities.Add, func(c corev1.Capability) bool {
			return strings.TrimPrefix(string(c), "CAP_") == "SYS_ADMIN"
		}) {
			errs = append(errs, invalid(fldPath, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}

	nonRoot, uid := sc.RunAsNonRoot, sc.RunAsUser
	if pod != nil {
		if nonRoot == nil {
			nonRoot = pod.RunAsNonRoot
		}
		if uid == nil {
			uid = pod.RunAsUser
		}
	}
	ownsOne := sc.RunAsNonRoot != nil || sc.RunAsUser != nil // else the pod-level check reports it
	if ownsOne && isTrue(nonRoot) && uid != nil && *uid == 0 {
		if sc.RunAsUser != nil {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *uid, "must be non-zero when `runAsNonRoot` is true"))
		} else {
			errs = append(errs, field.Invalid(fldPath.Child("runAsNonRoot"), true, "cannot be true when the pod's `runAsUser` is 0"))
		}
	}
	return errs
}

// validateIDs checks runAsUser (IsValidUserID) and runAsGroup
// (IsValidGroupID) under fldPath.
func validateIDs(uid, gid *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if uid != nil {
		for _, msg := range validation.IsValidUserID(*uid) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *uid, msg))
		}
	}
	if gid != nil {
		for _, msg := range validation.IsValidGroupID(*gid) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *gid, msg))
		}
	}
	return errs
}

// invalid is field.Invalid for a rule about several fields, where no single
// value is the bad one.
func invalid(fldPath *field.Path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: fldPath.String(), BadValue: field.OmitValueType{}, Detail: detail}
}

// isTrue reports whether b is set and true.
func isTrue(b *bool) bool { return b != nil && *b }
