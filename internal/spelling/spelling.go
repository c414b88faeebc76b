// Package spelling measures how far a misspelt name is from a known one, for
// "did you mean" hints.
package spelling

// Distance is the Levenshtein edit distance between a and b: the number of
// byte insertions, deletions and substitutions that turn a into b.
func Distance(a, b string) int {
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

// Nearest is the name of names nearest to s by Distance, when it is
// within len(s)/2+1 edits (the first of equals, in the order given); ""
// when none is that near.
func Nearest(s string, names []string) string {
	best, bestD := "", len(s)/2+2
	for _, n := range names {
		if d := Distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
