package v1alpha1

// The verdicts of a disk budget (DiskVariant.Verdict, DiskNode.Verdict,
// DiskPool.Verdict).
const (
	// DiskFits: the images' estimated bytes on disk are at most the
	// disk's size times the kubelet's image GC high threshold.
	DiskFits = "fits"
	// DiskDoesNotFit: they are more, so the kubelet would start removing
	// unused images, pre-pulled ones among them, once they are all there.
	DiskDoesNotFit = "does not fit"
	// DiskUnknown: the sizes the lock records fit, but the lock records no
	// size for some image (named in Unknown), so the whole may not.
	DiskUnknown = "unknown"
	// DiskNoDisk: the disk is not known: no nodeDisk in the config (vet),
	// or no ephemeral-storage capacity on the node (status).
	DiskNoDisk = "no disk"
)

// DiskPool is the disk budget of one node pool of a profile: the nodes a
// nodeSelector of its pullers picks (internal/diskbudget groups the
// pullers). `stowage vet -o json` lists one per pool under diskBudget,
// `stowage status -o json` under diskBudget too, with the nodes.
type DiskPool struct {
	// Profile is the profile the pool is of, in vet's report (which
	// covers several); empty in status's, which is of one profile.
	Profile string `json:"profile,omitempty"`
	// Name is the pool's node selector as "key=value,…", sorted by key;
	// every pool selects kubernetes.io/os=linux, as render's DaemonSets do.
	Name string `json:"name"`
	// NodeSelector is the same selector as a map.
	NodeSelector map[string]string `json:"nodeSelector"`
	// Pullers are the pullers ("namespace/name") whose DaemonSets run on
	// the pool's nodes: those whose nodeSelector the pool's includes.
	Pullers []string `json:"pullers"`
	// Variants (vet only) are the node kinds of the pool the budget tells apart: one
	// per combination of byNodeLabel values, each at its worst case over
	// the other labels the pullers' images select on; one with no
	// NodeLabels when no byNodeLabel applies.
	Variants []DiskVariant `json:"variants,omitempty"`
	// Disk is the declared disk (vet: the config's nodeDisk); nil when
	// the config declares none, and in status, which reads the nodes'.
	Disk *NodeDisk `json:"disk,omitempty"`
	// Nodes are the pool's nodes as status reads them, sorted by name;
	// empty in vet.
	Nodes []DiskNode `json:"nodes,omitempty"`
	// Verdict is the worst verdict of the variants (vet) or nodes
	// (status): DiskDoesNotFit, then DiskUnknown, then DiskNoDisk, then
	// DiskFits.
	Verdict string `json:"verdict"`
}

// DiskVariant is one kind of node of a pool and the images it holds.
type DiskVariant struct {
	// NodeLabels are the byNodeLabel labels and values that make this
	// kind of node (a node labelled X holds the X variant of an image);
	// empty when no byNodeLabel applies.
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// Images is how many distinct digests such a node holds.
	Images int `json:"images"`
	// CompressedBytes is the sum of their sizes as the lock records them
	// (config plus compressed layers), images without a size counted as 0.
	CompressedBytes int64 `json:"compressedBytes"`
	// OnDiskBytes is the estimate of what they take on the node: the
	// compressed content plus the unpacked snapshots
	// (CompressedBytes times diskbudget.OnDiskFactor).
	OnDiskBytes int64 `json:"onDiskBytes"`
	// Unknown are the images (pinned references) the lock records no size
	// for, sorted; they are not in the sums.
	Unknown []string `json:"unknown,omitempty"`
	// LimitBytes is the disk's size times the kubelet's image GC high
	// threshold, rounded down; 0 without a disk.
	LimitBytes int64 `json:"limitBytes,omitempty"`
	// Verdict is DiskFits, DiskDoesNotFit, DiskUnknown or DiskNoDisk.
	Verdict string `json:"verdict"`
}

// DiskNode is one node's disk budget, as status reads the node.
type DiskNode struct {
	// Node is the node's name.
	Node string `json:"node"`
	// DiskVariant is what the node holds: the images of the DaemonSets
	// that target it, and its verdict against LimitBytes.
	DiskVariant
	// CapacityBytes and AllocatableBytes are the node's status.capacity
	// and status.allocatable ephemeral-storage, in bytes; 0 when the node
	// reports none (or a negative one), 9223372036854775807 for any value
	// at least that large.
	CapacityBytes    int64 `json:"capacityBytes"`
	AllocatableBytes int64 `json:"allocatableBytes"`
	// HighThresholdPercent is the kubelet's imageGCHighThresholdPercent
	// the limit uses: read from the kubelet's configuration (configz)
	// when ThresholdRead, else DefaultImageGCHighThresholdPercent.
	HighThresholdPercent int `json:"highThresholdPercent"`
	// ThresholdRead is true when the kubelet's own configuration was read
	// (GET nodes/NAME/proxy/configz); false when it was refused, absent or
	// not believable, and the kubelet's default is assumed.
	ThresholdRead bool `json:"thresholdRead"`
}
