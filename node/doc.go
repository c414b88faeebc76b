// Package node is stowage's real-node suite: a single-node Kubernetes
// v1.37.2 cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet) on containerd, runc and the CNI bridge plugin,
// with Debian's docker-registry for the images, all inside one private
// network and mount namespace that the suite creates and removes. It proves
// on a real kubelet what stowage renders: the pre-pull DaemonSets put every
// locked digest on the node, a `stowage bump` rolls them, workloads
// pinned to those digests start with every registry stopped, a new node
// registered with a puller's startup taint takes no workload until the
// puller's helper lifts it (and the helper's token can do nothing else),
// and the kubelet's image garbage collection leaves a puller's images alone
// while the puller exists (TestNewNode). TestLanesBenchmark, run only by
// make bench-lanes, measures pull lanes.
//
// Run it with `make node` (as root). Without its parts (node/parts.sh names
// them) it skips with one line, and fails instead when STOWAGE_REQUIRE_NODE
// is set, as in .ci/run. A module of its own (with a replace to the main
// module), so that stowage never depends on client-go and `make test` never
// compiles it.
package node
