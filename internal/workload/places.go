package workload

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
)

// Span is one image reference an image place found: Value[Start:End] of
// the string node Node (the whole value without a pattern).
type Span struct {
	Item, Node *yaml.RNode
	// Field is the node's field path from the item's root
	// ("data.images", "spec.template.spec.containers[0].args[1]").
	Field      string
	Start, End int
	// Err is set when the node at the place is not a string (a number, a
	// map): the place was declared, so that is the user's to fix.
	Err error
}

// Value is the image reference the span covers.
func (s Span) Value() string { return s.Node.YNode().Value[s.Start:s.End] }

// EachPlace calls f with every image reference the config's image places
// find in items that are not local-config: for each place, the items of
// its kind (apiVersion and name when given), the nodes at its path (keys
// split at "/", lists entered element by element, "*" every key of a
// map, a list at the end entered too), and in each string either every
// match of the pattern's group or the whole string. Places whose pattern
// does not compile are skipped (the schema refuses them).
func EachPlace(items []*yaml.RNode, places []v1alpha1.ImagePlace, f func(Span)) {
	for _, pl := range places {
		var re *regexp.Regexp
		if pl.Pattern != "" {
			var err error
			if re, err = regexp.Compile(pl.Pattern); err != nil || re.NumSubexp() != 1 {
				continue
			}
		}
		for _, it := range items {
			if Annotation(it, filters.LocalConfigAnnotation) == "true" || it.GetKind() != pl.Kind ||
				pl.APIVersion != "" && it.GetApiVersion() != pl.APIVersion || pl.Name != "" && it.GetName() != pl.Name {
				continue
			}
			for _, at := range lookup(it.YNode(), "", strings.Split(pl.Path, "/")) {
				n := at.node
				if n.Kind != yaml.ScalarNode || n.ShortTag() != yaml.NodeTagString {
					_, err := Reference(yaml.NewRNode(n))
					f(Span{Item: it, Node: yaml.NewRNode(n), Field: at.field, Err: err})
					continue
				}
				if re == nil {
					f(Span{Item: it, Node: yaml.NewRNode(n), Field: at.field, End: len(n.Value)})
					continue
				}
				for _, m := range re.FindAllStringSubmatchIndex(n.Value, -1) {
					if m[2] >= 0 && m[3] > m[2] {
						f(Span{Item: it, Node: yaml.NewRNode(n), Field: at.field, Start: m[2], End: m[3]})
					}
				}
			}
		}
	}
}

type located struct {
	node  *yaml.Node
	field string
}

// lookup returns the nodes at keys below n (at field path field),
// entering lists element by element, "*" matching every key.
func lookup(n *yaml.Node, field string, keys []string) []located {
	if n.Kind == yaml.SequenceNode {
		var out []located
		for i, e := range n.Content {
			out = append(out, lookup(e, fmt.Sprintf("%s[%d]", field, i), keys)...)
		}
		return out
	}
	if len(keys) == 0 {
		return []located{{n, field}}
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var out []located
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || keys[0] != "*" && k.Value != keys[0] {
			continue
		}
		f := k.Value
		if field != "" {
			f = field + "." + k.Value
		}
		out = append(out, lookup(n.Content[i+1], f, keys[1:])...)
	}
	return out
}

// lastApplied is the annotation kubectl keeps a whole object's JSON in;
// its images are the object's own, not more places.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// EachLeftover calls f with every string, or part of one, in the items
// that are not local-config that reads as an image reference without a
// digest, except at the fields skip reports (the places pinned already).
// A string is cut into tokens at every character an image reference
// cannot hold (spaces, "=", quotes, commas…; so `--image=repo:tag` and a
// YAML or JSON document held in a ConfigMap value give theirs), and a
// token counts when it has an explicit tag (a ":" after its last "/"),
// go-containerregistry parses it (name.NewTag) and it
// names a repository path ("org/app:v1", "ghcr.io/org/app:v1"); a
// token without a "/" ("nginx:1.27") counts only when it is the whole
// value of a key whose name holds "image" (any case), since "12:30" or
// "key:value" parse as well. URLs ("https://…") are left out. Tokens with
// a digest are pinned already and left out, and so is kubectl's
// last-applied-configuration annotation.
func EachLeftover(items []*yaml.RNode, skip func(item *yaml.RNode, field string) bool, f func(item *yaml.RNode, field, ref string)) {
	for _, it := range items {
		if Annotation(it, filters.LocalConfigAnnotation) == "true" {
			continue
		}
		var walk func(n *yaml.Node, key, field string)
		walk = func(n *yaml.Node, key, field string) {
			switch n.Kind {
			case yaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					k := n.Content[i]
					if k.Kind != yaml.ScalarNode || k.Value == lastApplied && field == "metadata.annotations" {
						continue
					}
					f := k.Value
					if field != "" {
						f = field + "." + k.Value
					}
					walk(n.Content[i+1], k.Value, f)
				}
			case yaml.SequenceNode:
				for i, e := range n.Content {
					walk(e, key, fmt.Sprintf("%s[%d]", field, i))
				}
			case yaml.ScalarNode:
				if n.ShortTag() != yaml.NodeTagString || skip != nil && skip(it, field) {
					return
				}
				for _, ref := range LooksLikeImages(n.Value, strings.Contains(strings.ToLower(key), "image")) {
					f(it, field, ref)
				}
			}
		}
		walk(it.YNode(), "", "")
	}
}

// LooksLikeImages returns the tokens of s that EachLeftover counts as
// image references without a digest, in order; imageKey says s is the
// whole value of a key naming an image, which lets a token without a "/"
// count.
func LooksLikeImages(s string, imageKey bool) []string {
	tokens := strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:@+", r))
	})
	var out []string
	for _, t := range tokens {
		t = strings.TrimRight(t, ".:/-")
		// An explicit tag: a ":" after the last "/" (a ":" before it is
		// a registry's port).
		if len(t) > 512 || strings.Contains(t, "@") || strings.Contains(t, "://") || !strings.Contains(t[strings.LastIndex(t, "/")+1:], ":") {
			continue
		}
		if !strings.Contains(t, "/") && !(imageKey && t == strings.TrimSpace(s)) {
			continue
		}
		if _, err := name.NewTag(t); err != nil {
			continue
		}
		out = append(out, t)
	}
	return out
}
