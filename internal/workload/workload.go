// Package workload finds the image references of KRM items (container
// images and image volume references) that stowage's KRM function pins (pin mode), for the function and for the commands that
// read a kustomization.
package workload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/plan"
)

// EachImage calls f with every image reference pin mode pins: of every
// item that is not local-config (filters.LocalConfigAnnotation), in each pod
// spec at kyaml's yaml.ConventionalContainerPaths, the image of every entry
// of the containers, initContainers and ephemeralContainers lists, then the
// reference of every image volume (volumes[].image.reference, Kubernetes
// image volumes, GA in 1.36), each with its field path
// ("spec.template.spec.containers[0].image",
// "spec.template.spec.volumes[0].image.reference"; ImageVolume tells the
// two apart). Volumes of other types and image volumes without a
// reference are skipped.
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
			vs, err := it.Pipe(yaml.Lookup(append(slices.Clone(spec), "volumes")...))
			if err != nil || vs == nil {
				continue
			}
			elems, err := vs.Elements()
			if err != nil {
				continue
			}
			for i, v := range elems {
				ref, err := v.Pipe(yaml.Lookup("image", "reference"))
				if err != nil || ref == nil {
					continue
				}
				f(it, ref, fmt.Sprintf("%s.volumes[%d].image.reference", strings.Join(spec, "."), i))
			}
		}
	}
}

// Reference returns the image reference img holds: a YAML string. Any
// other node (a number such as `image: 42`, a boolean, a map, a list) is
// an error naming what it is, so that it is never read as an image name
// ("42" would be docker.io/library/42:latest).
func Reference(img *yaml.RNode) (string, error) {
	n := img.YNode()
	if n.Kind != yaml.ScalarNode || n.ShortTag() != yaml.NodeTagString {
		what := map[string]string{"!!int": "a number", "!!float": "a number", "!!bool": "a boolean", "!!null": "null"}[n.ShortTag()]
		if n.Kind != yaml.ScalarNode {
			what = map[yaml.Kind]string{yaml.MappingNode: "a map", yaml.SequenceNode: "a list", yaml.AliasNode: "an alias"}[n.Kind]
		}
		if what == "" {
			what = "a value tagged " + strconv.Quote(n.ShortTag())
		}
		return "", fmt.Errorf("want a string image reference, got %s", what)
	}
	return n.Value, nil
}

// ImageVolume reports whether field, a field path EachImage gives, is an
// image volume's reference (it ends in ".image.reference") rather than a
// container's image.
func ImageVolume(field string) bool { return strings.HasSuffix(field, ".image.reference") }

// Pinned lists the images the KRM function pins in items (pin mode):
// every container, init container and ephemeral container image and every
// image volume reference of every item that is not local-config
// (EachImage), in item order, as plan.Workload values that name the object
// ("Kind namespace/name"), the field and the file (kioutil's file
// annotations; "" without them). These are
// the images a lock for the kustomization must hold besides the config's.
func Pinned(items []*yaml.RNode) []plan.Workload {
	var out []plan.Workload
	EachImage(items, func(item, img *yaml.RNode, field string) {
		obj := item.GetKind() + " " + item.GetName()
		if ns := item.GetNamespace(); ns != "" {
			obj = item.GetKind() + " " + ns + "/" + item.GetName()
		}
		file, _, _ := kioutil.GetFileAnnotations(item)
		ref, err := Reference(img)
		if err != nil {
			return // the function refuses it at its field (fn's pin mode)
		}
		out = append(out, plan.Workload{Object: obj, Field: field, Image: ref, File: file})
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
