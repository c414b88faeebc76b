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
// "pull-" plus the item's name (environment, catalogue key or repository
// base) as a DNS-1123 label. A name that had to be shortened, or that two
// items share, gets "-" plus 8 hex digits of sha256 of the normalised
// reference, so distinct references never collide; the result depends only
// on the items, never on a digest.
func containerNames(items []*item) []string {
	base := make([]string, len(items))
	count := map[string]int{}
	for i, it := range items {
		base[i] = sanitize(it.name, maxLabel-len(containerPrefix))
		count[base[i]]++
	}
	names := make([]string, len(items))
	used := map[string]bool{}
	for i, it := range items {
		n := containerPrefix + base[i]
		if count[base[i]] > 1 || base[i] != sanitize(it.name, 1<<20) {
			b := sanitize(it.name, maxLabel-len(containerPrefix)-9)
			n = containerPrefix + b + "-" + it.ref.ShortHash(8)
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

// sanitize turns s into a DNS-1123 label fragment of at most max
// characters: camelCase is split with '-', anything outside [a-z0-9]
// becomes '-', runs of '-' collapse, and the ends are letters or digits.
// An empty result becomes "image".
func sanitize(s string, max int) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && r < unicode.MaxASCII:
			if prevLower {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('-')
			prevLower = false
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
