package render

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// writeYAML appends to b the YAML that go.yaml.in/yaml/v2's Marshal writes
// for u (a map of strings, bools, int64s, nil, maps and slices, as
// unstructured gives), without its reflection and libyaml emitter, and
// reports whether it could: it writes only what it knows yaml.v2 writes
// byte for byte, and returns false, having written part of b, at anything
// else — a float, a key order or key that is not plain ASCII letters at
// the first difference, a string that yaml.v2 would quote in single
// quotes, escape, fold at its 80-column width or write as a block other
// than "|" or "|-" — for the caller to use yaml.v2 instead. The rules are
// yaml.v2's block style: two-space indentation, list items at their key's
// column, keys sorted, strings that would read as another type in double
// quotes (TestWriteYAMLIsYAMLv2 checks every rendered object).
func writeYAML(b *bytes.Buffer, u map[string]any) bool {
	if len(u) == 0 {
		b.WriteString("{}\n")
		return true
	}
	return writeMap(b, u, 0, false)
}

// writeMap writes the entries of the non-empty m at indent; inItem says
// the first entry follows a list item's "- " already written.
func writeMap(b *bytes.Buffer, m map[string]any, indent int, inItem bool) bool {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !plainKey(k) {
			return false
		}
		keys = append(keys, k)
	}
	ok := true
	slices.SortFunc(keys, func(x, y string) int {
		c, sure := keyOrder(x, y)
		ok = ok && sure
		return c
	})
	if !ok {
		return false
	}
	for i, k := range keys {
		if i > 0 || !inItem {
			pad(b, indent)
		}
		b.WriteString(k)
		b.WriteByte(':')
		switch v := m[k].(type) {
		case map[string]any:
			if len(v) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteByte('\n')
			if !writeMap(b, v, indent+2, false) {
				return false
			}
		case []any:
			if len(v) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteByte('\n')
			if !writeSeq(b, v, indent) {
				return false
			}
		default:
			b.WriteByte(' ')
			if !writeScalar(b, v, indent+2, indent+len(k)+2) {
				return false
			}
		}
	}
	return true
}

// writeSeq writes the items of the non-empty s with their "- " at indent.
func writeSeq(b *bytes.Buffer, s []any, indent int) bool {
	for _, it := range s {
		pad(b, indent)
		b.WriteString("- ")
		switch v := it.(type) {
		case map[string]any:
			if len(v) == 0 {
				b.WriteString("{}\n")
				continue
			}
			if !writeMap(b, v, indent+2, true) {
				return false
			}
		case []any:
			return false
		default:
			if !writeScalar(b, v, indent+2, indent+2) {
				return false
			}
		}
	}
	return true
}

// writeScalar writes v and its newline; col is the column it starts at,
// block the indentation of a literal block's lines.
func writeScalar(b *bytes.Buffer, v any, block, col int) bool {
	switch v := v.(type) {
	case nil:
		b.WriteString("null\n")
	case bool:
		b.WriteString(strconv.FormatBool(v))
		b.WriteByte('\n')
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte('\n')
	case string:
		return writeString(b, v, block, col)
	default:
		return false
	}
	return true
}

// writeString writes s as yaml.v2 does when s is one of the cases it
// knows: a plain scalar, a word or number that would read as another type
// in double quotes, a literal block.
func writeString(b *bytes.Buffer, s string, block, col int) bool {
	switch {
	case s == "":
		b.WriteString(`""` + "\n")
	case strings.Contains(s, "\n"):
		return writeLiteral(b, s, block)
	case plain(s):
		if strings.Contains(s, " ") && col+len(s) > 76 {
			return false // yaml.v2 may fold it at a space past column 80
		}
		if w := otherType(s); w != notOther {
			if w == unsure {
				return false
			}
			b.WriteByte('"')
			b.WriteString(s)
			b.WriteString("\"\n")
			return true
		}
		b.WriteString(s)
		b.WriteByte('\n')
	case s[0] >= '0' && s[0] <= '9' && alnumDots(s):
		// A quantity ("50m", "16Mi"), a version ("1.2.3") or a number:
		// yaml.v2 double-quotes what would read as a number.
		if number(s) {
			b.WriteByte('"')
			b.WriteString(s)
			b.WriteString("\"\n")
		} else {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	default:
		return false
	}
	return true
}

// writeLiteral writes s, which holds a newline, as a literal block ("|"
// when it ends in exactly one newline, "|-" without one) of printable
// ASCII lines without trailing spaces, at block; anything else is not
// written.
func writeLiteral(b *bytes.Buffer, s string, block int) bool {
	if s[0] == ' ' || s[0] == '\n' {
		return false
	}
	header := "|\n"
	body := s
	switch {
	case strings.HasSuffix(s, "\n\n"):
		return false
	case strings.HasSuffix(s, "\n"):
		body = s[:len(s)-1]
	default:
		header = "|-\n"
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\n':
			if body[i-1] == ' ' {
				return false
			}
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	if body[len(body)-1] == ' ' {
		return false
	}
	b.WriteString(header)
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" {
			pad(b, block)
			b.WriteString(line)
		}
		b.WriteByte('\n')
	}
	return true
}

func pad(b *bytes.Buffer, n int) {
	for range n {
		b.WriteByte(' ')
	}
}

// plain reports whether s is a string yaml.v2 writes unquoted when it
// resolves to a string: it starts with an ASCII letter or '/', and holds
// only letters, digits, "-._/=+~()@" and ':' or single spaces that no
// indicator can be read into (': ', ' #', a trailing ':' or space).
func plain(s string) bool {
	if c := s[0]; !isLetter(c) && c != '/' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c) || (c >= '0' && c <= '9'):
		case strings.IndexByte("-._/=+~()@", c) >= 0:
		case c == ':':
			if i == len(s)-1 || s[i+1] == ' ' {
				return false
			}
		case c == ' ':
			if i == len(s)-1 || s[i+1] == ' ' || s[i+1] == '#' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// plainKey reports whether k is written as itself as a mapping key.
func plainKey(k string) bool {
	return k != "" && len(k) <= 100 && plain(k) && !strings.Contains(k, " ") && otherType(k) == notOther
}

const (
	notOther = iota
	other    // yaml.v2 reads it as a bool or null: written double-quoted
	unsure   // a case-variant of those words that yaml.v2 may read either way
)

// otherType says whether the plain-looking s (starting with a letter or
// '/') would read in YAML 1.1 as yaml.v2 resolves it as a bool or null:
// y, yes, n, no, true, false, on, off, null in lower case, capitalised or
// upper case. Other spellings of those words are unsure.
func otherType(s string) int {
	if len(s) > 5 {
		return notOther
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
	default:
		return notOther
	}
	if s == strings.ToLower(s) || s == strings.ToUpper(s) || s == strings.ToUpper(s[:1])+strings.ToLower(s[1:]) {
		return other
	}
	return unsure
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// alnumDots reports whether s holds only ASCII letters, digits, dots and
// '%' (a percentage, "10%"):
// no sign, '_', '-' or ':', so that in YAML 1.1 as yaml.v2 resolves it, it
// can only read as an integer (decimal, 0x, 0o, 0b), a float or a string,
// never a timestamp or a base-60 number.
func alnumDots(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && (c < '0' || c > '9') && c != '.' && c != '%' {
			return false
		}
	}
	return true
}

// yamlFloat is YAML 1.1's float syntax as yaml.v2 resolves it, for the
// characters alnumDots allows: digits, an optional fraction, an optional
// exponent. It is compiled on first use, not at start-up.
var yamlFloat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][0-9]+)?$`)
})

// number reports whether s (alnumDots) reads as an integer or a float.
func number(s string) bool {
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(s, 0, 64); err == nil {
		return true
	}
	if rest, ok := strings.CutPrefix(s, "0b"); ok {
		if _, err := strconv.ParseInt(rest, 2, 64); err == nil {
			return true
		}
	}
	return yamlFloat().MatchString(s)
}

// keyOrder compares two keys as yaml.v2 sorts mapping keys when it can be
// sure of the answer: at the first byte where they differ both are ASCII
// letters (byte order), or one key is a prefix of the other (the shorter
// first). Where a digit or other character differs first, yaml.v2 orders
// numbers by value, and sure is false.
func keyOrder(x, y string) (c int, sure bool) {
	n := min(len(x), len(y))
	for i := range n {
		if x[i] == y[i] {
			continue
		}
		if isLetter(x[i]) && isLetter(y[i]) {
			if x[i] < y[i] {
				return -1, true
			}
			return 1, true
		}
		return strings.Compare(x, y), false
	}
	return len(x) - len(y), true
}
