package kubecheck

import (
	"fmt"
	"path"
	"reflect"
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
// (ValidatePriorityClassName, a DNS-1123 subdomain), serviceAccountName
// (ValidateServiceAccountName, a DNS-1123 subdomain), dnsPolicy, the pod
// securityContext and, with hostNetwork, hostPort == containerPort.
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
	if spec.ServiceAccountName != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	errs = append(errs, validateDNSPolicy(spec, fldPath)...)
	errs = append(errs, validatePodSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	return errs
}

// validateDNSPolicy follows upstream validateDNSPolicy: one of
// ClusterFirstWithHostNet, ClusterFirst, Default, None or empty (defaulted to
// ClusterFirst); None requires dnsConfig.
func validateDNSPolicy(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	valid := []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	switch {
	case spec.DNSPolicy == "":
	case !slices.Contains(valid, spec.DNSPolicy):
		return field.ErrorList{field.NotSupported(fldPath.Child("dnsPolicy"), spec.DNSPolicy, valid)}
	case spec.DNSPolicy == corev1.DNSNone && spec.DNSConfig == nil:
		return field.ErrorList{field.Required(fldPath.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None")}
	}
	return nil
}

// validateVolumes follows upstream ValidateVolumes: each name is required, a
// DNS-1123 label (IsDNS1123Label) and unique; at most one volume source is set
// (none is defaulted to emptyDir); hostPath.path, secret.secretName and
// configMap.name are required and hostPath.type is a known HostPathType. It
// returns the declared names for validateVolumeMounts.
func validateVolumes(vols []corev1.Volume, fldPath *field.Path) (map[string]bool, field.ErrorList) {
	names := map[string]bool{}
	var errs field.ErrorList
	for i, v := range vols {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(namePath, ""))
		case names[v.Name]:
			errs = append(errs, field.Duplicate(namePath, v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(namePath, v.Name, msg))
			}
		}
		if v.Name != "" {
			names[v.Name] = true
		}

		if set := setPointerFields(v.VolumeSource); len(set) > 1 {
			errs = append(errs, field.Forbidden(idxPath.Child(set[1]), fmt.Sprintf("may not specify more than 1 volume type (%s is already set)", set[0])))
		}
		if hp := v.HostPath; hp != nil {
			if hp.Path == "" {
				errs = append(errs, field.Required(idxPath.Child("hostPath", "path"), ""))
			}
			if hp.Type != nil && !slices.Contains(hostPathTypes, *hp.Type) {
				errs = append(errs, field.NotSupported(idxPath.Child("hostPath", "type"), *hp.Type, hostPathTypes))
			}
		}
		if v.Secret != nil && v.Secret.SecretName == "" {
			errs = append(errs, field.Required(idxPath.Child("secret", "secretName"), ""))
		}
		if v.ConfigMap != nil && v.ConfigMap.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("configMap", "name"), ""))
		}
	}
	return names, errs
}

// hostPathTypes are the values upstream validateHostPathType accepts.
var hostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
	corev1.HostPathCharDev, corev1.HostPathBlockDev,
}

// setPointerFields returns the JSON names of the non-nil pointer fields of a
// one-of struct such as VolumeSource or EnvVarSource, in declaration order.
func setPointerFields(v any) []string {
	rv := reflect.ValueOf(v)
	var set []string
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
			set = append(set, name)
		}
	}
	return set
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
//   - ports, env, resources, volumeMounts and securityContext as below.
func validateContainer(c *corev1.Container, spec *corev1.PodSpec, volumes, names map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := fldPath.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(namePath, ""))
	case names[c.Name]:
		errs = append(errs, field.Duplicate(namePath, c.Name))
	default:
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(namePath, c.Name, msg))
		}
	}
	if c.Name != "" {
		names[c.Name] = true
	}

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

	errs = append(errs, validateContainerPorts(c.Ports, spec.HostNetwork, fldPath.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, fldPath.Child("env"))...)
	errs = append(errs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, spec.SecurityContext, fldPath.Child("securityContext"))...)
	return errs
}

// validateContainerPorts follows upstream validateContainerPorts and
// validateHostNetwork: containerPort required and in 1-65535
// (IsValidPortNum), hostPort 0 or in 1-65535, protocol TCP, UDP, SCTP or empty
// (defaulted to TCP), name an IANA_SVC_NAME (IsValidPortName) unique in the
// container; with hostNetwork a set hostPort must equal containerPort.
func validateContainerPorts(ports []corev1.ContainerPort, hostNetwork bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	protocols := []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	for i, p := range ports {
		idxPath := fldPath.Index(i)
		if p.Name != "" {
			for _, msg := range validation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(idxPath.Child("name"), p.Name, msg))
			}
			if names[p.Name] {
				errs = append(errs, field.Duplicate(idxPath.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
				errs = append(errs, field.Invalid(idxPath.Child("containerPort"), p.ContainerPort, msg))
			}
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(idxPath.Child("hostPort"), p.HostPort, msg))
			}
			if hostNetwork && p.HostPort != p.ContainerPort {
				errs = append(errs, field.Invalid(idxPath.Child("hostPort"), p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
		if p.Protocol != "" && !slices.Contains(protocols, p.Protocol) {
			errs = append(errs, field.NotSupported(idxPath.Child("protocol"), p.Protocol, protocols))
		}
	}
	return errs
}

// validateEnv follows upstream ValidateEnv: name required and a valid
// variable name (IsRelaxedEnvVarName, the rule since the
// RelaxedEnvironmentVariableValidation gate went GA); valueFrom excludes
// value and sets exactly one source.
func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom == nil {
			continue
		}
		fromPath := idxPath.Child("valueFrom")
		if ev.Value != "" {
			errs = append(errs, invalid(fromPath, "may not be specified when `value` is not empty"))
		}
		switch set := setPointerFields(*ev.ValueFrom); {
		case len(set) == 0:
			errs = append(errs, invalid(fromPath, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
		case len(set) > 1:
			errs = append(errs, invalid(fromPath, "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateResources follows upstream ValidateContainerResourceRequirements:
// every resource name is a qualified name and, unprefixed, a standard
// container resource (cpu, memory, ephemeral-storage, hugepages-*); every
// quantity is >= 0; a request is <= its limit ("must be less than or equal to
// cpu limit of 500m"); and for resources that cannot be overcommitted
// (extended resources and hugepages) a request needs an equal limit and
// extended resources are whole numbers.
func validateResources(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	for _, name := range sortedKeys(req.Limits) {
		q := req.Limits[name]
		errs = append(errs, validateResourceQuantity(name, q, limPath.Key(string(name)))...)
	}
	for _, name := range sortedKeys(req.Requests) {
		q := req.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		limit, hasLimit := req.Limits[name]
		switch {
		case !overcommitAllowed(name) && !hasLimit:
			errs = append(errs, field.Required(limPath.Key(string(name)), "Limit must be set for non overcommitable resources"))
		case !overcommitAllowed(name) && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// validateResourceQuantity checks one resource name and quantity, after
// upstream validateContainerResourceName and ValidateResourceQuantityValue.
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if !strings.Contains(string(name), "/") && !standardContainerResource(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
	}
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if extendedResource(name) && !q.IsZero() && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), "must be an integer"))
	}
	return errs
}

// standardContainerResource is upstream helper.IsStandardContainerResourceName.
func standardContainerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// extendedResource is upstream helper.IsExtendedResourceName: a prefixed
// name outside the kubernetes.io domain and not a quota "requests." name.
func extendedResource(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// overcommitAllowed is upstream helper.IsOvercommitAllowed: native resources
// other than hugepages.
func overcommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
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

// sortedKeys returns a map's keys in order, so errors come out the same way
// every run.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
