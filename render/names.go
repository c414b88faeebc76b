package render

import (
	"strconv"
	"strings"
	"unicode"
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

// sanitize turns s into a DNS-1123 label fragment of at most max
// characters: camelCase is split with '-' ("myExtraImage" ->
// "my-extra-image", "IWantHTTPServer" -> "i-want-http-server"), anything
// outside [a-z0-9] becomes '-', runs of '-' collapse, and the ends are
// letters or digits. An empty result becomes "image".
func sanitize(s string, max int) string {
	var b strings.Builder
	rs := []rune(s)
	isUpper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	isLowerOrDigit := func(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') }
	for i, r := range rs {
		switch {
		case isUpper(r):
			// A word starts at an upper-case letter after a lower-case
			// letter or digit, or at the last upper-case letter of a run
			// that a lower-case letter follows.
			if i > 0 && (isLowerOrDigit(rs[i-1]) || isUpper(rs[i-1]) && i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z') {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		case isLowerOrDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	out = strings.Trim(out, "-")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	if out == "" {
		out = "image"
		if len(out) > max {
			out = out[:max]
		}
	}
	return out
}
