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

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/plan"
)

// EachImage calls f with every image reference pin mode pins, in every
// item that is not local-config (filters.LocalConfigAnnotation), walking
// each item's whole tree (aliases are not followed):
//
//   - Pod specs at kyaml's yaml.ConventionalContainerPaths (Pod,
//     PodTemplate, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
//     CronJob and custom resources of that shape): the image of every
//     entry of initContainers, containers and ephemeralContainers, then
//     the reference of every image volume (volumes[].image.reference,
//     Kubernetes image volumes, GA in 1.36), exactly as written there: an
//     image that is not a string or does not parse is the function's error.
//   - Pod templates anywhere else, in any kind (a serving runtime's
//     spec.workerSpec, a training job's spec.pytorchReplicaSpecs.Worker.
//     template.spec, a tuning experiment's trialTemplate.trialSpec…): a
//     list named initContainers, containers, ephemeralContainers, sidecars
//     or steps whose entries are maps holding name and image, and the image
//     volumes beside such lists; and a map named container or script with
//     an image (Argo Workflows' templates[].container and .script). Found
//     by shape, these count only when the image is a string that parses as
//     an image reference (imageref.Parse), so a policy's pattern (Kyverno's
//     `image: "!*:latest"`) is not taken for an image.
//
// Each find comes with its field path from the item's root
// ("spec.template.spec.containers[0].image",
// "spec.workerSpec.containers[0].image",
// "spec.templates[2].container.image"; ImageVolume tells volumes apart),
// in document order, a pod spec's lists in the order above. Volumes of
// other types and image volumes without a reference are skipped.
func EachImage(items []*yaml.RNode, f func(item, img *yaml.RNode, field string)) {
	for _, it := range items {
		if Annotation(it, filters.LocalConfigAnnotation) == "true" {
			continue
		}
		walkPodSpecs(it, it.YNode(), nil, "", f)
	}
}

// podLists are the lists of a pod spec holding containers, in the order
// EachImage reports them; shapeLists are the lists of workflow engines
// whose entries are containers too (Argo's sidecars, Tekton's steps and
// sidecars), counted only by shape.
var (
	podLists   = []string{"initContainers", "containers", "ephemeralContainers"}
	shapeLists = []string{"sidecars", "steps"}
	shapeMaps  = []string{"container", "script"}
)

// conventional reports whether keys, the map keys from an item's root to a
// mapping, is the pod spec of one of kyaml's ConventionalContainerPaths.
func conventional(keys []string) bool {
	for _, p := range yaml.ConventionalContainerPaths {
		if slices.Equal(p[:len(p)-1], keys) {
			return true
		}
	}
	return false
}

// walkPodSpecs reports the images of mapping n (at field path field, keys
// the map keys leading to it, nil below a list) and recurses into its
// values.
func walkPodSpecs(item *yaml.RNode, n *yaml.Node, keys []string, field string, f func(item, img *yaml.RNode, field string)) {
	switch n.Kind {
	case yaml.SequenceNode:
		for i, e := range n.Content {
			walkPodSpecs(item, e, nil, fmt.Sprintf("%s[%d]", field, i), f)
		}
		return
	case yaml.MappingNode:
	default:
		return
	}
	at := func(k string) string {
		if field == "" {
			return k
		}
		return field + "." + k
	}
	strict := keys != nil && conventional(keys)
	pod := strict
	for _, list := range append(slices.Clone(podLists), shapeLists...) {
		_, l := mapEntry(n, list)
		if l == nil || l.Kind != yaml.SequenceNode {
			continue
		}
		for i, c := range l.Content {
			_, img := mapEntry(c, "image")
			if img == nil {
				continue
			}
			name, _ := mapEntry(c, "name")
			if !strict || !slices.Contains(podLists, list) {
				if name == nil || !parses(img) {
					continue
				}
				if slices.Contains(podLists, list) {
					pod = true
				}
			}
			f(item, yaml.NewRNode(img), fmt.Sprintf("%s[%d].image", at(list), i))
		}
	}
	if _, vs := mapEntry(n, "volumes"); pod && vs != nil && vs.Kind == yaml.SequenceNode {
		for i, v := range vs.Content {
			_, im := mapEntry(v, "image")
			_, ref := mapEntry(im, "reference")
			if ref == nil || !strict && !parses(ref) {
				continue
			}
			f(item, yaml.NewRNode(ref), fmt.Sprintf("%s[%d].image.reference", at("volumes"), i))
		}
	}
	for _, m := range shapeMaps {
		_, c := mapEntry(n, m)
		if _, img := mapEntry(c, "image"); img != nil && parses(img) {
			f(item, yaml.NewRNode(img), at(m)+".image")
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		var next []string
		if keys != nil || field == "" {
			next = append(slices.Clone(keys), k.Value)
		}
		walkPodSpecs(item, v, next, at(k.Value), f)
	}
}

// parses reports whether img is a string that parses as an image
// reference, the test an image found by shape must pass.
func parses(img *yaml.Node) bool {
	r, err := Reference(yaml.NewRNode(img))
	if err != nil {
		return false
	}
	_, err = imageref.Parse(r)
	return err == nil
}

// mapEntry is the key node and value of key in the mapping m, nils when m
// is not a mapping or lacks key.
func mapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
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
// (EachImage), then every reference the config's image places find
// (EachPlace), in item order, as plan.Workload values that name the object
// ("Kind namespace/name"), the field and the file (kioutil's file
// annotations; "" without them). These are the images a lock for the
// kustomization must hold besides the config's. Values the function
// refuses (not a string) are left out; it says why.
func Pinned(items []*yaml.RNode, places []v1alpha1.ImagePlace) []plan.Workload {
	var out []plan.Workload
	add := func(item *yaml.RNode, field, ref string) {
		obj := item.GetKind() + " " + item.GetName()
		if ns := item.GetNamespace(); ns != "" {
			obj = item.GetKind() + " " + ns + "/" + item.GetName()
		}
		file, _, _ := kioutil.GetFileAnnotations(item)
		out = append(out, plan.Workload{Object: obj, Field: field, Image: ref, File: file})
	}
	EachImage(items, func(item, img *yaml.RNode, field string) {
		if ref, err := Reference(img); err == nil {
			add(item, field, ref)
		}
	})
	EachPlace(items, places, func(sp Span) {
		if sp.Err == nil {
			add(sp.Item, sp.Field, sp.Value())
		}
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
