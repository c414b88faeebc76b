// Package diskbudget says whether the images a profile pre-pulls fit on the
// nodes that must hold them, below the kubelet's image garbage collection
// high threshold (imageGCHighThresholdPercent: above it the kubelet removes
// unused images, pre-pulled ones among them).
//
// Node pools. A puller's DaemonSets run on the nodes its nodeSelector picks
// (with kubernetes.io/os=linux, which render adds). Each distinct selector
// of a profile's pullers is a node pool; a puller counts in every pool whose
// selector includes its own, since a node matching the larger selector
// matches the smaller one too (a puller without a nodeSelector adds to
// every pool). Tolerations are not read: the budget counts a puller on the
// pool's nodes whatever their taints, an upper bound.
//
// Within a pool, an image chosen by node label (byNodeLabel) is on the nodes
// of its value only: the budget has one variant per combination of those
// values. Other per-image selectors (an environment's nodeSelector, an
// OpenPAI role, a single platform) are taken at their worst case: the
// combination of their values that holds the most bytes.
//
// Bytes. The lock records each manifest's config plus compressed layers;
// an index pin counts its largest child (the pool's kubernetes.io/arch
// child when the selector names one). A digest is counted once per node
// however many pullers pull it; layers shared between images are counted
// per image, so the sum is an upper bound of the compressed content.
// containerd keeps that compressed content and unpacks each layer into a
// snapshot beside it, so a node needs about compressed plus uncompressed
// bytes: OnDiskFactor times the compressed size. An image the lock has no
// size for is named, never counted as 0 bytes silently.
//
// The package is pure: the caller reads the config, the lock and, for
// status, the nodes.
package diskbudget

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

// OnDiskFactor is the estimate of a node's bytes on disk per compressed
// byte the lock records: containerd's content store keeps the compressed
// layers (1) and its snapshotter the unpacked ones, which for gzip layers
// of programs, libraries and Python environments are about three times
// the compressed size (3: gzip -6 shrinks kubectl 3.4×, etcd 2.7×, a
// Python standard library tree 3.4×). Incompressible content (model
// weights, compressed archives) unpacks to about its own size, so for it
// the real need is nearer 2×; containerd with discard_unpacked_layers
// keeps no compressed copy (about 3×). docs/new-nodes.md ("Will it fit?")
// says so.
const OnDiskFactor = 4

// MaxNodeKinds bounds the combinations of per-image selector values the
// budget tries per pool; beyond it, a pool's worst case counts every image
// whose selector agrees with the pool's (an upper bound).
const MaxNodeKinds = 4096

// Item is one image a node holds: its pinned reference (for Unknown), the
// digest counted once per node, and its compressed bytes (Known false
// when the lock records no size).
type Item struct {
	Reference string
	Digest    string
	Bytes     int64
	Known     bool
}

// Sizes are the sizes a lock entry records for one pinned digest: the
// manifest's, or an index's children by platform.
type Sizes struct {
	// Manifest is the single manifest's size; 0 when unknown or for an
	// index.
	Manifest int64
	// Platforms are an index's children's sizes, keyed by the lock's
	// platform string (os/arch[/variant]); nil for a manifest.
	Platforms map[string]int64
}

// SizesOf returns the sizes e records for digest: the child's when digest
// is one of an index's children, the children's when it is the index, the
// entry's own for a manifest; the zero Sizes (unknown) otherwise or for a
// nil e.
func SizesOf(e *lock.Entry, digest string) Sizes {
	if e == nil || digest == "" {
		return Sizes{}
	}
	for _, pl := range e.Platforms {
		if pl.Digest == digest {
			return Sizes{Manifest: pl.Size}
		}
	}
	if e.Digest != digest {
		return Sizes{}
	}
	if e.Kind == lock.KindIndex {
		s := Sizes{Platforms: map[string]int64{}}
		for _, pl := range e.Platforms {
			s.Platforms[pl.Platform] = pl.Size
		}
		return s
	}
	return Sizes{Manifest: e.Size}
}

// For returns the bytes a node of os and arch ("" when unknown) pulls:
// the manifest's, else the child of that os/arch, else the largest child
// (a node pulls one); known false when the lock records no size for it.
func (s Sizes) For(os, arch string) (int64, bool) {
	if s.Platforms == nil {
		return s.Manifest, s.Manifest > 0
	}
	var largest int64
	for _, pl := range slices.Sorted(maps.Keys(s.Platforms)) {
		n := s.Platforms[pl]
		parts := strings.Split(pl, "/")
		if os != "" && arch != "" && len(parts) >= 2 && parts[0] == os && parts[1] == arch {
			return n, n > 0
		}
		largest = max(largest, n)
	}
	return largest, largest > 0
}

// Sum is what a node holding items needs, and its verdict against a disk
// of size bytes under the high threshold percent (size 0: no disk).
// Items of one digest count once.
func Sum(items []Item, size int64, percent int) v1alpha1.DiskVariant {
	v := v1alpha1.DiskVariant{}
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.Digest] {
			continue
		}
		seen[it.Digest] = true
		v.Images++
		if !it.Known {
			v.Unknown = append(v.Unknown, it.Reference)
			continue
		}
		v.CompressedBytes = add(v.CompressedBytes, it.Bytes)
	}
	slices.Sort(v.Unknown)
	v.Unknown = slices.Compact(v.Unknown)
	v.OnDiskBytes = mul(v.CompressedBytes, OnDiskFactor)
	v.LimitBytes = Limit(size, percent)
	v.Verdict = Verdict(v.OnDiskBytes, len(v.Unknown) > 0, size, v.LimitBytes)
	return v
}

// Limit is size × percent / 100 rounded down, without overflow; 0 for a
// size or percent that is not positive. A percent above 100 counts as 100.
func Limit(size int64, percent int) int64 {
	if size <= 0 || percent <= 0 {
		return 0
	}
	p := int64(min(percent, 100))
	return size/100*p + size%100*p/100
}

// Verdict is the verdict of onDisk bytes (some unknown when unknown)
// against limit on a disk of size bytes: DiskNoDisk without a size,
// DiskDoesNotFit above the limit, DiskUnknown when the known bytes fit but
// some are unknown, DiskFits otherwise. Exactly the limit fits.
func Verdict(onDisk int64, unknown bool, size, limit int64) string {
	switch {
	case size <= 0:
		return v1alpha1.DiskNoDisk
	case onDisk > limit:
		return v1alpha1.DiskDoesNotFit
	case unknown:
		return v1alpha1.DiskUnknown
	}
	return v1alpha1.DiskFits
}

// worse orders verdicts, the worst first: does not fit, unknown, no disk,
// fits.
func worse(a, b string) string {
	rank := func(s string) int {
		switch s {
		case v1alpha1.DiskDoesNotFit:
			return 0
		case v1alpha1.DiskUnknown:
			return 1
		case v1alpha1.DiskNoDisk:
			return 2
		case v1alpha1.DiskFits:
			return 3
		}
		return 4
	}
	if rank(b) < rank(a) {
		return b
	}
	return a
}

// Worst is the worst of verdicts (worse's order); DiskFits for none.
func Worst(verdicts ...string) string {
	out := v1alpha1.DiskFits
	for _, v := range verdicts {
		out = worse(out, v)
	}
	return out
}

func add(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mul(a, f int64) int64 {
	if a > math.MaxInt64/f {
		return math.MaxInt64
	}
	return a * f
}

// Pool is a node pool of a plan: a nodeSelector of its pullers and the
// pullers whose DaemonSets run on its nodes.
type Pool struct {
	// Selector is the pool's node selector, kubernetes.io/os=linux
	// included.
	Selector map[string]string
	// Pullers are the plan's pullers on the pool's nodes, in config order.
	Pullers []*plan.Puller
	// Own are those whose selector is the pool's exactly.
	Own []*plan.Puller
}

// Name is the pool's selector as "key=value,…", sorted by key.
func (p *Pool) Name() string { return selectorString(p.Selector) }

func selectorString(sel map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

// pullerSelector is the selector render gives every DaemonSet of pp:
// kubernetes.io/os=linux, then the puller's nodeSelector.
func pullerSelector(pp *plan.Puller) map[string]string {
	sel := map[string]string{corev1.LabelOSStable: "linux"}
	maps.Copy(sel, pp.Puller.NodeSelector)
	return sel
}

// subset reports whether every label of a is in b with the same value.
func subset(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Pools returns the node pools of p (Build's plan of one profile), sorted
// by name.
func Pools(p *plan.Plan) []*Pool {
	byName := map[string]*Pool{}
	for i := range p.Pullers {
		sel := pullerSelector(&p.Pullers[i])
		name := selectorString(sel)
		if byName[name] == nil {
			byName[name] = &Pool{Selector: sel}
		}
	}
	var out []*Pool
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		pool := byName[name]
		for i := range p.Pullers {
			pp := &p.Pullers[i]
			sel := pullerSelector(pp)
			if subset(sel, pool.Selector) {
				pool.Pullers = append(pool.Pullers, pp)
				if len(sel) == len(pool.Selector) {
					pool.Own = append(pool.Own, pp)
				}
			}
		}
		out = append(out, pool)
	}
	return out
}

// uses are every use of pp a node may hold: its images, helper and pause.
func uses(pp *plan.Puller) []*plan.Use {
	out := slices.Clone(pp.Uses)
	for _, u := range []*plan.Use{pp.Helper, pp.Pause} {
		if u != nil {
			out = append(out, u)
		}
	}
	return out
}

// placed is one use in a pool with the full selector its DaemonSet has.
type placed struct {
	use *plan.Use
	sel map[string]string
}

// Held returns the items a node with labels holds of pool: every use of
// its pullers whose DaemonSet's selector (the puller's, then the use's
// Placement over it) the labels satisfy, sized from l at the labels'
// os/arch.
func Held(pool *Pool, l *lock.Lock, labels map[string]string) []Item {
	var items []Item
	for _, pu := range placements(pool) {
		if subset(pu.sel, labels) {
			items = append(items, item(pu.use, l, labels[corev1.LabelOSStable], labels[corev1.LabelArchStable]))
		}
	}
	return items
}

func placements(pool *Pool) []placed {
	var out []placed
	for _, pp := range pool.Pullers {
		for _, u := range uses(pp) {
			sel := pullerSelector(pp)
			maps.Copy(sel, u.Placement())
			out = append(out, placed{u, sel})
		}
	}
	return out
}

// item sizes u's pinned digest from l for a node of os/arch.
func item(u *plan.Use, l *lock.Lock, os, arch string) Item {
	it := Item{Reference: u.Pinned(), Digest: u.Pin.Digest}
	if it.Digest == "" {
		it.Digest = "unpinned " + u.Key()
		return it
	}
	var e *lock.Entry
	if got, ok := l.Lookup(u.Key()); ok {
		e = &got
	}
	it.Bytes, it.Known = SizesOf(e, u.Pin.Digest).For(os, arch)
	return it
}

// Vet returns the disk budget of every pool of p against the disks the
// config declares (the pool's own pullers' nodeDisk, else the profile's),
// sorted by name. l is the lock p was built with.
func Vet(p *plan.Plan, l *lock.Lock) []v1alpha1.DiskPool {
	var out []v1alpha1.DiskPool
	for _, pool := range Pools(p) {
		dp := v1alpha1.DiskPool{Name: pool.Name(), NodeSelector: pool.Selector, Pullers: []string{}, Variants: []v1alpha1.DiskVariant{}}
		for _, pp := range pool.Pullers {
			dp.Pullers = append(dp.Pullers, pp.Puller.Namespace+"/"+pp.Puller.Name)
		}
		dp.Disk = declared(p, pool)
		var size int64
		percent := v1alpha1.DefaultImageGCHighThresholdPercent
		if dp.Disk != nil {
			size, _ = schema.DiskSize(dp.Disk.Size) // Load refused a bad one
			percent = dp.Disk.HighThresholdPercent()
		}
		verdicts := []string{}
		for _, v := range variants(pool, l, size, percent) {
			dp.Variants = append(dp.Variants, v)
			verdicts = append(verdicts, v.Verdict)
		}
		dp.Verdict = Worst(verdicts...)
		out = append(out, dp)
	}
	return out
}

// declared is the disk the config declares for pool: the first of its own
// pullers' nodeDisk (Load refuses two that differ), else the profile's.
func declared(p *plan.Plan, pool *Pool) *v1alpha1.NodeDisk {
	for _, pp := range pool.Own {
		if d := pp.Puller.NodeDisk; d != nil {
			return d
		}
	}
	if p.Profile != nil {
		return p.Profile.NodeDisk
	}
	return nil
}

// variants are pool's node kinds: one per combination of the byNodeLabel
// values its images are chosen by, each the worst case over the values of
// the other labels its images select on.
func variants(pool *Pool, l *lock.Lock, size int64, percent int) []v1alpha1.DiskVariant {
	pus := placements(pool)
	// The labels the uses select on beyond the pool's, and their values;
	// byNodeLabel's labels apart.
	values := map[string][]string{}
	byLabel := map[string]bool{}
	for _, pu := range pus {
		if !agrees(pu.sel, pool.Selector) {
			continue // never on this pool's nodes
		}
		for k, v := range pu.sel {
			if _, fixed := pool.Selector[k]; fixed {
				continue
			}
			if !slices.Contains(values[k], v) {
				values[k] = append(values[k], v)
			}
		}
		if pu.use.NodeLabel != "" {
			byLabel[pu.use.NodeLabel] = true
		}
	}
	keys := slices.Sorted(maps.Keys(values))
	for _, k := range keys {
		slices.Sort(values[k])
	}
	kinds := 1
	for _, k := range keys {
		if kinds > MaxNodeKinds/len(values[k]) {
			kinds = MaxNodeKinds + 1
			break
		}
		kinds *= len(values[k])
	}
	// Every node kind: the pool's labels and one value of each key. A
	// node with fewer labels holds a subset, so no kind leaves a key out.
	best := map[string]v1alpha1.DiskVariant{}
	consider := func(labels map[string]string, items []Item) {
		v := Sum(items, size, percent)
		group := map[string]string{}
		for k := range byLabel {
			if val, ok := labels[k]; ok {
				group[k] = val
			}
		}
		if len(group) > 0 {
			v.NodeLabels = group
		}
		key := selectorString(group)
		if old, ok := best[key]; !ok || heavier(v, old) {
			best[key] = v
		}
	}
	if kinds > MaxNodeKinds {
		// Too many kinds: every use that agrees with the pool, at once.
		var items []Item
		for _, pu := range pus {
			if agrees(pu.sel, pool.Selector) {
				items = append(items, item(pu.use, l, pool.Selector[corev1.LabelOSStable], pool.Selector[corev1.LabelArchStable]))
			}
		}
		consider(map[string]string{}, items)
	} else {
		idx := make([]int, len(keys))
		for {
			labels := maps.Clone(pool.Selector)
			for i, k := range keys {
				labels[k] = values[k][idx[i]]
			}
			consider(labels, Held(pool, l, labels))
			i := len(keys) - 1
			for ; i >= 0; i-- {
				idx[i]++
				if idx[i] < len(values[keys[i]]) {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	var out []v1alpha1.DiskVariant
	for _, k := range slices.Sorted(maps.Keys(best)) {
		out = append(out, best[k])
	}
	return out
}

// agrees reports whether a and b give no label two values.
func agrees(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return false
		}
	}
	return true
}

// heavier reports whether a is a worse case than b: more bytes on disk,
// then more images without a size, then more images.
func heavier(a, b v1alpha1.DiskVariant) bool {
	return cmp.Or(cmp.Compare(a.OnDiskBytes, b.OnDiskBytes), cmp.Compare(len(a.Unknown), len(b.Unknown)), cmp.Compare(a.Images, b.Images)) > 0
}
