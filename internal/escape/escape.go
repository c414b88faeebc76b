// Package escape is stowage's one way to show untrusted text: names and
// messages that come from a registry, an API server, a kubelet, a config
// or a repository, on a terminal (tables, errors, plans, stderr) or in a
// markdown pull request body. Nothing it returns can move the cursor,
// change colours, set a window title, reorder text (bidirectional
// controls), hide text (zero-width characters) or, in markdown, make a
// heading, a link, an image, HTML or an @mention.
package escape

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s for one line of a terminal: every control character
// (C0, including newline, carriage return and tab; DEL; C1), every
// bidirectional, zero-width or line-separating format character, and every
// byte that is not UTF-8 is written as a Go escape (\n, \x1b, \u202e,
// \xff); everything else, backslashes included, is kept. Text that needs
// no escape is returned as is.
func Line(s string) string { return escape(s, false) }

// Text is Line for a message of several lines: newlines and tabs are
// kept, everything else Line escapes is escaped.
func Text(s string) string { return escape(s, true) }

func escape(s string, multiline bool) string {
	if clean(s, multiline) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s needs no escape.
func clean(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		if unsafe(r) && !(multiline && (r == '\n' || r == '\t')) {
			return false
		}
		i += n
	}
	return true
}

// unsafe reports whether r may not reach a terminal as is: a control
// character, or a format character (Unicode category Cf: the
// bidirectional controls U+202A–U+202E and U+2066–U+2069, U+200E/F,
// U+061C, the zero-width U+200B–U+200D and U+FEFF, …), or the line and
// paragraph separators U+2028 and U+2029.
func unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Markdown returns s as inline code for a markdown document (a GitHub or
// GitLab pull request body, table cells included), after Line: in a code
// span no heading, emphasis, link, image, HTML or @mention is made. The
// fence is one backtick more than the longest run of backticks in s, and
// '|' is written "\|", which GitHub's tables require even inside code.
func Markdown(s string) string {
	s = Line(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(s, "|", `\|`) + pad + fence
}
