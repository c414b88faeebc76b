package escape

import "testing"

// TestLine: what could drive a terminal is written as an escape; the rest,
// non-ASCII letters included, is kept.
func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, line, text string }{
		{"node-1", "node-1", "node-1"},
		{"grüße/日本", "grüße/日本", "grüße/日本"},
		{"a\x1b[31mred\x1b[0m", `a\x1b[31mred\x1b[0m`, `a\x1b[31mred\x1b[0m`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`, `title\x1b]0;pwned\x07`},
		{"two\nlines\r\tx", `two\nlines\r\tx`, "two\nlines\\r\tx"},
		{"rtl\u202egnp.exe", `rtl\u202egnp.exe`, `rtl\u202egnp.exe`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`, `zero\u200bwidth\ufeff`},
		{"c1\u009bA del\x7f", `c1\u009bA del\x7f`, `c1\u009bA del\x7f`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`, `bad\xff\xfeutf8`},
		{"sep\u2028x", `sep\u2028x`, `sep\u2028x`},
		{`back\slash`, `back\slash`, `back\slash`},
	} {
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

// TestMarkdown: free text becomes one code span, so that no heading, link,
// image, HTML or mention is made and a table cell stays one cell.
func TestMarkdown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"linux/amd64", "`linux/amd64`"},
		{"# heading", "`# heading`"},
		{"[click](https://evil.example) ![x](y) <img src=x> @admin", "`[click](https://evil.example) ![x](y) <img src=x> @admin`"},
		{"a|b", "`a\\|b`"},
		{"tick ` and ``", "``` tick ` and `` ```"},
		{"`lead", "`` `lead ``"},
		{"x\n# injected", "`x\\n# injected`"},
		{"", "`  `"},
	} {
		if got := Markdown(tc.in); got != tc.want {
			t.Errorf("Markdown(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
