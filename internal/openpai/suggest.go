package openpai

import "strings"

// nearest returns the candidate closest to name by Levenshtein distance
// (compared in lower case), or "" when even the closest one is too far:
// more than a third of name's length, with at most 3 and at least 1 edit
// allowed. Ties go to the candidate that sorts first.
func nearest(name string, candidates []string) string {
	limit := min(max(len(name)/3, 1), 3)
	best, bestD := "", limit+1
	lower := strings.ToLower(name)
	for _, c := range candidates {
		d := levenshtein(lower, c)
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}

// levenshtein returns the edit distance between a and b, counting byte
// insertions, deletions and substitutions.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
