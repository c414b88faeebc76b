package strictyaml

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// Expanded counts the nodes the documents of data stand for with every
// alias expanded, as a reader that expands them (kustomize's, which holds
// every resource expanded) would build, stopping past max (ok false). It
// is for YAML that is not stowage's to decode, only to bound: data
// without both an anchor and an alias character counts 0 unparsed, and
// data that does not parse counts what its documents before the fault
// did (the reader reports the fault). A node reached twice without an
// alias between is counted once; a cycle of aliases counts once.
func Expanded(data []byte, max int) (int, bool) {
	if !bytes.Contains(data, []byte("&")) || !bytes.Contains(data, []byte("*")) {
		return 0, true
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	total := 0
	memo := map[*yaml.Node]int{}
	var count func(n *yaml.Node, depth int) int
	count = func(n *yaml.Node, depth int) int {
		if n == nil || depth > DefaultDepth*100 {
			return 1
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = 1 // a cycle counts once
		sum := 1
		if n.Kind == yaml.AliasNode {
			sum += count(n.Alias, depth+1)
		}
		for _, ch := range n.Content {
			if sum += count(ch, depth+1); sum > max {
				break
			}
		}
		memo[n] = sum
		return sum
	}
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return total, true
		}
		if total += count(&doc, 0); total > max {
			return total, false
		}
	}
}
