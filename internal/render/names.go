package render

import (
	"strconv"
	"strings"

	"github.com/stowage/stowage/internal/dnslabel"
)

// maxLabel is the DNS-1123 label limit that container names obey
// (Kubernetes validates container names with IsDNS1123Label).
const maxLabel = 63

// containerPrefix starts every pulled image's init container name, so that
// it never equals "install-helper" or "pause".
const containerPrefix = "pull-"

// containerNames returns one init container name per item, in order:
// "pull-" plus the item's seed (see nameSeed) as a DNS-1123 label. A name
// that had to be shortened, or that two items share, gets "-" plus 8 hex
// digits of sha256 of the normalised reference, so distinct references
// never collide; the result depends only on the items, never on a digest.
func containerNames(items []*item) []string {
	base := make([]string, len(items))
	count := map[string]int{}
	for i, it := range items {
		base[i] = sanitize(nameSeed(it), maxLabel-len(containerPrefix))
		count[base[i]]++
	}
	names := make([]string, len(items))
	used := map[string]bool{}
	for i, it := range items {
		n := containerPrefix + base[i]
		if count[base[i]] > 1 || base[i] != sanitize(nameSeed(it), 1<<20) {
			b := sanitize(nameSeed(it), maxLabel-len(containerPrefix)-9)
			n = containerPrefix + b + "-" + it.use.Ref.ShortHash(8)
		}
		// The same reference twice in one pod (two platform pins): number
		// the later ones.
		for k := 2; used[n]; k++ {
			suffix := "-" + strconv.Itoa(k)
			n = strings.TrimSuffix(n[:min(len(n), maxLabel-len(suffix))], "-") + suffix
		}
		used[n] = true
		names[i] = n
	}
	return names
}

// nameSeed is what an item's container name is made from: its name (the
// environment, the catalogue key or the OpenPAI image's repository base),
// unless that name is written like an image reference (it holds '/', ':'
// or '@', as a catalogue keyed by reference does): then the repository's
// last path element, so that no registry host, tag or digest makes up the
// name.
func nameSeed(it *item) string {
	if strings.ContainsAny(it.name, "/:@") {
		return it.use.Ref.Base()
	}
	return it.name
}

// sanitize is dnslabel.Sanitize: s as a DNS-1123 label fragment of at
// most max characters.
func sanitize(s string, max int) string { return dnslabel.Sanitize(s, max) }
