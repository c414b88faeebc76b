package kubecheck

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// redacted stands in for Secret contents in error values.
const redacted = "<secret contents redacted>"

// validateSecret follows k8s.io/kubernetes/pkg/apis/core/validation
// ValidateSecret (object reference:
// https://kubernetes.io/docs/concepts/configuration/secret/):
//   - metadata with ValidateSecretName (a DNS-1123 subdomain);
//   - every key of data and stringData is a valid config key
//     (IsConfigMapKey);
//   - the values together, with stringData overriding data as the API server
//     merges them, are at most corev1.MaxSecretSize (1 MiB);
//   - the keys each built-in type requires are present: .dockerconfigjson
//     for kubernetes.io/dockerconfigjson, .dockercfg for
//     kubernetes.io/dockercfg (both JSON), tls.crt and tls.key for
//     kubernetes.io/tls, username or password for kubernetes.io/basic-auth,
//     ssh-privatekey for kubernetes.io/ssh-auth, and the
//     kubernetes.io/service-account.name annotation for
//     kubernetes.io/service-account-token.
//
// Stricter than upstream, which only requires .dockerconfigjson to be JSON:
// it must be a JSON object with an "auths" object, the ~/.docker/config.json
// shape the kubelet reads (credentialprovider.DockerConfigJSON). Error
// values never include Secret contents.
func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)

	dataPath := field.NewPath("data")
	merged := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for _, k := range sortedKeys(s.Data) {
		errs = append(errs, validateConfigKey(k, dataPath.Key(k))...)
		merged[k] = s.Data[k]
	}
	strPath := field.NewPath("stringData")
	for _, k := range sortedKeys(s.StringData) {
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

	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		errs = append(errs, validateDockerConfig(merged, corev1.DockerConfigJsonKey, true, dataPath)...)
	case corev1.SecretTypeDockercfg:
		errs = append(errs, validateDockerConfig(merged, corev1.DockerConfigKey, false, dataPath)...)
	case corev1.SecretTypeTLS:
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if _, ok := merged[k]; !ok {
				errs = append(errs, field.Required(dataPath.Key(k), ""))
			}
		}
	case corev1.SecretTypeBasicAuth:
		_, user := merged[corev1.BasicAuthUsernameKey]
		_, pass := merged[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""))
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if _, ok := merged[corev1.SSHAuthPrivateKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	}
	return errs
}

// validateDockerConfig checks that data[key] is present and parses as a JSON
// object; with wantAuths, that it has an "auths" member that is a JSON
// object (the kubernetes.io/dockerconfigjson format).
func validateDockerConfig(data map[string][]byte, key string, wantAuths bool, dataPath *field.Path) field.ErrorList {
	keyPath := dataPath.Key(key)
	raw, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(keyPath, "")}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return field.ErrorList{field.Invalid(keyPath, redacted, "must be a JSON object: "+err.Error())}
	}
	if !wantAuths {
		return nil
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
	errs := validateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)

	dataPath, binPath := field.NewPath("data"), field.NewPath("binaryData")
	total := 0
	for _, k := range sortedKeys(cm.Data) {
		errs = append(errs, validateConfigKey(k, dataPath.Key(k))...)
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[k])
	}
	for _, k := range sortedKeys(cm.BinaryData) {
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

// validateNamespace follows k8s.io/kubernetes/pkg/apis/core/validation
// ValidateNamespace (object reference:
// https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/):
// metadata with ValidateNamespaceName (a DNS-1123 label) and no
// metadata.namespace, as Namespaces are cluster-scoped; spec.finalizers are
// qualified names (apimachinery ValidateFinalizerName).
func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateObjectMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName)
	finPath := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), finPath.Index(i))...)
	}
	return errs
}
