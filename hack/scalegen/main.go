// Command scalegen writes a synthetic config directory with N images for
// benchmarks and large-input tests: N catalogue images across N/40 pullers
// (at least 1) in up to 20 namespaces, and its lock from the deterministic
// stand-in images.
//
//	go run ./hack/scalegen -n 2000 -o /tmp/scale-2000
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stowage/stowage/internal/testing/configgen"
)

func main() {
	n := flag.Int("n", 100, "number of images")
	per := flag.Int("per-puller", 40, "images per puller")
	out := flag.String("o", "", "output directory (created)")
	flag.Parse()
	if *out == "" || *n < 1 || *per < 1 {
		fmt.Fprintln(os.Stderr, "usage: scalegen -n N [-per-puller K] -o DIR")
		os.Exit(2)
	}
	if err := configgen.Generate(*n, *per, *out); err != nil {
		fmt.Fprintln(os.Stderr, "scalegen:", err)
		os.Exit(1)
	}
}
