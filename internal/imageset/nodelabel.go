package imageset

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/internal/imageref"
)

// NodeLabelChoice is one image chosen by a node label's value (the
// config's byNodeLabel): the nodes labelled Label=V pre-pull
// References[V].
type NodeLabelChoice struct {
	Label      string
	References map[string]string
}

// NodeValue is one value of a node label and the values file a chart is
// rendered with for the nodes carrying it (the site's values for a kernel:
// driver.version set to that kernel's driver tag).
type NodeValue struct {
	Value string
	File  string
}

// MaxNodeValues bounds the label values of one FromChartByNodeLabel run:
// each is a render of the chart.
const MaxNodeValues = 64

// ParseNodeValue reads the argument of from-chart's --per-node-label,
// "LABEL=VALUE:FILE": a Kubernetes label key, a label value (neither may
// hold '=' or ':') and a values file. Errors name the argument and what
// is wrong, with apimachinery's words for a bad key or value.
func ParseNodeValue(arg string) (label string, v NodeValue, err error) {
	label, rest, ok := strings.Cut(arg, "=")
	value, file, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || file == "" {
		return "", NodeValue{}, fmt.Errorf("%q: want LABEL=VALUE:FILE, e.g. feature.node.kubernetes.io/kernel-version.full=5.15.0-91-generic:kernel-5.15.yaml", arg)
	}
	if msgs := validation.IsQualifiedName(label); len(msgs) > 0 {
		return "", NodeValue{}, fmt.Errorf("%q: label %q is not a valid label key: %s", arg, label, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		return "", NodeValue{}, fmt.Errorf("%q: %q is not a valid label value: %s", arg, value, strings.Join(msgs, "; "))
	}
	return label, NodeValue{Value: value, File: file}, nil
}

// ParseNodeValues reads every --per-node-label argument (ParseNodeValue):
// one label, each value once, no values file "-" (only --values reads
// standard input), and either none or at least two values, since one
// render cannot tell which images differ per node group. Errors are the
// user's command-line mistakes, each naming the argument.
func ParseNodeValues(args []string) (label string, values []NodeValue, err error) {
	for _, arg := range args {
		l, v, err := ParseNodeValue(arg)
		if err != nil {
			return "", nil, err
		}
		switch {
		case label != "" && l != label:
			return "", nil, fmt.Errorf("%q: label %s, but an earlier one names %s; give one label", arg, l, label)
		case v.File == Stdin:
			return "", nil, fmt.Errorf("%q: give a values file per value; only --values reads standard input", arg)
		case slices.ContainsFunc(values, func(w NodeValue) bool { return w.Value == v.Value }):
			return "", nil, fmt.Errorf("%q: value %q is given twice", arg, v.Value)
		}
		label = l
		values = append(values, v)
	}
	if len(values) == 1 {
		return "", nil, fmt.Errorf("%q: the one value of %s given; give one per node group (at least two): an image becomes byNodeLabel where their renders differ", args[0], label)
	}
	return label, values, nil
}

// FromChartByNodeLabel renders the chart at path once per value of the
// node label label, with o and that value's values file last (FromChart's
// rules and bounds each time), and merges the sets: an image whose
// repository every render names with one reference, the same in all, is an
// image as FromChart gives it; one whose reference differs between the
// values (the GPU Operator's driver, tagged per kernel) becomes a
// NodeLabelChoice of the values whose render names it; a repository one
// render names with several references keeps each as an image. Names are
// Build's over one reference per repository. An image whose tag the
// operator completes at run time with the node's OS (Image.OSSuffix) gets
// "-VALUE" appended in each value's render, so that a label whose values
// are the OS suffixes ("ubuntu22.04", "rhel9.4") writes one reference per
// OS. At least one and at most
// MaxNodeValues values, none twice.
func FromChartByNodeLabel(path string, o ChartOptions, label string, values []NodeValue) (Set, string, error) {
	if len(values) == 0 || len(values) > MaxNodeValues {
		return nil, "", fmt.Errorf("%d label values: give 1 to %d", len(values), MaxNodeValues)
	}
	type use struct{ value, ref string }
	byRepo := map[string][]use{}
	many := map[string]bool{} // repositories one render names more than once
	var source string
	seen := map[string]bool{}
	for _, v := range values {
		if seen[v.Value] {
			return nil, "", fmt.Errorf("label value %q is given twice", v.Value)
		}
		seen[v.Value] = true
		vo := o
		vo.ValueFiles = append(slices.Clone(o.ValueFiles), v.File)
		set, src, err := FromChart(path, vo)
		if err != nil {
			return nil, "", fmt.Errorf("%s=%s: %w", label, v.Value, err)
		}
		source = src
		inRender := map[string]int{}
		for _, im := range set {
			ref := im.Reference
			if im.OSSuffix {
				// The operator completes the tag with the node's OS at
				// run time: the label value is that suffix.
				ref += "-" + v.Value
			}
			r, err := imageref.Parse(ref)
			if err != nil {
				return nil, "", fmt.Errorf("%s=%s: %w", label, v.Value, err)
			}
			repo := imageref.RepositoryName(r.Repository)
			inRender[repo]++
			byRepo[repo] = append(byRepo[repo], use{v.Value, ref})
		}
		for repo, n := range inRender {
			if n > 1 {
				many[repo] = true
			}
		}
	}
	var refs []imageref.Ref
	choices := map[string]*NodeLabelChoice{} // representative reference -> choice
	for _, repo := range slices.Sorted(maps.Keys(byRepo)) {
		us := byRepo[repo]
		distinct := map[string]bool{}
		for _, u := range us {
			distinct[u.ref] = true
		}
		if many[repo] || len(distinct) == 1 && len(us) == len(values) {
			for _, r := range slices.Sorted(maps.Keys(distinct)) {
				ref, _ := imageref.Parse(r)
				refs = append(refs, ref)
			}
			continue
		}
		c := &NodeLabelChoice{Label: label, References: map[string]string{}}
		for _, u := range us {
			c.References[u.value] = u.ref
		}
		rep := c.References[slices.Min(slices.Collect(maps.Keys(c.References)))]
		ref, _ := imageref.Parse(rep)
		refs = append(refs, ref)
		choices[rep] = c
	}
	set, err := Build(refs)
	if err != nil {
		return nil, "", err
	}
	for i := range set {
		if c, ok := choices[set[i].Reference]; ok {
			set[i].ByNodeLabel, set[i].Reference = c, ""
		}
	}
	return set, fmt.Sprintf("%s, per %s (%d values)", source, label, len(values)), nil
}
