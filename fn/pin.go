package fn

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

// pin pins every image of every item that is not local-config
// (filters.LocalConfigAnnotation) to the lock's digest, keeping the item's
// spelling: "repo:tag" becomes "repo:tag@sha256:…"; with a site registry
// (the rendered profile's site, or the top-level site of a config without
// profiles) it becomes the site reference "<site repository>:tag@sha256:…",
// written digests included. The containers are found
// at kyaml's yaml.ConventionalContainerPaths (Pod, PodTemplate, Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job, CronJob and custom resources of
// the same shape), with the initContainers and ephemeralContainers beside
// them. Images that already carry a digest are left as they are (without
// a site). An image the
// lock lacks, or that does not parse, is an error result naming the item,
// its file and the field path.
func (s *session) pin(l *lock.Lock) {
	eachImage(s.rl.Items, func(item, img *yaml.RNode, field string) {
		s.pinImage(item, img, field, l)
	})
}

// eachImage calls f with every container image pin mode pins: of every
// item that is not local-config (filters.LocalConfigAnnotation), at kyaml's
// yaml.ConventionalContainerPaths, in the containers, initContainers and
// ephemeralContainers lists, with the field path of the image.
func eachImage(items []*yaml.RNode, f func(item, img *yaml.RNode, field string)) {
	for _, it := range items {
		if annotation(it, filters.LocalConfigAnnotation) == "true" {
			continue
		}
		for _, path := range yaml.ConventionalContainerPaths {
			spec := path[:len(path)-1]
			for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
				cs, err := it.Pipe(yaml.Lookup(append(slices.Clone(spec), list)...))
				if err != nil || cs == nil {
					continue
				}
				elems, err := cs.Elements()
				if err != nil {
					continue
				}
				for i, c := range elems {
					img, err := c.Pipe(yaml.Lookup("image"))
					if err != nil || img == nil {
						continue
					}
					f(it, img, fmt.Sprintf("%s.%s[%d].image", strings.Join(spec, "."), list, i))
				}
			}
		}
	}
}

// PinnedImages lists the images the function pins in items (pin mode):
// every container, init container and ephemeral container image of every
// item that is not local-config, in item order, as plan.Workload values
// that name the object ("Kind namespace/name"), the field and the file
// (kioutil's file annotations; "" without them). These are
// the images a lock for the kustomization must hold besides the config's.
func PinnedImages(items []*yaml.RNode) []plan.Workload {
	var out []plan.Workload
	eachImage(items, func(item, img *yaml.RNode, field string) {
		id := identity(item)
		obj := id.Kind + " " + id.Name
		if id.Namespace != "" {
			obj = id.Kind + " " + id.Namespace + "/" + id.Name
		}
		file, _ := fileOf(item)
		out = append(out, plan.Workload{Object: obj, Field: field, Image: yaml.GetValue(img), File: file})
	})
	return out
}

func (s *session) pinImage(item, img *yaml.RNode, field string, l *lock.Lock) {
	written := yaml.GetValue(img)
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
