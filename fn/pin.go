package fn

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

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
// a site). An image the
// lock lacks, or that does not parse, is an error result naming the item,
// its file and the field path.
func (s *session) pin(l *lock.Lock) {
	workload.EachImage(s.rl.Items, func(item, img *yaml.RNode, field string) {
		s.pinImage(item, img, field, l)
	})
}

func (s *session) pinImage(item, img *yaml.RNode, field string, l *lock.Lock) {
	written, err := workload.Reference(img)
	if err != nil {
		s.errorf(item, field, "%v", err)
		return
	}
	ref, err := imageref.Parse(written)
	if err != nil {
		s.errorf(item, field, "%v", err)
		return
	}
	p := plan.PinOf(ref, nil, l)
	switch {
	case p.Why == plan.PinWritten && s.site == nil:
		return
	case len(p.Errs) > 0:
		s.errorf(item, field, "image %q has no entry %q in %s; run `stowage lock` or add it", written, ref.Key(), lock.FileName)
		return
	}
	pinned := ref.Pin(p.Digest)
	if s.site != nil {
		at, err := plan.SiteReference(s.site, ref)
		if err != nil {
			s.errorf(item, field, "image %q: %v", written, err)
			return
		}
		pinned = at + "@" + p.Digest
	}
	img.YNode().Value = pinned
	img.YNode().Style = 0
}
