// Package workload finds the container images of KRM items that stowage's
// KRM function pins (pin mode), for the function and for the commands that
// read a kustomization.
package workload

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/plan"
)

// EachImage calls f with every container image pin mode pins: of every
// item that is not local-config (filters.LocalConfigAnnotation), at kyaml's
// yaml.ConventionalContainerPaths, in the containers, initContainers and
// ephemeralContainers lists, with the field path of the image.
func EachImage(items []*yaml.RNode, f func(item, img *yaml.RNode, field string)) {
	for _, it := range items {
		if Annotation(it, filters.LocalConfigAnnotation) == "true" {
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

// Pinned lists the images the KRM function pins in items (pin mode):
// every container, init container and ephemeral container image of every
// item that is not local-config, in item order, as plan.Workload values
// that name the object ("Kind namespace/name"), the field and the file
// (kioutil's file annotations; "" without them). These are
// the images a lock for the kustomization must hold besides the config's.
func Pinned(items []*yaml.RNode) []plan.Workload {
	var out []plan.Workload
	EachImage(items, func(item, img *yaml.RNode, field string) {
		obj := item.GetKind() + " " + item.GetName()
		if ns := item.GetNamespace(); ns != "" {
			obj = item.GetKind() + " " + ns + "/" + item.GetName()
		}
		file, _, _ := kioutil.GetFileAnnotations(item)
		out = append(out, plan.Workload{Object: obj, Field: field, Image: yaml.GetValue(img), File: file})
	})
	return out
}

// Annotation returns the value of annotation k of n, or "". Unlike
// RNode.GetAnnotations it does not panic on annotations written as a list.
func Annotation(n *yaml.RNode, k string) string {
	get := func(m *yaml.Node, key string) *yaml.Node {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	v := get(get(get(n.YNode(), "metadata"), "annotations"), k)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}
