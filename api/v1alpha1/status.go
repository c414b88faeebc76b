package v1alpha1

// NodeState is what a node shows for one image.
type NodeState string

// States of an image on a node.
const (
	// Present: the node holds an accepted digest of the image under its
	// repository (a container status's imageID, or the node's status.images).
	Present NodeState = "present"
	// Pulling: a DaemonSet targets the node and the image is not there yet,
	// with no failure reported: pulling, waiting for an earlier init
	// container, for the pod, or for the rollout.
	Pulling NodeState = "pulling"
	// Failed: the kubelet reported a failure (ErrImagePull,
	// ImagePullBackOff: a 401, a missing manifest), the pod cannot be
	// scheduled, or the DaemonSet is not in the cluster.
	Failed NodeState = "failed"
	// NotScheduled: no DaemonSet that pulls the image targets the node
	// (nodeSelector, node affinity or a taint it does not tolerate).
	NotScheduled NodeState = "not scheduled"
	// Unverified: an artifact's image volume was mounted on the node (the
	// pre-pull pod that mounts it started), but the cluster reports no
	// digest stowage can check: pod status carries no image volume digest
	// (the kubelet's ImageVolumeWithDigest feature gate, alpha and off by
	// default in Kubernetes 1.35 to 1.37) and the node's status.images
	// does not list the artifact. Not counted as present.
	Unverified NodeState = "unverified"
)

// Summary states of an image, the Submarine design's success/failure/pulling.
const (
	Success    = "success"
	Failure    = "failure"
	InProgress = "pulling"
)

// StatusReport is what `stowage status -o json` prints: the status of a profile on a cluster.
type StatusReport struct {
	// Profile is the profile's name.
	Profile string `json:"profile"`
	// Ready is true when every rendered DaemonSet is in the cluster and
	// observed by the DaemonSet controller (Rollout.Observed), and every
	// image is present on every node its DaemonSets target: the exit-0
	// condition.
	Ready bool `json:"ready"`
	// Images are the summaries, sorted by reference.
	Images []ImageStatus `json:"images"`
	// DaemonSets are the rollouts, sorted by namespace and name.
	DaemonSets []Rollout `json:"daemonSets"`
	// Nodes are the names of every node read, sorted.
	Nodes []string `json:"nodes"`
	// Sources says whether the report's sources were complete.
	Sources Sources `json:"sources"`
	// DiskBudget is, per node pool of the profile (internal/diskbudget),
	// each node's bytes of the images its DaemonSets pull against its
	// ephemeral-storage capacity times its kubelet's image GC high
	// threshold, sorted by pool name. It does not change Ready: a set
	// that cannot fit is reported, not failed.
	DiskBudget []DiskPool `json:"diskBudget"`
}

// ImageStatus is one image's summary, in the Submarine design's shape
// (name, state, message, digest, nodes) plus the reference and the state
// on every node.
type ImageStatus struct {
	// Name is the reference without its digest.
	Name string `json:"name"`
	// State is Success (present on every targeted node), Failure (failed on
	// at least one) or InProgress.
	State string `json:"state"`
	// Message says how many targeted nodes hold the image and names the
	// first failure.
	Message string `json:"message,omitempty"`
	// Digest is the pinned digest.
	Digest string `json:"digest"`
	// Nodes are the nodes holding the image, sorted.
	Nodes []string `json:"nodes"`
	// Reference is the pinned reference as the DaemonSets name it.
	Reference string `json:"reference"`
	// Source is the reference as the config wrote it; it differs from Name
	// when a site registry maps the image.
	Source string `json:"source"`
	// OnNodes is the image's state on every node, sorted by node.
	OnNodes []NodeImage `json:"onNodes"`
	// OfflineUse says which pods may use the pre-pulled copy on a node
	// without the registry, under the kubelet's rule (the kubelet's KubeletEnsureSecretPulledImages):
	// any pod, or pods presenting credentials equal to a Secret's.
	OfflineUse *ImageAccess `json:"offlineUse"`
	// Artifact is true for an artifact the DaemonSets mount as an image
	// volume instead of running it.
	Artifact bool `json:"artifact,omitempty"`
	// NodeGroups are the node groups a node label chooses this image for
	// (an environment's or image's byNodeLabel), sorted by label and
	// value; empty for an image pulled on every node its DaemonSets
	// target.
	NodeGroups []NodeGroup `json:"nodeGroups,omitempty"`
}

// NodeGroup is the nodes carrying one value of a node label that chooses
// an image (byNodeLabel), and which of them hold it.
type NodeGroup struct {
	// Label and Value are the node label and its value.
	Label string `json:"label"`
	Value string `json:"value"`
	// Nodes are the nodes read that carry Label=Value, sorted.
	Nodes []string `json:"nodes"`
	// Holding are those of Nodes where the image is present, sorted.
	Holding []string `json:"holding"`
}

// NodeImage is one image on one node.
type NodeImage struct {
	Node  string    `json:"node"`
	State NodeState `json:"state"`
	// Reason is the kubelet's reason (ErrImagePull, ImagePullBackOff, …)
	// or stowage's (NotInCluster, NodeSelector, Taint, NoPod, OldTemplate,
	// Waiting).
	Reason string `json:"reason,omitempty"`
	// Message is the kubelet's message, or what stowage observed.
	Message string `json:"message,omitempty"`
	// DaemonSet is the "namespace/name" the state comes from; empty when
	// only the node's image list says so.
	DaemonSet string `json:"daemonSet,omitempty"`
	// Source is where a Present state was read: "container status",
	// "container started", "volume status" (an artifact's image volume
	// digest in pod status) or "node status.images".
	Source string `json:"source,omitempty"`
}

// Rollout is a DaemonSet's rollout, from its status.
type Rollout struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// InCluster is false when the DaemonSet has not been applied.
	InCluster bool `json:"inCluster"`
	// Observed is false while the DaemonSet controller has not observed
	// the live generation (status.observedGeneration is behind
	// metadata.generation): its counts, and which nodes have pods, are
	// not yet those of the applied template, so the profile is not ready
	// however the images look. False when not in the cluster.
	Observed bool `json:"observed"`
	// Current is true when the live pod template pins the images this
	// render pins (the stowage.dev/images-hash annotations agree).
	Current bool `json:"current"`
	// Desired, Updated, Ready and Available are the DaemonSet status's
	// desiredNumberScheduled, updatedNumberScheduled, numberReady and
	// numberAvailable.
	Desired   int32 `json:"desired"`
	Updated   int32 `json:"updated"`
	Ready     int32 `json:"ready"`
	Available int32 `json:"available"`
	// Message says what is not done, empty when the rollout is complete.
	Message string `json:"message,omitempty"`
}

// Sources says how complete the report's sources were.
type Sources struct {
	// Complete is false when a source may have been incomplete: a note
	// of the reader's (a list cut, events not readable), or a note about a
	// node or pod where an image is not Present.
	Complete bool `json:"complete"`
	// Notes explain each incompleteness.
	Notes []string `json:"notes,omitempty"`
}

// Image returns the summary of the image whose Name, Reference or Source
// (the config's spelling) is name, or nil. With ImageStatus.On it reads one cell of the matrix from a report
// decoded from `stowage status -o json`, as a test on a real node does:
//
//	var rep v1alpha1.StatusReport
//	_ = json.Unmarshal(out, &rep)
//	cell := rep.Image("registry.lab:5000/team/app:1").On("node-1")
func (r *StatusReport) Image(name string) *ImageStatus {
	for i := range r.Images {
		if r.Images[i].Name == name || r.Images[i].Reference == name || r.Images[i].Source == name {
			return &r.Images[i]
		}
	}
	return nil
}

// On returns the image's state on node, or nil when the report has none
// (an unknown node, or s is nil).
func (s *ImageStatus) On(node string) *NodeImage {
	if s == nil {
		return nil
	}
	for i := range s.OnNodes {
		if s.OnNodes[i].Node == node {
			return &s.OnNodes[i]
		}
	}
	return nil
}

// PullCredential is a pull Secret a pre-pull pod presents to the kubelet: the
// credentials an image that needs them is pulled with. Only an image's own
// auth gives it one; the helper and pause images and every image without
// auth have none, and render pulls them in pods that present no Secret.
type PullCredential struct {
	// Secret is the Secret's name: auth.secret as written, or
	// stowage-pull-<registry>-<8 hex> named after the pull reference and the username/password
	// source.
	Secret string `json:"secret"`
	// Registry is the key of the docker config the Secret holds
	// credentials for: the docker config key of the reference
	// the node pulls (the site registry's when the profile has one).
	Registry string `json:"registry"`
	// Rendered is true when stowage renders the Secret (username and
	// password under secrets: render); false when someone else creates it
	// (auth.secret, or secrets: reference).
	Rendered bool `json:"rendered"`
	// Namespaces are where the Secret exists under this name with these
	// credentials: the puller's namespace, then its tenants' in the order
	// written, each once.
	Namespaces []string `json:"namespaces"`
}

// ImageAccess says which pods may use one pre-pulled image on a node
// offline, under the kubelet's KubeletEnsureSecretPulledImages rule.
type ImageAccess struct {
	// Reference is the pinned reference as the DaemonSets name it; left
	// out of JSON, where the image holding the ImageAccess names it.
	Reference string `json:"-"`
	// AnyPod is true when every DaemonSet pulling the image pulls it
	// without credentials: any pod may use it offline, on every node they
	// put it on.
	AnyPod bool `json:"anyPod"`
	// Anonymous are the DaemonSets ("namespace/name") that pull the image
	// without credentials, sorted: on their nodes any pod may use it.
	Anonymous []string `json:"anonymous"`
	// Secrets are the credentials the other DaemonSets pull it with, sorted
	// by Secret name: on their nodes only pods presenting equal
	// credentials may use it.
	Secrets []SecretAccess `json:"secrets"`
	// Summary says the same in one line: "any pod", or "pods presenting
	// credentials equal to Secret S (…)".
	Summary string `json:"summary"`
}

// SecretAccess is a credential that pulls an image, and the DaemonSets
// that present it.
type SecretAccess struct {
	PullCredential
	// DaemonSets are "namespace/name", sorted.
	DaemonSets []string `json:"daemonSets"`
}
