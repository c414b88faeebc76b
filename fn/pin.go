package fn

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/workload"
)

// pin pins every image of every item that is not local-config
// (filters.LocalConfigAnnotation) to the lock's digest, keeping the item's
// spelling: "repo:tag" becomes "repo:tag@sha256:…"; with a site registry
// (the rendered profile's site, or the top-level site of a config without
// profiles) it becomes the site reference "<site repository>:tag@sha256:…",
// written digests included. The images are those workload.EachImage
// finds: the containers at kyaml's yaml.ConventionalContainerPaths with
// their init and ephemeral containers and image volumes, and the pod
// templates of any kind at any depth found by their shape (a serving
// runtime's workerSpec, a training job's replica specs, Argo's
// templates[].container), pullPolicy left as written. Images that already carry a digest are left as they are (without
// a site). The strings at the config's image places (ImagePlaces,
// workload.EachPlace) are pinned by the same rule, a pattern's matches
// replaced inside their string. An image the lock lacks, or that does not
// parse, is an error result naming the item, its file and the field path.
// Every other string that reads as an image reference without a digest
// (workload.EachLeftover) is a warning result at its field.
func (s *session) pin(l *lock.Lock, places []v1alpha1.ImagePlace) {
	type at struct {
		item  *yaml.RNode
		field string
	}
	found := map[at]bool{}
	workload.EachImage(s.rl.Items, func(item, img *yaml.RNode, field string) {
		found[at{item, field}] = true
		s.pinImage(item, img, field, l)
	})
	// The config's image places: every span of a string is pinned, the
	// last first so that the earlier spans' offsets hold.
	spans := map[*yaml.Node][]workload.Span{}
	var order []*yaml.Node
	workload.EachPlace(s.rl.Items, places, func(sp workload.Span) {
		found[at{sp.Item, sp.Field}] = true
		if sp.Err != nil {
			s.errorf(sp.Item, sp.Field, "%v (an image place of spec.imagePlaces)", sp.Err)
			return
		}
		n := sp.Node.YNode()
		if spans[n] == nil {
			order = append(order, n)
		}
		spans[n] = append(spans[n], sp)
	})
	for _, n := range order {
		v := n.Value
		for i := len(spans[n]) - 1; i >= 0; i-- {
			sp := spans[n][i]
			if p, ok := s.pinned(sp.Item, sp.Field, sp.Value(), l); ok {
				v = v[:sp.Start] + p + v[sp.End:]
			}
		}
		if v != n.Value {
			n.Value = v
			if !strings.Contains(v, "\n") {
				n.Style = 0
			}
		}
	}
	workload.EachLeftover(s.rl.Items, func(item *yaml.RNode, field string) bool { return found[at{item, field}] },
		func(item *yaml.RNode, field, ref string) {
			s.warnf(item, field, "%q reads as an image reference and is not pinned: the function leaves it as written, and the site will pull it by tag; declare its place in spec.imagePlaces (kind, path, pattern) so that lock and the function pin it", ref)
		})
}

func (s *session) pinImage(item, img *yaml.RNode, field string, l *lock.Lock) {
	written, err := workload.Reference(img)
	if err != nil {
		s.errorf(item, field, "%v", err)
		return
	}
	if p, ok := s.pinned(item, field, written, l); ok {
		img.YNode().Value = p
		img.YNode().Style = 0
	}
}

// pinned is written pinned to the lock's digest (at the site registry
// with a site); false, with an error result, when it does not parse or
// the lock lacks it, and false without one when it carries a digest
// already and there is no site.
func (s *session) pinned(item *yaml.RNode, field, written string, l *lock.Lock) (string, bool) {
	ref, err := imageref.Parse(written)
	if err != nil {
		s.errorf(item, field, "%v", err)
		return "", false
	}
	p := plan.PinOf(ref, nil, l)
	switch {
	case p.Why == plan.PinWritten && s.site == nil:
		return "", false
	case len(p.Errs) > 0:
		s.errorf(item, field, "image %q has no entry %q in %s; run `stowage lock` or add it", written, ref.Key(), lock.FileName)
		return "", false
	}
	pinned := ref.Pin(p.Digest)
	if s.site != nil {
		at, err := plan.SiteReference(s.site, ref)
		if err != nil {
			s.errorf(item, field, "image %q: %v", written, err)
			return "", false
		}
		pinned = at + "@" + p.Digest
	}
	return pinned, true
}
