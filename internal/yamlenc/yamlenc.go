// Package yamlenc writes YAML byte for byte as go.yaml.in/yaml/v2's Marshal
// does, for the values stowage encodes (rendered objects as unstructured
// maps, the lock file), several times faster and with far fewer
// allocations: yaml.v2 runs every scalar through libyaml's event emitter,
// which dominated the cost of `stowage render`.
//
// The fast path handles maps with string keys (map[string]any, sorted the
// way yaml.v2 sorts them, and yaml.v2's MapSlice, in its own order), []any,
// strings, booleans, integers, floats and nil. Whatever it is not sure to
// write exactly as yaml.v2 would — a string with white space on one line
// (yaml.v2 may fold it at column 80), a key longer than 128 bytes, a
// multi-line string libyaml would not write as a literal block, an
// unexpected Go type — makes Marshal hand the whole value to yaml.v2, so
// the bytes are always yaml.v2's. The tests compare both on every rendered
// object, on edge cases and under fuzzing.
package yamlenc

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// errFallback means the fast path met something it does not write; the
// caller encodes with yaml.v2 instead.
var errFallback = errors.New("yamlenc: not handled by the fast path")

// Marshal returns yaml.v2's Marshal(v), through the fast path when v is
// made only of what it handles (see the package documentation), else
// through yaml.v2 itself. Errors are yaml.v2's.
func Marshal(v any) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, 4096)}
	if err := e.top(v); err == nil {
		return e.buf, nil
	}
	return yamlv2.Marshal(v)
}

// encoder appends YAML to buf.
type encoder struct {
	buf []byte
}

// top writes a document: a block mapping or sequence at column 0, or a
// scalar.
func (e *encoder) top(v any) error {
	switch n := v.(type) {
	case map[string]any:
		if len(n) == 0 {
			e.buf = append(e.buf, "{}\n"...)
			return nil
		}
		return e.mapping(n, 0, false)
	case yamlv2.MapSlice:
		if len(n) == 0 {
			e.buf = append(e.buf, "{}\n"...)
			return nil
		}
		return e.mapSlice(n, 0, false)
	case []any:
		if len(n) == 0 {
			e.buf = append(e.buf, "[]\n"...)
			return nil
		}
		return e.sequence(n, 0, false)
	}
	s, ok, err := e.scalarText(v, false)
	if err != nil || !ok {
		return errFallback
	}
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, '\n')
	return nil
}

// indent writes n spaces.
func (e *encoder) indent(n int) {
	for range n {
		e.buf = append(e.buf, ' ')
	}
}

// mapping writes a non-empty block mapping whose keys are at column ind;
// inline means the first key follows a "- " already written.
func (e *encoder) mapping(m map[string]any, ind int, inline bool) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for i, k := range keys {
		if err := e.entry(k, m[k], ind, inline && i == 0); err != nil {
			return err
		}
	}
	return nil
}

// mapSlice is mapping for an ordered yaml.v2 MapSlice.
func (e *encoder) mapSlice(m yamlv2.MapSlice, ind int, inline bool) error {
	for i, it := range m {
		k, ok := it.Key.(string)
		if !ok {
			return errFallback
		}
		if err := e.entry(k, it.Value, ind, inline && i == 0); err != nil {
			return err
		}
	}
	return nil
}

// entry writes one "key: value" of a block mapping at column ind.
func (e *encoder) entry(k string, v any, ind int, inline bool) error {
	if len(k) > 128 {
		return errFallback // not a simple key: yaml.v2 writes "? key"
	}
	ks, ok, err := e.stringText(k, true)
	if err != nil || !ok {
		return errFallback
	}
	if !inline {
		e.indent(ind)
	}
	e.buf = append(e.buf, ks...)
	e.buf = append(e.buf, ':')
	switch n := v.(type) {
	case map[string]any:
		if len(n) == 0 {
			e.buf = append(e.buf, " {}\n"...)
			return nil
		}
		e.buf = append(e.buf, '\n')
		return e.mapping(n, ind+2, false)
	case yamlv2.MapSlice:
		if len(n) == 0 {
			e.buf = append(e.buf, " {}\n"...)
			return nil
		}
		e.buf = append(e.buf, '\n')
		return e.mapSlice(n, ind+2, false)
	case []any:
		if len(n) == 0 {
			e.buf = append(e.buf, " []\n"...)
			return nil
		}
		// A sequence in a mapping is not indented (libyaml's indentless
		// sequence).
		e.buf = append(e.buf, '\n')
		return e.sequence(n, ind, false)
	case string:
		if literal(n) {
			e.literal(n, ind+2)
			return nil
		}
	}
	s, ok, err := e.scalarText(v, false)
	if err != nil || !ok {
		return errFallback
	}
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, '\n')
	return nil
}

// sequence writes a non-empty block sequence whose dashes are at column
// ind; inline means the first dash follows a "- " already written.
func (e *encoder) sequence(s []any, ind int, inline bool) error {
	for i, v := range s {
		if !(inline && i == 0) {
			e.indent(ind)
		}
		e.buf = append(e.buf, '-')
		switch n := v.(type) {
		case map[string]any:
			if len(n) == 0 {
				e.buf = append(e.buf, " {}\n"...)
				continue
			}
			e.buf = append(e.buf, ' ')
			if err := e.mapping(n, ind+2, true); err != nil {
				return err
			}
			continue
		case yamlv2.MapSlice:
			if len(n) == 0 {
				e.buf = append(e.buf, " {}\n"...)
				continue
			}
			e.buf = append(e.buf, ' ')
			if err := e.mapSlice(n, ind+2, true); err != nil {
				return err
			}
			continue
		case []any:
			if len(n) == 0 {
				e.buf = append(e.buf, " []\n"...)
				continue
			}
			e.buf = append(e.buf, ' ')
			if err := e.sequence(n, ind+2, true); err != nil {
				return err
			}
			continue
		}
		t, ok, err := e.scalarText(v, false)
		if err != nil || !ok {
			return errFallback
		}
		e.buf = append(e.buf, ' ')
		e.buf = append(e.buf, t...)
		e.buf = append(e.buf, '\n')
	}
	return nil
}

// scalarText is the text of a scalar on one line, as yaml.v2 writes it;
// ok is false for what the fast path does not handle.
func (e *encoder) scalarText(v any, key bool) (string, bool, error) {
	switch n := v.(type) {
	case nil:
		return "null", true, nil
	case string:
		return e.stringText(n, key)
	case bool:
		if n {
			return "true", true, nil
		}
		return "false", true, nil
	case int64:
		return strconv.FormatInt(n, 10), true, nil
	case int:
		return strconv.Itoa(n), true, nil
	case int32:
		return strconv.FormatInt(int64(n), 10), true, nil
	case float64:
		switch {
		case math.IsInf(n, 1):
			return ".inf", true, nil
		case math.IsInf(n, -1):
			return "-.inf", true, nil
		case math.IsNaN(n):
			return ".nan", true, nil
		}
		return strconv.FormatFloat(n, 'g', -1, 64), true, nil
	}
	return "", false, nil
}

// stringText is s as yaml.v2 writes it on one line: plain when that reads
// back as the same string, else quoted. Strings with white space, control
// or non-ASCII characters are not handled (ok false).
func (e *encoder) stringText(s string, key bool) (string, bool, error) {
	if plainSafe(s) {
		return s, true, nil
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return "", false, nil
		}
	}
	if s == "" {
		return `""`, true, nil
	}
	return quoted(s)
}

// plainSafe reports, cheaply and conservatively, that yaml.v2 writes s as
// a plain scalar: it starts with a letter, holds only letters, digits and
// ._/@:+=%~- and does not end with ':' (so libyaml allows it plain in
// block context), and it is not one of YAML 1.1's boolean or null words
// (so it reads back as a string; a string starting with a letter is never
// a number, a timestamp or a base-60 float for yaml.v2).
func plainSafe(s string) bool {
	if s == "" || s[len(s)-1] == ':' {
		return false
	}
	c := s[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '/', c == '@', c == ':', c == '+', c == '=', c == '%', c == '~', c == '-':
		default:
			return false
		}
	}
	if len(s) <= 5 {
		switch s {
		case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
			"true", "True", "TRUE", "false", "False", "FALSE",
			"on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL":
			return false
		}
	}
	return true
}

// quotedCache remembers yaml.v2's spelling of the printable, space-free
// ASCII strings plainSafe cannot decide ("2", "16Mi", "-x", "a:"), which
// are few and repeat; it is bounded so that a long-lived caller does not
// grow it without limit.
var quotedCache = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const quotedCacheMax = 1 << 14

// quoted asks yaml.v2 how it writes s, a non-empty printable ASCII string
// without spaces: such a scalar is written the same way on its own and as
// a mapping key or value (no line breaks, no folding).
func quoted(s string) (string, bool, error) {
	quotedCache.Lock()
	t, hit := quotedCache.m[s]
	quotedCache.Unlock()
	if hit {
		return t, true, nil
	}
	b, err := yamlv2.Marshal(s)
	if err != nil {
		return "", false, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	if bytes.IndexByte(b, '\n') >= 0 {
		return "", false, nil
	}
	t = string(b)
	quotedCache.Lock()
	if len(quotedCache.m) < quotedCacheMax {
		quotedCache.m[s] = t
	}
	quotedCache.Unlock()
	return t, true, nil
}

// literal reports whether yaml.v2 writes s, a mapping value, as a literal
// block ("|" or "|-") that the fast path reproduces: s has a line break,
// only printable ASCII and line feeds, no line that starts with a space or
// ends with one, does not start with a line break, and does not end with
// two of them (libyaml's "|+").
func literal(s string) bool {
	if len(s) < 2 || s[0] == '\n' || s[0] == ' ' || bytes.IndexByte([]byte(s), '\n') < 0 {
		return false
	}
	if s[len(s)-1] == ' ' || len(s) >= 2 && s[len(s)-1] == '\n' && s[len(s)-2] == '\n' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			if i > 0 && s[i-1] == ' ' {
				return false
			}
			if i+1 < len(s) && s[i+1] == ' ' {
				return false
			}
		case c < ' ' || c >= 0x7f:
			return false
		}
	}
	return true
}

// literal writes s (see the function literal) as a block scalar whose
// lines are at column ind, after a mapping key.
func (e *encoder) literal(s string, ind int) {
	e.buf = append(e.buf, " |"...)
	if s[len(s)-1] != '\n' {
		e.buf = append(e.buf, '-')
	}
	e.buf = append(e.buf, '\n')
	body := s
	if body[len(body)-1] == '\n' {
		body = body[:len(body)-1]
	}
	start := 0
	for i := 0; i <= len(body); i++ {
		if i < len(body) && body[i] != '\n' {
			continue
		}
		if line := body[start:i]; line != "" {
			e.indent(ind)
			e.buf = append(e.buf, line...)
		}
		e.buf = append(e.buf, '\n')
		start = i + 1
	}
}

// compareKeys orders mapping keys as yaml.v2 does (its keyList.Less on
// strings): rune by rune, letters after other characters, and runs of
// digits compared as numbers, so "a2" < "a10".
func compareKeys(a, b string) int {
	if a == b {
		return 0
	}
	if keyLess(a, b) {
		return -1
	}
	if keyLess(b, a) {
		return 1
	}
	return 0
}

// keyLess is yaml.v2's keyList.Less for two strings, fast when both are
// ASCII.
func keyLess(a, b string) bool {
	if !isASCII(a) || !isASCII(b) {
		return runeKeyLess([]rune(a), []rune(b))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := isLetterASCII(a[i]), isLetterASCII(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && isDigitASCII(a[j]); j-- {
				if a[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(a) && isDigitASCII(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for bi = i; bi < len(b) && isDigitASCII(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

// runeKeyLess is yaml.v2's keyList.Less for two strings, verbatim.
func runeKeyLess(ar, br []rune) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLetterASCII(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigitASCII(c byte) bool  { return '0' <= c && c <= '9' }
