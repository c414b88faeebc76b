package kubecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// redacted stands in for Secret contents in error values.
const redacted = "<secret contents redacted>"

// validateSecret follows k8s.io/kubernetes/pkg/apis/core/validation
// ValidateSecret for the one Secret stowage renders, type
// kubernetes.io/dockerconfigjson: metadata with a DNS-1123 subdomain name;
// every key of data and stringData a valid config key (IsConfigMapKey); the
// values together, stringData overriding data, at most corev1.MaxSecretSize
// (1 MiB); and .dockerconfigjson a JSON object with an "auths" object (the
// ~/.docker/config.json shape the kubelet reads; upstream only requires
// JSON). Any other type is not supported. Error values never include Secret
// contents.
func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, apivalidation.NameIsDNSSubdomain)

	dataPath := field.NewPath("data")
	merged := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		errs = append(errs, validateConfigKey(k, dataPath.Key(k))...)
		merged[k] = s.Data[k]
	}
	strPath := field.NewPath("stringData")
	for _, k := range slices.Sorted(maps.Keys(s.StringData)) {
		errs = append(errs, validateConfigKey(k, strPath.Key(k))...)
		merged[k] = []byte(s.StringData[k])
	}
	total := 0
	for _, v := range merged {
		total += len(v)
	}
	if total > corev1.MaxSecretSize {
		fe := field.TooLong(dataPath, "", corev1.MaxSecretSize)
		fe.Detail = fmt.Sprintf("data and stringData hold %d bytes, more than the %d-byte limit", total, corev1.MaxSecretSize)
		errs = append(errs, fe)
	}
	if s.Type != corev1.SecretTypeDockerConfigJson {
		return append(errs, field.NotSupported(field.NewPath("type"), s.Type, []corev1.SecretType{corev1.SecretTypeDockerConfigJson}))
	}
	return append(errs, validateDockerConfig(merged, dataPath)...)
}

// validateDockerConfig checks that data[.dockerconfigjson] is present and a
// JSON object with an "auths" member that is a JSON object.
func validateDockerConfig(data map[string][]byte, dataPath *field.Path) field.ErrorList {
	keyPath := dataPath.Key(corev1.DockerConfigJsonKey)
	raw, ok := data[corev1.DockerConfigJsonKey]
	if !ok {
		return field.ErrorList{field.Required(keyPath, "")}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return field.ErrorList{field.Invalid(keyPath, redacted, "must be a JSON object: "+err.Error())}
	}
	auths, ok := top["auths"]
	if !ok {
		return field.ErrorList{field.Invalid(keyPath, redacted, `must have an "auths" object`)}
	}
	var registries map[string]json.RawMessage
	if err := json.Unmarshal(auths, &registries); err != nil || bytes.Equal(bytes.TrimSpace(auths), []byte("null")) {
		return field.ErrorList{field.Invalid(keyPath, redacted, `"auths" must be a JSON object`)}
	}
	return nil
}

// validateConfigMap follows k8s.io/kubernetes/pkg/apis/core/validation
// ValidateConfigMap (object reference:
// https://kubernetes.io/docs/concepts/configuration/configmap/): metadata
// with ValidateConfigMapName (a DNS-1123 subdomain); every key of data and
// binaryData is a valid config key (IsConfigMapKey); no key is in both; and
// the values together are at most corev1.MaxSecretSize (1 MiB), the limit
// upstream applies to ConfigMaps too. Upstream reports the size at the
// object's root; here it is at data.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateObjectMeta(&cm.ObjectMeta, apivalidation.NameIsDNSSubdomain)

	dataPath, binPath := field.NewPath("data"), field.NewPath("binaryData")
	total := 0
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		errs = append(errs, validateConfigKey(k, dataPath.Key(k))...)
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		errs = append(errs, validateConfigKey(k, binPath.Key(k))...)
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(binPath.Key(k), k, "duplicate of key present in data"))
		}
		total += len(cm.BinaryData[k])
	}
	if total > corev1.MaxSecretSize {
		fe := field.TooLong(dataPath, "", corev1.MaxSecretSize)
		fe.Detail = fmt.Sprintf("data and binaryData hold %d bytes, more than the %d-byte limit", total, corev1.MaxSecretSize)
		errs = append(errs, fe)
	}
	return errs
}

// validateConfigKey reports a key that IsConfigMapKey rejects: at most 253
// characters of [-._a-zA-Z0-9], and not "." or ".." or starting with "..".
func validateConfigKey(key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fldPath, key, msg))
	}
	return errs
}
