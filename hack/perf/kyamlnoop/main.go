// Command kyamlnoop is the floor hack/perf measures `stowage fn` against: a
// KRM function built on kyaml's fn/framework, as stowage fn is, that reads
// the ResourceList from stdin and writes it to stdout unchanged (kyaml's
// parse and write, no work of its own).
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

func main() {
	noop := framework.ResourceListProcessorFunc(func(*framework.ResourceList) error { return nil })
	if err := framework.Execute(noop, nil); err != nil {
		fmt.Fprintln(os.Stderr, "kyamlnoop:", err)
		os.Exit(1)
	}
}
