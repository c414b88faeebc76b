// Package v1alpha1 holds the contracts of stowage.dev/v1alpha1 as Go types:
// what users keep in their repositories and what stowage writes for other
// programs to read.
//
//   - [Config]: a config directory (profiles, pullers, environments,
//     images, auth, site, helper, OpenPAI selection, package cache rows),
//     as schema.Load returns it after validation.
//   - [Stowage]: the KRM function's functionConfig, a Config under spec
//     plus the profile to render.
//   - [ImageLock]: stowage.lock.yaml, every reference pinned to a digest.
//   - [StatusReport]: what `stowage status -o json` prints.
//
// The package does no I/O and knows nothing of CUE: reading and validating
// files is package schema's work, and the rules a value must follow are in
// schema's CUE definitions and its loader, not here.
package v1alpha1

const (
	// Group is the API group of every kind here.
	Group = "stowage.dev"
	// Version is this package's API version.
	Version = "v1alpha1"
	// APIVersion is the apiVersion field of every object here,
	// "stowage.dev/v1alpha1".
	APIVersion = Group + "/" + Version
)

// ObjectMeta is the part of a Kubernetes object's metadata that stowage's
// own objects carry. Namespace and Labels are accepted because kustomize's
// namespace and labels transformers set them on every resource.
type ObjectMeta struct {
	Name        string            `json:"name" yaml:"name"`
	Namespace   string            `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
}
