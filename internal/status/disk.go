package status

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/diskbudget"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/words"
)

// DiskPool and DiskNode are the disk budget's report types
// (v1alpha1.DiskPool, v1alpha1.DiskNode).
type (
	DiskPool = v1alpha1.DiskPool
	DiskNode = v1alpha1.DiskNode
)

// quantityBytes is a node's ephemeral-storage quantity in whole bytes
// (rounded up), from an API server that may send anything: 0 for none or
// a negative one, math.MaxInt64 for one of 2^63 bytes or more
// (resource.Quantity.Value wraps there).
func quantityBytes(q resource.Quantity) int64 {
	if q.Sign() <= 0 {
		return 0
	}
	if q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.DecimalSI)) >= 0 {
		return math.MaxInt64
	}
	return q.Value()
}

// nodePlatform is a node's os and architecture: its kubernetes.io labels,
// else its status.nodeInfo.
func nodePlatform(n *corev1.Node) (string, string) {
	os, arch := n.Labels[corev1.LabelOSStable], n.Labels[corev1.LabelArchStable]
	if os == "" {
		os = n.Status.NodeInfo.OperatingSystem
	}
	if arch == "" {
		arch = n.Status.NodeInfo.Architecture
	}
	return os, arch
}

// diskBudget is the disk budget of exp's pools on nodes (sorted by
// name): each node is counted under the most specific pool its labels
// select (the longest selector, then the first name), with the images
// whose DaemonSets target it (any state but NotScheduled in g), against
// its ephemeral-storage capacity times its kubelet's image GC high
// threshold (c.ImageGCHighThreshold, else the kubelet's default). A pool
// without nodes is listed with verdict DiskNoDisk.
func diskBudget(exp *Expected, g *grid, nodes []corev1.Node, c *Cluster) []DiskPool {
	out := make([]DiskPool, 0, len(exp.Pools))
	index := map[string]int{}
	for _, p := range exp.Pools {
		dp := DiskPool{Name: p.Name(), NodeSelector: p.Selector, Pullers: []string{}, Nodes: []DiskNode{}, Verdict: v1alpha1.DiskNoDisk}
		for _, pp := range p.Pullers {
			dp.Pullers = append(dp.Pullers, pp.Puller.Namespace+"/"+pp.Puller.Name)
		}
		index[dp.Name] = len(out)
		out = append(out, dp)
	}
	for i := range nodes {
		n := &nodes[i]
		pool := -1
		for _, p := range exp.Pools {
			if !selects(p.Selector, n.Labels) {
				continue
			}
			if j := index[p.Name()]; pool < 0 || len(p.Selector) > len(out[pool].NodeSelector) {
				pool = j
			}
		}
		if pool < 0 {
			continue
		}
		os, arch := nodePlatform(n)
		var items []diskbudget.Item
		for _, img := range exp.Images {
			cell, ok := g.cells[img.Reference][n.Name]
			if !ok || cell.State == NotScheduled {
				continue
			}
			b, known := img.Sizes.For(os, arch)
			items = append(items, diskbudget.Item{Reference: img.Reference, Digest: img.Digest, Bytes: b, Known: known})
		}
		dn := DiskNode{Node: n.Name, CapacityBytes: quantityBytes(n.Status.Capacity[corev1.ResourceEphemeralStorage]),
			AllocatableBytes:     quantityBytes(n.Status.Allocatable[corev1.ResourceEphemeralStorage]),
			HighThresholdPercent: v1alpha1.DefaultImageGCHighThresholdPercent}
		if pct, ok := c.ImageGCHighThreshold[n.Name]; ok && pct >= 1 && pct <= 100 {
			dn.HighThresholdPercent, dn.ThresholdRead = pct, true
		}
		dn.DiskVariant = diskbudget.Sum(items, dn.CapacityBytes, dn.HighThresholdPercent)
		dp := &out[pool]
		dp.Nodes = append(dp.Nodes, dn)
	}
	for i := range out {
		var verdicts []string
		for _, n := range out[i].Nodes {
			verdicts = append(verdicts, n.Verdict)
		}
		if len(verdicts) > 0 {
			out[i].Verdict = diskbudget.Worst(verdicts...)
		}
	}
	return out
}

// selects reports whether a node with labels matches the selector sel.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if w, ok := labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// diskLines are the disk budget's rows for the table, untrusted text
// escaped: one per pool (its
// nodes, the most any of them needs, the smallest limit, the verdict), then
// one per node that does not fit or may not, and a note on the nodes whose
// kubelet thresholds were not read.
func diskLines(pools []DiskPool) (rows, nodes []string, assumed int) {
	for _, p := range pools {
		var need, limit int64 = 0, -1
		for _, n := range p.Nodes {
			need = max(need, n.OnDiskBytes)
			if n.CapacityBytes > 0 && (limit < 0 || n.LimitBytes < limit) {
				limit = n.LimitBytes
			}
			if !n.ThresholdRead {
				assumed++
			}
			if n.Verdict == v1alpha1.DiskDoesNotFit || n.Verdict == v1alpha1.DiskUnknown || n.Verdict == v1alpha1.DiskNoDisk {
				nodes = append(nodes, nodeLine(p.Name, n))
			}
		}
		lim := "-"
		if limit >= 0 {
			lim = words.Bytes(limit)
		}
		verdict := p.Verdict
		if len(p.Nodes) == 0 {
			verdict = "no nodes"
		}
		rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s\t%s", escape.Line(p.Name), len(p.Nodes), words.Bytes(need), lim, verdict))
	}
	slices.Sort(nodes)
	return rows, nodes, assumed
}

// nodeLine says why node n of pool does not fit, or may not.
func nodeLine(pool string, n DiskNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s (pool %s): %d images, about %s on disk (%s compressed)", escape.Line(n.Node), escape.Line(pool), n.Images, words.Bytes(n.OnDiskBytes), words.Bytes(n.CompressedBytes))
	switch n.Verdict {
	case v1alpha1.DiskNoDisk:
		b.WriteString("; the node reports no ephemeral-storage capacity")
		return b.String()
	case v1alpha1.DiskUnknown:
		fmt.Fprintf(&b, " + %d without a size in the lock", len(n.Unknown))
	}
	fmt.Fprintf(&b, "; capacity %s × %d%%", words.Bytes(n.CapacityBytes), n.HighThresholdPercent)
	if !n.ThresholdRead {
		b.WriteString(" (kubelet default assumed)")
	}
	fmt.Fprintf(&b, " = %s: %s", words.Bytes(n.LimitBytes), n.Verdict)
	if n.Verdict == v1alpha1.DiskDoesNotFit {
		b.WriteString(", the kubelet's image GC would remove pre-pulled images")
	}
	return b.String()
}
