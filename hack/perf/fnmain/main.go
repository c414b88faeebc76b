// Command fnmain is the KRM function in a binary of its own, as
// docs/krm-function.md ("The function in a binary of your own") shows it:
// the whole program is fn.Main, stowage fn's code path without the
// commands that link Helm, sigstore-go and client-go. hack/perf measures
// its share of a kustomize build beside `stowage fn`'s.
package main

import (
	"os"

	"github.com/stowage/stowage/fn"
)

func main() { os.Exit(fn.Main()) }
