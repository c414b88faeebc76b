// Package status compares what a profile's pre-pull DaemonSets should put on
// the nodes with what a cluster shows: for every image and every node the
// DaemonSets target, whether the locked digest is there, still pulling,
// failed (with the kubelet's reason and message) or not scheduled; the
// DaemonSets' rollout; and a summary per image in the shape of the Submarine
// JupyterImagePuller design's status block (state, message, digest, nodes).
//
// It is pure: Expect takes the image plan and the rendered DaemonSets,
// Evaluate takes the objects a caller read from the cluster (DaemonSets,
// their pods, nodes, events) and returns a Report. Reading the cluster is
// internal/cluster's business.
package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stowage/stowage/internal/diskbudget"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

// Image is one image the profile's DaemonSets pull, as they name it.
type Image struct {
	// Reference is the pinned reference exactly as the DaemonSets' containers
	// name it: "apache/submarine:jupyter-notebook-0.7.0@sha256:…".
	Reference string
	// Name is Reference without the digest, the Submarine design's name.
	Name string
	// Digest is the pinned digest, "sha256:…".
	Digest string
	// Accept are the digests that count as this image on a node, sorted:
	// Digest and, when Digest is a multi-arch index, the lock's children
	// (a runtime may report the platform manifest it pulled).
	Accept []string
	// Repository is the normalised repository (imageref.RepositoryName) the
	// node must hold the digest under.
	Repository string
	// Source is the reference as the config wrote it, before any site
	// mapping: "apache/submarine:jupyter-notebook-0.7.0".
	Source string
	// OfflineUse says which pods may use the pre-pulled copy on a node
	// without the registry (plan.Access, plan.KubeletRule).
	OfflineUse *plan.ImageAccess
	// Artifact is set when the DaemonSets mount the image as an image
	// volume (an artifact) rather than run it.
	Artifact bool
	// NodeGroups are the node label values that choose this image
	// (plan.Use.NodeLabel, NodeLabelValue), sorted; nil for none.
	NodeGroups []LabelValue
	// Sizes are the bytes the lock records for Digest, for the disk
	// budget (diskbudget.SizesOf); zero when it records none.
	Sizes diskbudget.Sizes
}

// LabelValue is one value of a node label: a node group.
type LabelValue struct{ Label, Value string }

// Expected is what a rendered profile should put on the nodes.
type Expected struct {
	// Profile is the profile's name.
	Profile string
	// Images are the distinct pinned references of every container of the
	// DaemonSets (the helper and pause images included), sorted by Reference.
	Images []Image
	// DaemonSets are the rendered DaemonSets, sorted by namespace and name.
	DaemonSets []*appsv1.DaemonSet
	// Pools are the profile's node pools (diskbudget.Pools), sorted by
	// name: the disk budget reports each node under the most specific
	// pool its labels select.
	Pools []*diskbudget.Pool
}

// image returns the expected image with pinned reference ref, or nil.
func (e *Expected) image(ref string) *Image {
	i, ok := slices.BinarySearchFunc(e.Images, ref, func(im Image, r string) int { return strings.Compare(im.Reference, r) })
	if !ok {
		return nil
	}
	return &e.Images[i]
}

// Expect pairs the rendered DaemonSets of profile p with its image plan:
// every container image (init and main) becomes an Image whose accepted
// digests come from the plan's pin and lock entry. Errors: a container image
// that is not a pinned reference, or one the plan does not pin (the render
// and the plan disagree, which is a bug).
func Expect(p *plan.Plan, daemonSets []*appsv1.DaemonSet) (*Expected, error) {
	if p == nil || len(p.Profiles) != 1 {
		return nil, fmt.Errorf("status needs the plan of exactly one profile")
	}
	// The plan's pinned references (and their site spellings), to the
	// image and use that pins them.
	type pinned struct {
		img *plan.Image
		use *plan.Use
	}
	byRef := map[string]pinned{}
	groups := map[string][]LabelValue{}
	for _, img := range p.Images {
		for _, u := range img.Uses {
			if u.Pin.Digest == "" {
				continue
			}
			refs := []string{u.Pinned()}
			if u.Site != "" {
				if ref, err := imageref.Parse(u.Site); err == nil {
					refs = append(refs, ref.Pin(u.Pin.Digest))
				}
			}
			for _, r := range refs {
				byRef[r] = pinned{img, u}
				if lv := (LabelValue{u.NodeLabel, u.NodeLabelValue}); u.NodeLabel != "" && !slices.Contains(groups[r], lv) {
					groups[r] = append(groups[r], lv)
				}
			}
		}
	}
	exp := &Expected{Profile: p.Profiles[0], DaemonSets: slices.Clone(daemonSets), Pools: diskbudget.Pools(p)}
	slices.SortFunc(exp.DaemonSets, func(a, b *appsv1.DaemonSet) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	seen := map[string]bool{}
	var errs []string
	for _, ds := range exp.DaemonSets {
		for _, c := range containers(ds) {
			if seen[c.Image] {
				continue
			}
			seen[c.Image] = true
			ref, err := imageref.Parse(c.Image)
			if err != nil || ref.Digest == "" {
				errs = append(errs, fmt.Sprintf("DaemonSet %s/%s %s: image %q is not pinned to a digest", ds.Namespace, ds.Name, c.what(), c.Image))
				continue
			}
			pn, ok := byRef[c.Image]
			if !ok {
				errs = append(errs, fmt.Sprintf("DaemonSet %s/%s %s: image %q is not in the profile's image plan", ds.Namespace, ds.Name, c.what(), c.Image))
				continue
			}
			name, _, _ := strings.Cut(c.Image, "@")
			im := Image{Reference: c.Image, Name: name, Digest: ref.Digest, Accept: []string{ref.Digest},
				Repository: imageref.RepositoryName(ref.Repository), Source: pn.use.Ref.Written, Artifact: c.Volume}
			if gs := groups[c.Image]; len(gs) > 0 {
				im.NodeGroups = slices.SortedFunc(slices.Values(gs), func(a, b LabelValue) int {
					return cmp.Or(strings.Compare(a.Label, b.Label), strings.Compare(a.Value, b.Value))
				})
			}
			if e := pn.img.Entry; e != nil && e.Kind == lock.KindIndex && pn.use.Pin.Why == plan.PinIndex && e.Digest == ref.Digest {
				for _, pl := range e.Platforms {
					im.Accept = append(im.Accept, pl.Digest)
				}
			}
			im.Sizes = diskbudget.SizesOf(pn.img.Entry, ref.Digest)
			slices.Sort(im.Accept)
			im.Accept = slices.Compact(im.Accept)
			exp.Images = append(exp.Images, im)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	slices.SortFunc(exp.Images, func(a, b Image) int { return strings.Compare(a.Reference, b.Reference) })
	for _, a := range plan.Access(p, exp.DaemonSets) {
		if im := exp.image(a.Reference); im != nil {
			im.OfflineUse = &a
		}
	}
	return exp, nil
}

// container is one container of a DaemonSet's pod template, or one of
// its image volumes (Volume set; Name is the volume's, Image its
// reference): an artifact the pod mounts instead of running.
type container struct {
	Name, Image string
	Init        bool
	Volume      bool
}

// what names c in messages: "container NAME" or "image volume NAME".
func (c container) what() string {
	if c.Volume {
		return "image volume " + c.Name
	}
	return "container " + c.Name
}

// containers lists ds's init containers, then its containers, then its
// image volumes.
func containers(ds *appsv1.DaemonSet) []container {
	var out []container
	spec := &ds.Spec.Template.Spec
	for _, c := range spec.InitContainers {
		out = append(out, container{Name: c.Name, Image: c.Image, Init: true})
	}
	for _, c := range spec.Containers {
		out = append(out, container{Name: c.Name, Image: c.Image})
	}
	for _, v := range spec.Volumes {
		if v.Image != nil {
			out = append(out, container{Name: v.Name, Image: v.Image.Reference, Volume: true})
		}
	}
	return out
}
