// Package linediff makes the message a test prints when two texts that
// should be equal are not: the first line where they part.
package linediff

import (
	"fmt"
	"strings"
)

// First says where got first departs from want, line by line: "line N:"
// then both lines, "(end of text)" standing for a line past the end of
// one of them, or "(the same text)" when they are equal.
func First(want, got []byte) string {
	w := strings.Split(string(want), "\n")
	g := strings.Split(string(got), "\n")
	line := func(ls []string, i int) string {
		if i < len(ls) {
			return ls[i]
		}
		return "(end of text)"
	}
	for i := 0; i < len(w) || i < len(g); i++ {
		if wl, gl := line(w, i), line(g, i); i >= len(w) || i >= len(g) || wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
	return "(the same text)"
}
