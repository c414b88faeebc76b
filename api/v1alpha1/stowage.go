package v1alpha1

// Stowage is the KRM function's functionConfig: a config under spec, as a
// config directory's files would hold it, plus the profile to render. A
// spec without profiles renders nothing and only pins the images of the
// other resources (pin mode).
//
//	apiVersion: stowage.dev/v1alpha1
//	kind: Stowage
//	metadata:
//	  name: prepull
//	spec:
//	  profile: lab
//	  images: {...}
//	  profiles: {...}
type Stowage struct {
	// APIVersion is APIVersion.
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	// Kind is StowageKind.
	Kind     string      `json:"kind" yaml:"kind"`
	Metadata ObjectMeta  `json:"metadata" yaml:"metadata"`
	Spec     StowageSpec `json:"spec" yaml:"spec"`
}

// StowageKind is the kind of a Stowage functionConfig.
const StowageKind = "Stowage"

// StowageSpec is a Stowage's spec: Profile beside the fields of a Config.
type StowageSpec struct {
	// Profile names the profile to render; "" picks the only one.
	Profile string `json:"profile,omitempty" yaml:"profile,omitempty"`
	Config  `json:",inline" yaml:",inline"`
}
