package escape

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestLine: what could drive a terminal is written as an escape; the rest,
// non-ASCII letters included, is kept.
func TestLine(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestWriteJSON: a report's strings holding C0 and C1 controls, DEL,
// bidirectional, zero-width and tag characters (one beyond U+FFFF) and
// bytes that are not UTF-8 are written with no such character raw, and
// decode back to the same strings (bytes that are not UTF-8 as U+FFFD,
// encoding/json's rule).
func TestWriteJSON(t *testing.T) {
	t.Parallel()
	in := map[string]string{
		"csi":  "a\u009b31mred",
		"osc":  "t\x1b]0;pwned\x07",
		"bidi": "rtl\u202egnp.exe \u2066x\u2069",
		"zero": "z\u200bw\ufeff",
		"del":  "d\x7f",
		"tag":  "flag\U000E0041",
		"sep":  "s\u2028p",
		"html": "<a href=x>&</a>",
		"bad":  "b\xffc",
		"ok":   "grüße/日本",
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, r := range out {
		if r != '\n' && unsafe(r) {
			t.Errorf("raw %U in the JSON:\n%s", r, out)
		}
	}
	for _, want := range []string{`\u009b`, `\u202e`, `\u2066`, `\u200b`, `\ufeff`, `\u007f`, `\udb40\udc41`, `\u2028`, `\u001b`, `"<a href=x>&</a>"`, "grüße/日本"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %s in the JSON:\n%s", want, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	in["bad"] = "b\ufffdc"
	if !reflect.DeepEqual(back, in) {
		t.Errorf("decoded %q\nwant %q", back, in)
	}
	if !strings.HasSuffix(out, "}\n") || !strings.Contains(out, "\n  \"bad\"") {
		t.Errorf("want two-space indent and a final newline:\n%s", out)
	}
}

// TestLineWriter: a log message with a terminal escape and an embedded
// newline reaches the writer as one prefixed, escaped line.
func TestLineWriter(t *testing.T) {
	var b strings.Builder
	w := LineWriter(&b, "helm: ")
	msg := "coalesce.go: warning: skipped value for \x1b]0;owned\x07 x\nError: forged\n"
	if n, err := w.Write([]byte(msg)); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	want := `helm: coalesce.go: warning: skipped value for \x1b]0;owned\x07 x\nError: forged` + "\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
