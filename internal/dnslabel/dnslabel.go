// Package dnslabel makes DNS-1123 label fragments out of arbitrary text:
// the names stowage derives for containers, DaemonSets and pull Secrets.
package dnslabel

import (
	"strings"
	"unicode"
)

// Sanitize turns s into a DNS-1123 label fragment of at most max
// characters: camelCase is split with '-' ("myExtraImage" ->
// "my-extra-image", "IWantHTTPServer" -> "i-want-http-server"), anything
// outside [a-z0-9] becomes '-', runs of '-' collapse, and the ends are
// letters or digits. An empty result becomes "image" (cut to max).
func Sanitize(s string, max int) string {
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
