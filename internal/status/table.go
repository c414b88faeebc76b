package status

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/words"
)

// WriteTable writes rep for a terminal: the DaemonSets' rollout, one line
// per image (state, nodes holding it of those targeted, nodes not
// scheduled, digest), one line per image and node that failed or is
// pulling, the disk budget per node pool (and each node that cannot hold
// its images below its kubelet's image GC high threshold), and the notes
// on incomplete sources. Digests are
// shortened to 12 hex digits. What comes from the cluster (node names,
// kubelet reasons and messages, DaemonSet messages) is written through
// escape.Line: no control character reaches the terminal.
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ready := 0
	for _, im := range rep.Images {
		if im.State == Success {
			ready++
		}
	}
	fmt.Fprintf(tw, "profile %s: %d of %s present on every targeted node, %s\n\n", rep.Profile, ready, words.Count(len(rep.Images), "image"), words.Count(len(rep.Nodes), "node"))
	fmt.Fprintln(tw, "DAEMONSET\tDESIRED\tUPDATED\tREADY\tTEMPLATE\tMESSAGE")
	for _, d := range rep.DaemonSets {
		tmpl := "current"
		switch {
		case !d.InCluster:
			tmpl = "absent"
		case !d.Current:
			tmpl = "other"
		}
		fmt.Fprintf(tw, "%s/%s\t%d\t%d\t%d\t%s\t%s\n", escape.Line(d.Namespace), escape.Line(d.Name), d.Desired, d.Updated, d.Ready, tmpl, escape.Line(d.Message))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "IMAGE\tSTATE\tNODES\tNOT SCHEDULED\tDIGEST\tMESSAGE")
	for _, im := range rep.Images {
		targeted, excluded := 0, 0
		for _, c := range im.OnNodes {
			if c.State == NotScheduled {
				excluded++
			} else {
				targeted++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%s\n", escape.Line(im.Name), im.State, len(im.Nodes), targeted, excluded, escape.Line(short(im.Digest)), escape.Line(im.Message))
	}
	// Failed and pulling cells only: a GPU image is not scheduled on every
	// other node of a large cluster, which -o json lists one by one.
	var rows []string
	for _, im := range rep.Images {
		for _, c := range im.OnNodes {
			if c.State == Present || c.State == NotScheduled {
				continue
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", escape.Line(im.Name), escape.Line(c.Node), c.State, escape.Line(c.DaemonSet), escape.Line(oneLine(detail(c)))))
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "IMAGE\tNODE\tSTATE\tDAEMONSET\tDETAIL")
		for _, r := range rows {
			fmt.Fprintln(tw, r)
		}
	}
	// Per node group: the nodes carrying each value of a node label that
	// chooses an image, and how many of them hold it.
	var groups []string
	for _, im := range rep.Images {
		for _, g := range im.NodeGroups {
			groups = append(groups, fmt.Sprintf("%s=%s\t%s\t%d/%d\t%s", escape.Line(g.Label), escape.Line(g.Value), escape.Line(im.Name),
				len(g.Holding), len(g.Nodes), escape.Line(missingNodes(g))))
		}
	}
	if len(groups) > 0 {
		slices.Sort(groups)
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "NODE GROUP\tIMAGE\tHOLDING\tWITHOUT IT")
		for _, r := range groups {
			fmt.Fprintln(tw, r)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "IMAGE\tOFFLINE USE")
	for _, im := range rep.Images {
		if im.OfflineUse != nil {
			fmt.Fprintf(tw, "%s\t%s\n", escape.Line(im.Name), escape.Line(im.OfflineUse.Summary))
		}
	}
	rows, nodes, assumed := diskLines(rep.DiskBudget)
	if len(rows) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "NODE POOL\tNODES\tMOST ON DISK\tSMALLEST LIMIT\tVERDICT")
		for _, r := range rows {
			fmt.Fprintln(tw, r)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range nodes {
		fmt.Fprintf(w, "disk: %s\n", n)
	}
	if assumed > 0 {
		fmt.Fprintf(w, "disk: image GC thresholds unknown on %s (the kubelet's configz, read through nodes/proxy, refused or absent): kubelet default %d%% assumed\n",
			words.Count(assumed, "node"), v1alpha1.DefaultImageGCHighThresholdPercent)
	}
	fmt.Fprintf(w, "\noffline use: %s\n", plan.KubeletRule)
	if len(rep.Sources.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range rep.Sources.Notes {
			fmt.Fprintf(w, "note: %s\n", escape.Line(n))
		}
	}
	return nil
}

// missingNodes names the nodes of g that do not hold its image, at most
// three and then a count; "-" when every node holds it.
func missingNodes(g v1alpha1.NodeGroup) string {
	var miss []string
	for _, n := range g.Nodes {
		if !slices.Contains(g.Holding, n) {
			miss = append(miss, n)
		}
	}
	switch {
	case len(miss) == 0:
		return "-"
	case len(miss) > 3:
		return fmt.Sprintf("%s and %d more", strings.Join(miss[:3], ", "), len(miss)-3)
	}
	return strings.Join(miss, ", ")
}

// short is a digest's algorithm and first 12 hex digits.
func short(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return alg + ":" + hex[:12]
}

// oneLine keeps a kubelet message on one table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Printable is a report for internal/printer: its JSON and YAML are the
// embedded report's own fields (encoding/json inlines an embedded struct
// pointer), its text is WriteTable's.
type Printable struct{ *Report }

// WriteText writes the report as WriteTable does.
func (p Printable) WriteText(w io.Writer) error { return WriteTable(w, p.Report) }
