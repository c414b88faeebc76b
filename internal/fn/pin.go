package fn

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
)

// podSpecPaths maps the workload kinds pin mode knows to the path of their
// pod spec (the core/v1 and apps/v1, batch/v1 shapes).
var podSpecPaths = map[string][]string{
	"Pod":         {"spec"},
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerLists are the pod spec fields holding containers.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// pin pins every image of every workload item (not local-config) to the
// lock's digest, keeping the item's spelling: "repo:tag" becomes
// "repo:tag@sha256:…". Images that already carry a digest are left as they
// are. An image the lock lacks, or that does not parse, is an error result
// naming the item, its file and the field path.
func (s *session) pin(l *lock.Lock) {
	for _, it := range s.rl.Items {
		if it.GetAnnotations()[LocalConfigAnnotation] == "true" {
			continue
		}
		id := identity(it)
		path, ok := podSpecPaths[id.Kind]
		if !ok {
			continue
		}
		spec, err := it.Pipe(yaml.Lookup(path...))
		if err != nil || spec == nil {
			continue
		}
		for _, list := range containerLists {
			cs, err := spec.Pipe(yaml.Lookup(list))
			if err != nil || cs == nil {
				continue
			}
			elems, err := cs.Elements()
			if err != nil {
				continue
			}
			for i, c := range elems {
				field := fmt.Sprintf("%s.%s[%d].image", joinPath(path), list, i)
				s.pinContainer(it, c, field, l)
			}
		}
	}
}

func (s *session) pinContainer(item, c *yaml.RNode, field string, l *lock.Lock) {
	img, err := c.Pipe(yaml.Lookup("image"))
	if err != nil || img == nil {
		return
	}
	written := yaml.GetValue(img)
	ref, err := imageref.Parse(written)
	if err != nil {
		s.errorf(item, field, "%v", err)
		return
	}
	p := plan.PinOf(ref, nil, l)
	switch {
	case p.Why == plan.PinWritten:
		return
	case len(p.Errs) > 0:
		s.errorf(item, field, "image %q has no entry %q in %s; run `stowage lock` or add it", written, ref.Key(), lock.FileName)
		return
	}
	img.YNode().Value = ref.Pin(p.Digest)
	img.YNode().Style = 0
}

func joinPath(p []string) string {
	out := ""
	for i, e := range p {
		if i > 0 {
			out += "."
		}
		out += e
	}
	return out
}
