package linediff

import "testing"

// TestFirst: the first differing line is named with both sides; a text
// that ends early (by a final newline even) shows "(end of text)"; equal
// texts say so.
func TestFirst(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ want, got, out string }{
		{"a\nb\nc", "a\nB\nc", "line 2:\n  want: b\n  got:  B"},
		{"a\nb", "a", "line 2:\n  want: b\n  got:  (end of text)"},
		{"a\n", "a\n\n", "line 3:\n  want: (end of text)\n  got:  "},
		{"a\nb", "a\nb", "(the same text)"},
	} {
		if out := First([]byte(c.want), []byte(c.got)); out != c.out {
			t.Errorf("First(%q, %q) = %q, want %q", c.want, c.got, out, c.out)
		}
	}
}
