package v1alpha1

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Config is a config directory: the fields its files may set (schema's
// #Config) and, once schema.Load has read it, where it was read from. Maps
// are keyed as in the files. A Config from schema.Load has been validated
// (every reference parsed, every name checked) and has each profile's
// effective settings filled in, so consumers need no second validation.
type Config struct {
	// Dir is the config directory the files were read from.
	Dir string `json:"-"`
	// Images is the catalogue keyed by short name.
	Images map[string]Image `json:"images,omitempty"`
	// Environments are the image environments keyed by name.
	Environments map[string]Environment `json:"environments,omitempty"`
	// Profiles are the deployment profiles keyed by name.
	Profiles map[string]Profile `json:"profiles"`
	// Helper is the top-level helper setting as written: the default of
	// every profile's Helper.
	Helper Helper `json:"helper,omitempty"`
	// Site is the top-level site registry as written: the default of every
	// profile's Site; nil when not set.
	Site *Site `json:"site,omitempty"`
	// Secrets is the top-level secrets mode as written: the default of
	// every profile's Secrets; "" when not set.
	Secrets string `json:"secrets,omitempty"`
	// Resources is the top-level resources as written: the default of
	// every profile's Resources, field by field; nil when not set.
	Resources *Resources `json:"resources,omitempty"`
	// Verify is the signature policy `stowage lock` and `stowage bump`
	// check every digest they resolve under; nil when none is set.
	Verify *Verify `json:"verify,omitempty"`
	// ImagePlaces are the places outside pod templates where the items of
	// a kustomization name images (a ConfigMap's value, an argument, a
	// custom resource's field): the KRM function pins them and `lock`
	// locks them with the containers' images. A config directory's own
	// commands do not read items, and ignore them.
	ImagePlaces []ImagePlace `json:"imagePlaces,omitempty"`

	// AllowLiteralPasswords is set by the caller (a CLI flag or a KRM
	// annotation), never by the files.
	AllowLiteralPasswords bool `json:"-"`
	// PasswordPositions says where each auth.password is written, keyed by
	// its path ("environments.jupyter.auth.password"); filled by schema's
	// loader, nil for a config built in Go. Read it with PasswordAt.
	PasswordPositions map[string]Position `json:"-"`
}

// PasswordAt says where the auth.password of environment name (kind
// "environments") or image name (kind "images") is written, its Path
// environments.NAME.auth.password; the zero Position when it has none or
// its position is unknown.
func (c *Config) PasswordAt(kind, name string) Position {
	return c.PasswordPositions[kind+"."+name+".auth.password"]
}

// ImagePlace is one place where items name an image outside a pod
// template, in the manner of kustomize's image field specs: the items of
// Kind (and APIVersion and Name when given), at Path, and within the string
// found there, every match of Pattern's one group, or the whole string
// without a Pattern.
type ImagePlace struct {
	// APIVersion narrows the place to items of this apiVersion ("" any).
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is the kind of the items the place is in.
	Kind string `json:"kind"`
	// Name narrows the place to the item of this name ("" any).
	Name string `json:"name,omitempty"`
	// Path is the field, its keys separated by "/" as in kustomize's field
	// specs ("data/images", "spec/template/spec/containers/args"); a list
	// on the way is entered element by element, and "*" stands for every
	// key of a map.
	Path string `json:"path"`
	// Pattern, when set, is an RE2 regular expression with exactly one
	// capturing group: every match's group in the string is an image
	// reference ("--image=(\S+)"); without it the whole string is one.
	Pattern string `json:"pattern,omitempty"`
}

// Position is where a value of a config is written: the file as given to
// the loader, the 1-based line and column (0 when unknown) and the field
// path (e.g. environments.jupyter.auth.password). The zero Position is
// unknown.
type Position struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Path   string `json:"path,omitempty"`
}

// IsZero reports whether p is unknown.
func (p Position) IsZero() bool { return p == Position{} }

// String is p as located errors lead their message: "FILE:LINE:COL: PATH",
// leaving out the parts that are unknown (the column too when only the
// line is known); "" for the zero Position.
func (p Position) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
			if p.Column > 0 {
				fmt.Fprintf(&b, ":%d", p.Column)
			}
		}
		if p.Path != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(p.Path)
	return b.String()
}

// Compare orders positions by file, line, column and path: -1, 0 or +1.
func (p Position) Compare(q Position) int {
	return cmp.Or(strings.Compare(p.File, q.File), cmp.Compare(p.Line, q.Line), cmp.Compare(p.Column, q.Column), strings.Compare(p.Path, q.Path))
}

// ErrNoProfile is wrapped by Profile's error when the name matches no
// profile, or none is named and there is not exactly one.
var ErrNoProfile = errors.New("no such profile")

// ProfileNames returns the profile names of c, sorted.
func (c *Config) ProfileNames() []string { return slices.Sorted(maps.Keys(c.Profiles)) }

// noProfileError is Profile's error when no name is given and the config
// has not exactly one profile; it wraps ErrNoProfile.
type noProfileError string

func (e noProfileError) Error() string { return string(e) }
func (e noProfileError) Unwrap() error { return ErrNoProfile }

// Profile returns the named profile and its name. An empty name picks the
// only profile when there is exactly one. The error wraps ErrNoProfile and
// lists the profiles there are.
func (c *Config) Profile(name string) (string, *Profile, error) {
	if name == "" {
		if len(c.Profiles) == 1 {
			for n := range c.Profiles {
				p := c.Profiles[n]
				return n, &p, nil
			}
		}
		if len(c.Profiles) == 0 {
			return "", nil, noProfileError("the config has no profiles")
		}
		return "", nil, noProfileError(fmt.Sprintf("the config has %d profiles; choose one with --profile (%s)", len(c.Profiles), strings.Join(c.ProfileNames(), ", ")))
	}
	p, ok := c.Profiles[name]
	if !ok {
		return "", nil, fmt.Errorf("%w %q; profiles: %s", ErrNoProfile, name, strings.Join(c.ProfileNames(), ", "))
	}
	return name, &p, nil
}

// Image is one entry of the images catalogue: one reference, or, with
// ByNodeLabel, one reference per value of a node label (exactly one of the
// two is set once loaded).
type Image struct {
	// Reference is the image reference; empty when ByNodeLabel is set.
	Reference string `json:"reference,omitempty"`
	// ByNodeLabel chooses the reference by a node label's value instead of
	// Reference; nil when Reference is set.
	ByNodeLabel *ByNodeLabel `json:"byNodeLabel,omitempty"`
	Platforms   []string     `json:"platforms,omitempty"`
	Auth        *Auth        `json:"auth,omitempty"`
	// Verify replaces the top-level verify policy for this image; nil
	// keeps it.
	Verify *Verify `json:"verify,omitempty"`
	// Artifact marks an OCI artifact without a runnable filesystem (model
	// weights): the pre-pull pod mounts it as an image volume instead of
	// running it.
	Artifact bool `json:"artifact,omitempty"`
}

// Environment is an image environment in the sense of the Submarine
// JupyterImagePuller design: one image with its credentials and placement.
// Exactly one of Image and ByNodeLabel is set once loaded.
type Environment struct {
	// Image is the image reference; empty when ByNodeLabel is set.
	Image string `json:"image,omitempty"`
	// ByNodeLabel chooses the reference by a node label's value instead of
	// Image; nil when Image is set.
	ByNodeLabel  *ByNodeLabel      `json:"byNodeLabel,omitempty"`
	Platforms    []string          `json:"platforms,omitempty"`
	Auth         *Auth             `json:"auth,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	// Verify replaces the top-level verify policy for this environment's
	// image; nil keeps it.
	Verify *Verify `json:"verify,omitempty"`
}

// ByNodeLabel is a per node group image choice: the nodes whose label
// Label has value V pre-pull References[V], and no other node pulls it
// (render gives each value a DaemonSet with nodeSelector {Label: V}).
// Label is a Kubernetes label key and every value a label value
// (apimachinery's IsQualifiedName and IsValidLabelValue), say Node Feature
// Discovery's feature.node.kubernetes.io/kernel-version.full or GPU
// Feature Discovery's nvidia.com/gpu.product.
type ByNodeLabel struct {
	// Label is the node label key.
	Label string `json:"label"`
	// References maps a label value to the image reference the nodes
	// carrying it pre-pull.
	References map[string]string `json:"references"`
}

// Values returns the label values of b, sorted; nil for a nil b.
func (b *ByNodeLabel) Values() []string {
	if b == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(b.References))
}

// References returns every reference im names, in the order pre-pulled:
// Reference, or ByNodeLabel's by sorted label value.
func (im Image) References() []string { return references(im.Reference, im.ByNodeLabel) }

// References returns every reference env names: Image, or ByNodeLabel's
// by sorted label value.
func (env Environment) References() []string { return references(env.Image, env.ByNodeLabel) }

func references(one string, b *ByNodeLabel) []string {
	if b == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	out := make([]string, 0, len(b.References))
	for _, v := range b.Values() {
		out = append(out, b.References[v])
	}
	return out
}

// The modes of a Verify policy.
const (
	// VerifyRequired refuses to pin a digest no trusted signer signed.
	VerifyRequired = "required"
	// VerifyOptional pins it with a warning.
	VerifyOptional = "optional"
)

// Verify is a signature policy: a digest verifies when one of Keys, or a
// keyless certificate matching one of Identities and chained to
// TrustedRoot, signed it. Files are paths inside the config directory.
type Verify struct {
	// Mode is VerifyRequired (the default when empty) or VerifyOptional.
	Mode string `json:"mode,omitempty"`
	// Keys are cosign public key PEM files (cosign.pub).
	Keys []string `json:"keys,omitempty"`
	// Identities are the keyless signers trusted; they need TrustedRoot.
	Identities []VerifyIdentity `json:"identities,omitempty"`
	// TrustedRoot is a sigstore trusted_root.json file.
	TrustedRoot string `json:"trustedRoot,omitempty"`
}

// Required reports whether v refuses a digest that does not verify.
func (v *Verify) Required() bool { return v != nil && v.Mode != VerifyOptional }

// VerifyIdentity is a keyless signer: the certificate identity (its
// subject alternative name: an e-mail address or a workflow URI) and the
// OIDC issuer, each exact or a regular expression (RE2), as cosign's
// --certificate-identity[-regexp] and --certificate-oidc-issuer[-regexp].
type VerifyIdentity struct {
	Identity       string `json:"identity,omitempty"`
	IdentityRegexp string `json:"identityRegexp,omitempty"`
	Issuer         string `json:"issuer,omitempty"`
	IssuerRegexp   string `json:"issuerRegexp,omitempty"`
}

// Auth is registry authentication: either Secret (an existing Secret's name)
// or Username with a Password source ("env:NAME" or "file:path").
type Auth struct {
	Secret   string `json:"secret,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
}

// Toleration mirrors the fields of a core/v1 Toleration that a puller may
// set; TolerationSeconds is in seconds.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Resources are container requests and limits as Kubernetes quantity
// strings ("5m", "16Mi"); integers from the files are turned into strings.
type Resources struct {
	Requests ResourceList `json:"requests,omitempty"`
	Limits   ResourceList `json:"limits,omitempty"`
}

// ResourceList holds the cpu and memory quantities of Resources.
type ResourceList struct {
	CPU    Quantity `json:"cpu,omitempty"`
	Memory Quantity `json:"memory,omitempty"`
}

// Puller is one image pre-puller: it becomes a DaemonSet per node group in
// Namespace, a records ConfigMap and, per distinct credential, a Secret.
type Puller struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Tenants are the namespaces whose pods use the puller's images: each
	// gets a copy of the puller's rendered pull Secrets (same name and
	// data), so that its pods can present the credentials the kubelet
	// checks under KubeletEnsureSecretPulledImages.
	Tenants           []string          `json:"tenants,omitempty"`
	Environments      []string          `json:"environments,omitempty"`
	Images            []string          `json:"images,omitempty"`
	OpenPAI           []string          `json:"openpai,omitempty"`
	NodeSelector      map[string]string `json:"nodeSelector,omitempty"`
	Tolerations       []Toleration      `json:"tolerations,omitempty"`
	PriorityClassName string            `json:"priorityClassName,omitempty"`
	Resources         *Resources        `json:"resources,omitempty"`
	// RefreshHours is the bump interval in hours; "2" and 2 both decode to 2,
	// and 0 means unset.
	RefreshHours Hours `json:"refreshHours,omitempty"`
	// RecordsName is the name of the records ConfigMap; "" means
	// <Name>-records.
	RecordsName string `json:"recordsName,omitempty"`
	// Startup, when set, keeps workloads off a new node until the
	// puller's images are on it: the node registers with Startup.Taint,
	// the puller tolerates it, and its helper lifts it (or sets the
	// condition a NodeReadinessRule waits for) once every DaemonSet of
	// the puller on that node has pulled. nil renders no gate.
	Startup *Startup `json:"startup,omitempty"`
	// Lanes splits each of the puller's DaemonSets into this many, the
	// images balanced by their bytes in the lock, so that a kubelet with
	// serializeImagePulls: false pulls them in parallel (it pulls one
	// pod's init container images one after another). 0 and 1 mean one
	// lane. A DaemonSet with fewer images than Lanes (one byNodeLabel
	// value's, say) gets one lane per image; no lane is empty.
	Lanes int `json:"lanes,omitempty"`
	// NodeDisk is the disk of the nodes this puller's nodeSelector picks,
	// for the disk budget `stowage vet` reports (internal/diskbudget);
	// nil leaves it to the profile's NodeDisk. Pullers with the same
	// nodeSelector are one node pool and must not declare different disks.
	NodeDisk *NodeDisk `json:"nodeDisk,omitempty"`
}

// DefaultImageGCHighThresholdPercent is the kubelet's default
// imageGCHighThresholdPercent (KubeletConfiguration, kubelet.config.k8s.io/v1beta1):
// above this share of its image filesystem in use the kubelet removes
// unused images.
const DefaultImageGCHighThresholdPercent = 85

// NodeDisk declares the disk of a node pool's nodes, for the disk budget
// `stowage vet` computes without a cluster (`stowage status` reads the
// nodes' own).
type NodeDisk struct {
	// Size is the node's image filesystem (usually its root disk, what the
	// node reports as ephemeral-storage capacity): a Kubernetes quantity
	// of bytes, greater than zero ("200Gi").
	Size Quantity `json:"size"`
	// ImageGCHighThresholdPercent is the kubelet's
	// imageGCHighThresholdPercent on those nodes, 1 to 100; 0 means the
	// kubelet's default, DefaultImageGCHighThresholdPercent.
	ImageGCHighThresholdPercent int `json:"imageGCHighThresholdPercent,omitempty"`
}

// HighThresholdPercent is d's ImageGCHighThresholdPercent, or the
// kubelet's default when unset.
func (d *NodeDisk) HighThresholdPercent() int {
	if d.ImageGCHighThresholdPercent == 0 {
		return DefaultImageGCHighThresholdPercent
	}
	return d.ImageGCHighThresholdPercent
}

// The ways a Startup gate opens (Startup.Via).
const (
	// StartupViaTaint: the puller's helper removes the taint from its own
	// node (the default).
	StartupViaTaint = "taint"
	// StartupViaNodeReadinessRule: the helper sets a node condition of
	// its own type on nodes/status, and Kubernetes' Node Readiness
	// Controller removes the taint under a rendered NodeReadinessRule
	// (readiness.node.x-k8s.io/v1alpha1, bootstrap-only).
	StartupViaNodeReadinessRule = "nodeReadinessRule"
)

// Startup is a puller's startup gate for new nodes (Puller.Startup).
type Startup struct {
	// Taint is the taint nodes register with (kubelet
	// --register-with-taints, Karpenter startupTaints, a node pool's
	// taints). One puller per key in a profile: each puller lifts its own.
	Taint Taint `json:"taint"`
	// Via is StartupViaTaint (when empty) or StartupViaNodeReadinessRule.
	Via string `json:"via,omitempty"`
	// Condition is the node condition type the helper sets under
	// StartupViaNodeReadinessRule; "" means "stowage.dev/" + the
	// puller's name + "-images".
	Condition string `json:"condition,omitempty"`
}

// Taint is a node taint: a qualified-name key, an optional label value
// and an effect (NoSchedule, PreferNoSchedule or NoExecute).
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// StartupCondition is the node condition type p's helper sets under
// StartupViaNodeReadinessRule: s.Condition, else
// "stowage.dev/<puller>-images".
func (s *Startup) StartupCondition(puller string) string {
	if s.Condition != "" {
		return s.Condition
	}
	return "stowage.dev/" + puller + "-images"
}

// StartupName names the cluster-scoped objects of the startup gate of
// puller name in namespace ns (its ClusterRole, ClusterRoleBinding,
// ValidatingAdmissionPolicy and binding, NodeReadinessRule):
// "stowage-startup-<namespace>-<puller>". Two pullers can share it
// ("a-b"/"c" and "a"/"b-c"); the config loader refuses that in a profile.
func StartupName(ns, name string) string {
	return "stowage-startup-" + ns + "-" + name
}

// OpenPAI is the OpenPAI service selection of a profile.
type OpenPAI struct {
	Version  string          `json:"version"`
	Features []string        `json:"features,omitempty"`
	Keep     []string        `json:"keep,omitempty"`
	Drop     []string        `json:"drop,omitempty"`
	Registry OpenPAIRegistry `json:"registry"`
}

// OpenPAIRegistry is OpenPAI's cluster.docker-registry: the image prefix is
// "<namespace>/" for docker.io, else "<domain>/<namespace>/", and Tag is the
// tag of every OpenPAI-built image.
type OpenPAIRegistry struct {
	Domain    string `json:"domain"`
	Namespace string `json:"namespace"`
	Tag       string `json:"tag"`
}

// PackageCacheRow is one row of the OpenPAI runtime's package_cache_info.
type PackageCacheRow struct {
	Group    string   `json:"group"`
	OS       string   `json:"os"`
	Packages []string `json:"packages"`
}

// Helper names the helper image (its static binary runs in every pulled
// image, and waits as the main container) and, optionally, a pause image
// that replaces the waiting helper as the main container.
type Helper struct {
	Image string `json:"image,omitempty"`
	Pause string `json:"pause,omitempty"`
}

// DefaultHelperImage is the helper image of a profile that sets none, at
// the top level or in the profile: the project's own image
// (internal/helperimage), published by .github/workflows/release-helper.yml.
const DefaultHelperImage = "ghcr.io/stowage/stowage-helper:v0.1.0"

// Site names a site registry: Registry is the default prefix
// "host[:port][/path]", Registries maps a source registry host[:port] to a
// prefix of its own. Under Registry a repository keeps its source registry
// as a path component ("registry.site:5000/mirror" pulls
// "docker.io/library/busybox:1.31.1" as
// "registry.site:5000/mirror/docker.io/library/busybox:1.31.1"); under a
// Registries prefix it does not.
type Site struct {
	Registry   string            `json:"registry,omitempty"`
	Registries map[string]string `json:"registries,omitempty"`
}

// Secret modes of Profile.Secrets.
const (
	// SecretsRender renders a kubernetes.io/dockerconfigjson Secret per
	// distinct credential.
	SecretsRender = "render"
	// SecretsReference only names the Secrets in imagePullSecrets.
	SecretsReference = "reference"
)

// Profile is a deployment profile.
type Profile struct {
	Namespace    string            `json:"namespace"`
	Pullers      []Puller          `json:"pullers,omitempty"`
	OpenPAI      *OpenPAI          `json:"openpai,omitempty"`
	PackageCache []PackageCacheRow `json:"packageCache,omitempty"`
	Secrets      string            `json:"secrets"`
	// Helper is the effective helper setting once loaded: the profile's
	// own fields, else the top-level Config.Helper's, else
	// DefaultHelperImage (Pause then stays empty).
	Helper Helper `json:"helper,omitempty"`
	// Site is the effective site registry once loaded: the profile's own
	// fields, else the top-level Config.Site's; nil when neither sets one
	// (references are then emitted as written).
	Site      *Site      `json:"site,omitempty"`
	Resources *Resources `json:"resources,omitempty"`
	// Verify is the profile's own verify policy as written: it replaces
	// the top-level Config.Verify for every image of the profile whose
	// catalogue entry or environment has none of its own (the precedence
	// of plan.VerifyPolicy); nil keeps the top-level one.
	Verify *Verify `json:"verify,omitempty"`
	// Policy asks render for the site's admission policies of the
	// profile's images (internal/admission); nil renders none.
	Policy *AdmissionPolicy `json:"policy,omitempty"`
	// NodeDisk is the disk of every node pool of the profile whose
	// pullers declare none (Puller.NodeDisk); nil for none.
	NodeDisk *NodeDisk `json:"nodeDisk,omitempty"`
}

// The kinds and modes of an AdmissionPolicy.
const (
	// AdmissionKyverno is a Kyverno ClusterPolicy (kyverno.io/v1) with
	// verifyImages.
	AdmissionKyverno = "kyverno"
	// AdmissionPolicyController is a sigstore policy-controller
	// ClusterImagePolicy (policy.sigstore.dev/v1beta1), with a TrustRoot
	// for keyless policies.
	AdmissionPolicyController = "policy-controller"
	// AdmissionCRIO is a ConfigMap holding a containers-policy.json
	// fragment for CRI-O (and Podman): per site repository, signatures for
	// the signed one (exactRepository).
	AdmissionCRIO = "crio"
	// AdmissionKyvernoIVPol is a Kyverno ImageValidatingPolicy
	// (policies.kyverno.io/v1, Kyverno 1.19 and later) per verify
	// policy: unlike the ClusterPolicy of AdmissionKyverno it reads
	// Sigstore bundle referrers (cosign 3's default) as well as cosign's
	// tag-scheme signatures.
	AdmissionKyvernoIVPol = "kyverno-ivpol"
	// AdmissionEnforce refuses a pod whose image does not verify (the
	// default).
	AdmissionEnforce = "enforce"
	// AdmissionAudit admits it and reports (Kyverno's Audit,
	// policy-controller's warn); CRI-O has no such mode.
	AdmissionAudit = "audit"
)

// AdmissionPolicy is a profile's policy field: the admission controllers
// the site runs, for which render emits a policy that verifies, under the
// verify policies the lock used, exactly the references it writes (the
// site repositories when the profile has a site).
type AdmissionPolicy struct {
	// Kinds are AdmissionKyverno, AdmissionKyvernoIVPol,
	// AdmissionPolicyController and AdmissionCRIO, each at most once.
	Kinds []string `json:"kinds"`
	// Name is the name of the rendered objects (a DNS label of at most 40
	// characters; policy-controller's and CRI-O's get suffixes); "" means
	// stowage-<profile>.
	Name string `json:"name,omitempty"`
	// Mode is AdmissionEnforce (when empty) or AdmissionAudit.
	Mode string `json:"mode,omitempty"`
}

// Quantity is a Kubernetes quantity string; the files may write an integer
// (a count of cores or bytes), which decodes to its decimal string.
type Quantity string

// UnmarshalJSON accepts a JSON string or number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*q = Quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("quantity must be a string or a number, got %s", b)
	}
	*q = Quantity(n.String())
	return nil
}

// Hours is a whole number of hours written as an integer or as a string of
// digits (the Submarine design's refreshHours: '2').
type Hours int

// UnmarshalJSON accepts 2 or "2".
func (h *Hours) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("hours %q is not a whole number", s)
		}
		*h = Hours(n)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("hours must be a whole number, got %s", b)
	}
	*h = Hours(n)
	return nil
}
