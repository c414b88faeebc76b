package openpai

import (
	"strings"

	"github.com/stowage/stowage/internal/spelling"
)

// nearest returns the candidate closest to name by edit distance
// (spelling.Distance)
// (compared in lower case), or "" when even the closest one is too far:
// more than a third of name's length, with at most 3 and at least 1 edit
// allowed. Ties go to the candidate that sorts first.
func nearest(name string, candidates []string) string {
	limit := min(max(len(name)/3, 1), 3)
	best, bestD := "", limit+1
	lower := strings.ToLower(name)
	for _, c := range candidates {
		d := spelling.Distance(lower, c)
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}
