package render

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
)

// MaxImagesPerDaemonSet is the most images one pre-pull DaemonSet pulls. A
// node group with more is split into several DaemonSets of at most this many
// images each, named <name>-1, <name>-2, … (<name> is what the group's single
// DaemonSet would be called). The group's images are sorted by lock key and
// cut in that order, first parts full: a digest bump never moves an image to
// another part, and adding or removing an image changes only the part it
// lands in and the parts after it.
//
// Why 32. A pod's init containers run one after another and every pull is a
// container start: kubelet creates the container, waits for it to exit and
// only then starts the next, about a second each even when the image is
// already on the node, plus the pull itself. In one pod of N images the last
// image waits for the N-1 before it; one pull that fails (ImagePullBackOff,
// retried with a back-off of up to 5 minutes) holds back every image after
// it; and a new digest for a single image re-runs all N containers on every
// node. 32 keeps a roll to about half a minute of container starts per node
// and bounds what one bad image holds back, while a full OpenPAI v1.5.0
// master role (22 images, 28 with the role "all" ones) still fits one pod.
// Object size is not what binds: a DaemonSet of 32 images is 20 to 35 KiB
// of JSON, far below both the 256 KiB limit on annotations, which
// client-side `kubectl apply` (Argo CD's default) fills with a last-applied
// copy of the object, and etcd's 1.5 MiB request limit.
const MaxImagesPerDaemonSet = 32

// chunks cuts n items into consecutive [start, end) ranges of at most max
// items, all full but the last. n == 0 gives no range.
func chunks(n, max int) [][2]int {
	var out [][2]int
	for start := 0; start < n; start += max {
		out = append(out, [2]int{start, min(start+max, n)})
	}
	return out
}

// partName names part n (from 1) of a split node group whose DaemonSet
// would be base: base-n, with base shortened (and made distinct by a hash)
// when that would exceed the 63-character label limit that the
// app.kubernetes.io/instance label puts on the name.
func partName(base string, n int) string {
	suffix := "-" + strconv.Itoa(n)
	if len(base)+len(suffix) <= maxLabel {
		return base + suffix
	}
	return shorten(base, maxLabel-len(suffix)) + suffix
}

// hashedName makes name distinct from an equal name of another node group,
// keyed by the group's placement key: name plus "-" and 6 hex digits,
// shortened to fit 63 characters.
func hashedName(name, key string) string {
	return shorten(name+"\x00"+key, min(maxLabel, len(name)+7))
}

// shorten returns s cut to at most max characters, ending in "-" and 6 hex
// digits of sha256(s), so distinct inputs that share a prefix stay
// distinct. Only the part of s before any NUL byte is kept as text.
func shorten(s string, max int) string {
	sum := sha256.Sum256([]byte(s))
	text, _, _ := strings.Cut(s, "\x00")
	if keep := max - 7; len(text) > keep {
		text = text[:keep]
	}
	return strings.TrimRight(text, "-") + "-" + hex.EncodeToString(sum[:])[:6]
}

// laneName names lane k (from 1) of a DaemonSet that would be base:
// base-l<k>, shortened like partName.
func laneName(base string, k int) string {
	suffix := "-l" + strconv.Itoa(k)
	if len(base)+len(suffix) <= maxLabel {
		return base + suffix
	}
	return shorten(base, maxLabel-len(suffix)) + suffix
}

// lanes splits items (one credential class of a node group) into
// p.Lanes lanes balanced by bytes (itemBytes): largest first, each onto
// the lane with the fewest bytes so far (the first such lane), ties in
// size broken by lock key and pinned reference, so the split depends only
// on the items and the lock. A lane keeps its items in the group's order.
// Fewer items than lanes give one lane per item; no lane is empty.
func (r *renderer) lanes(p *v1alpha1.Puller, items []*item) [][]*item {
	n := min(p.Lanes, len(items))
	if n <= 1 {
		return [][]*item{items}
	}
	order := make([]int, len(items))
	size := make([]int64, len(items))
	for i, it := range items {
		order[i], size[i] = i, r.itemBytes(it)
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := items[order[a]], items[order[b]]
		if size[order[a]] != size[order[b]] {
			return size[order[a]] > size[order[b]]
		}
		if x.use.Key() != y.use.Key() {
			return x.use.Key() < y.use.Key()
		}
		return x.pinned < y.pinned
	})
	lane := make([]int, len(items))
	load := make([]int64, n)
	for _, i := range order {
		best := 0
		for k := 1; k < n; k++ {
			if load[k] < load[best] {
				best = k
			}
		}
		lane[i] = best
		load[best] += size[i]
	}
	out := make([][]*item, n)
	for i, it := range items {
		out[lane[i]] = append(out[lane[i]], it)
	}
	return out
}

// itemBytes is the bytes a node pulls for it, from the lock: the size of
// its pinned platform's child, else the largest child of an index (a node
// pulls one), else the entry's size; 0 without an entry.
func (r *renderer) itemBytes(it *item) int64 {
	e, ok := r.in.Lock.Lookup(it.use.Key())
	if !ok {
		return 0
	}
	var largest int64
	for _, pl := range e.Platforms {
		if pl.Digest == it.digest {
			return pl.Size
		}
		largest = max(largest, pl.Size)
	}
	if largest > 0 {
		return largest
	}
	return e.Size
}
