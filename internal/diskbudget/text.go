package diskbudget

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/words"
)

// Line says what one kind of node of pool holds and whether it fits, in
// one line with untrusted text escaped: "node pool
// kubernetes.io/os=linux,pool=gpu, nodes with kernel=6.8: 3 images,
// 460.00MB compressed, about 1.38GB on disk; 200Gi disk × 85% =
// 182.54GB: fits". disk is the declared disk's description (nil: none).
func Line(pool string, v v1alpha1.DiskVariant, disk string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node pool %s", escape.Line(pool))
	if len(v.NodeLabels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(v.NodeLabels)) {
			ls = append(ls, k+"="+v.NodeLabels[k])
		}
		fmt.Fprintf(&b, ", nodes with %s", escape.Line(strings.Join(ls, ",")))
	}
	fmt.Fprintf(&b, ": %s, %s compressed, about %s on disk", words.Count(v.Images, "image"), words.Bytes(v.CompressedBytes), words.Bytes(v.OnDiskBytes))
	if n := len(v.Unknown); n > 0 {
		fmt.Fprintf(&b, " + %d without a size in the lock (%s)", n, escape.Line(strings.Join(v.Unknown, ", ")))
	}
	switch v.Verdict {
	case v1alpha1.DiskNoDisk:
		b.WriteString("; no disk declared (nodeDisk)")
	case v1alpha1.DiskDoesNotFit:
		fmt.Fprintf(&b, "; %s = %s: does not fit below the kubelet's image GC high threshold, the kubelet would remove pre-pulled images", disk, words.Bytes(v.LimitBytes))
	case v1alpha1.DiskUnknown:
		fmt.Fprintf(&b, "; %s = %s: the sized images fit, the unsized may not", disk, words.Bytes(v.LimitBytes))
	default:
		fmt.Fprintf(&b, "; %s = %s: fits", disk, words.Bytes(v.LimitBytes))
	}
	return b.String()
}

// diskString describes a declared disk: "200Gi disk × 85%".
func diskString(d *v1alpha1.NodeDisk) string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf("%s disk × %d%%", escape.Line(string(d.Size)), d.HighThresholdPercent())
}

// WriteVet writes vet's lines for profile's pools to w: with verbose,
// one line per kind of node of every pool; without, only the warnings, for
// the kinds whose declared disk the images do not fit or may not fit
// (unsized images). It returns how many warnings it wrote.
func WriteVet(w io.Writer, profile string, pools []v1alpha1.DiskPool, verbose bool) int {
	warned := 0
	for _, p := range pools {
		for _, v := range p.Variants {
			warn := v.Verdict == v1alpha1.DiskDoesNotFit || v.Verdict == v1alpha1.DiskUnknown
			if !warn && !verbose {
				continue
			}
			prefix := "stowage: "
			if warn {
				prefix, warned = "stowage: warning: ", warned+1
			}
			fmt.Fprintf(w, "%sprofile %s: %s\n", prefix, escape.Line(profile), Line(p.Name, v, diskString(p.Disk)))
		}
	}
	return warned
}
