// Package secret is stowage's one scrubber: a Set of credentials (registry
// passwords, tokens, Authorization header values, a kubeconfig's bearer
// token) and Scrub, which replaces each of them in a message, in every
// spelling an upstream answer could echo it, before the message is shown.
//
// The spellings: the value itself; its standard and URL base64, padded or
// not (and query-escaped), also when it sits inside a longer encoded value
// at any of the three byte alignments (a Basic header's base64 of
// "user:password"), as written or JSON-escaped (a JSON document encoded
// whole); URL-encoded (query, path and every byte as
// %XX); JSON-escaped (with and without HTML escaping, and every byte as
// \u00XX); hex. Every spelling matches in any ASCII case (a registry
// upper-casing an echo, %2f against %2F, hex in capitals); letters
// outside ASCII are matched as written.
//
// Besides those fixed spellings, Scrub matches each secret escaped byte by
// byte in any mixture of the ways URL and JSON encoders escape: every byte
// literal (any ASCII case), as %XX or %25XX (any case of hex), a space as
// + (or %2B, a query escaped twice), a JSON escape (\" \\ \/ \b \f \n \r \t) or \u00XX, a letter outside
// ASCII as \uXXXX. So an encoder that escapes a set of characters of its
// own (Python's quote keeping '/', a URL's userinfo keeping '+' and '&',
// JavaScript's encodeURIComponent keeping '!'…) is covered without being
// listed.
package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mask replaces every spelling of a secret.
const Mask = "***"

// MinLen is the shortest value Add takes as a secret: shorter ones would
// scrub ordinary words out of messages.
const MinLen = 4

// minCore is the shortest base64 fragment taken from an unaligned
// encoding: shorter fragments of a short secret are left to the aligned
// spellings.
const minCore = 6

// Set is a set of secrets. The zero value is empty and ready; a Set is
// safe for concurrent use.
type Set struct {
	mu sync.Mutex
	// spellings are the lower-cased (ASCII) spellings, longest first, so
	// that a spelling holding another is replaced whole.
	spellings []string
	// values are the secrets as given, for the escape-tolerant match.
	values []string
}

// Add records each value of at least MinLen bytes, with every spelling.
func (s *Set) Add(values ...string) {
	var add, raw []string
	for _, v := range values {
		if len(v) >= MinLen {
			add = append(add, Spellings(v)...)
			raw = append(raw, v)
		}
	}
	if len(add) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range raw {
		if !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
		}
	}
	for _, sp := range add {
		sp = lowerASCII(sp)
		if !slices.Contains(s.spellings, sp) {
			s.spellings = append(s.spellings, sp)
		}
	}
	slices.SortStableFunc(s.spellings, func(a, b string) int { return len(b) - len(a) })
}

// AddBasic records a password alone and as "user:password", the value a
// Basic Authorization header encodes.
func (s *Set) AddBasic(user, password string) {
	if password == "" {
		return
	}
	s.Add(password, user+":"+password)
}

// Empty reports whether no secret is recorded.
func (s *Set) Empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.spellings) == 0
}

// Scrub returns m with every recorded spelling, in any ASCII case,
// replaced by Mask.
func (s *Set) Scrub(m string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.spellings) == 0 || m == "" {
		return m
	}
	lower := lowerASCII(m)
	// Mark the bytes to hide, then write m with each marked run masked.
	hide := make([]bool, len(m))
	any := false
	for _, sp := range s.spellings {
		for i := 0; ; {
			j := strings.Index(lower[i:], sp)
			if j < 0 {
				break
			}
			for k := i + j; k < i+j+len(sp); k++ {
				hide[k] = true
			}
			any = true
			i += j + 1
		}
	}
	for _, v := range s.values {
		for i := 0; i < len(m); i++ {
			if end := matchEscaped(m, i, v); end > i {
				for k := i; k < end; k++ {
					hide[k] = true
				}
				any = true
			}
		}
	}
	if !any {
		return m
	}
	var b strings.Builder
	for i := 0; i < len(m); {
		if !hide[i] {
			b.WriteByte(m[i])
			i++
			continue
		}
		b.WriteString(Mask)
		for i < len(m) && hide[i] {
			i++
		}
	}
	return b.String()
}

// Spellings are the ways v can appear in an upstream answer (see the
// package comment), v first.
func Spellings(v string) []string {
	out := []string{v}
	add := func(sp ...string) {
		for _, x := range sp {
			if x != "" && !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	// The value as it is, and as inside a JSON document, may be base64
	// encoded, alone or inside a longer value.
	for _, text := range []string{v, jsonEscaped(v, true), jsonEscaped(v, false)} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			full := enc.EncodeToString([]byte(text))
			add(full, url.QueryEscape(full))
			raw := enc.WithPadding(base64.NoPadding)
			for align := range 3 {
				if c := core(raw, text, align); align == 0 || len(c) >= minCore {
					add(c, url.QueryEscape(c))
				}
			}
		}
	}
	add(url.QueryEscape(v), url.PathEscape(v), percentAll(v))
	add(jsonEscaped(v, true), jsonEscaped(v, false), unicodeAll(v))
	add(hex.EncodeToString([]byte(v)))
	return out
}

// core is the part of the unpadded encoding of v, placed after align
// bytes of anything, that depends on v's bytes alone: the characters whose
// 6 bits all come from v.
func core(enc *base64.Encoding, v string, align int) string {
	full := enc.EncodeToString(append(make([]byte, align), v...))
	from := (8*align + 5) / 6        // the first character after the prefix's bits
	to := (8 * (align + len(v))) / 6 // past the last character made of v's bits only
	if from >= to || to > len(full) {
		return ""
	}
	return full[from:to]
}

// percentAll is v with every byte percent-encoded.
func percentAll(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&b, "%%%02X", v[i])
	}
	return b.String()
}

// unicodeAll is v with every byte written as a JSON \u00XX escape (v's
// bytes taken as Latin-1, which is how a JSON encoder escaping everything
// writes ASCII).
func unicodeAll(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&b, `\u%04x`, v[i])
	}
	return b.String()
}

// jsonEscaped is v as inside a JSON string, with or without Go's HTML
// escaping of <, > and &.
func jsonEscaped(v string, html bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	if e.Encode(v) != nil {
		return ""
	}
	return string(bytes.TrimSuffix(bytes.TrimSuffix(bytes.TrimPrefix(b.Bytes(), []byte(`"`)), []byte("\n")), []byte(`"`)))
}

// lowerASCII lower-cases ASCII letters only, so that byte offsets stay
// those of s.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// matchEscaped returns the end of the longest match of v at m[i:] where
// each byte of v may be written literally (ASCII case ignored) or escaped
// as a URL or JSON encoder escapes it (see the package comment), or i when
// v does not match there.
func matchEscaped(m string, i int, v string) int {
	// Most positions cannot start a match: only v's first byte or the
	// start of an escape can.
	if c := m[i]; lowerByte(c) != lowerByte(v[0]) && c != '%' && c != '\\' && c != '+' {
		return i
	}
	type state struct{ k, p int } // k bytes of v matched, up to m[p]
	best := i
	// The states reached are few (an escape starts with a byte that is
	// rarely the secret's own), so a list beats a map.
	var seen [8]state
	seenList := seen[:0]
	var queue [8]state
	work := append(queue[:0], state{0, i})
	for len(work) > 0 {
		st := work[len(work)-1]
		work = work[:len(work)-1]
		if slices.Contains(seenList, st) {
			continue
		}
		seenList = append(seenList, st)
		if st.k == len(v) {
			best = max(best, st.p)
			continue
		}
		next := func(k, p int) { work = append(work, state{k, p}) }
		b, p, rest := v[st.k], st.p, m[st.p:]
		if len(rest) == 0 {
			continue
		}
		if lowerByte(rest[0]) == lowerByte(b) || (b == ' ' && rest[0] == '+') {
			next(st.k+1, p+1)
		}
		if h, ok := hexByte(rest, "%"); ok && (h == b || (b == ' ' && h == '+')) {
			next(st.k+1, p+3)
		}
		if h, ok := hexByte(rest, "%25"); ok && h == b {
			next(st.k+1, p+5)
		}
		if len(rest) >= 2 && rest[0] == '\\' {
			if e, ok := jsonShort[rest[1]]; ok && e == b {
				next(st.k+1, p+2)
			}
		}
		if r, ok := jsonRune(rest); ok {
			if r < 0x80 && byte(r) == b {
				next(st.k+1, p+6)
			} else if c, n := utf8.DecodeRuneInString(v[st.k:]); c == r && c >= 0x80 {
				next(st.k+n, p+6)
			}
		}
	}
	return best
}

// jsonShort are JSON's two-character escapes: the byte each stands for.
var jsonShort = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hexByte reads prefix and two hex digits (any case) at the start of s.
func hexByte(s, prefix string) (byte, bool) {
	if len(s) < len(prefix)+2 || !strings.EqualFold(s[:len(prefix)], prefix) {
		return 0, false
	}
	b, err := hex.DecodeString(s[len(prefix) : len(prefix)+2])
	if err != nil {
		return 0, false
	}
	return b[0], true
}

// jsonRune reads a \uXXXX escape (any case of hex) at the start of s.
func jsonRune(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	b, err := hex.DecodeString(s[2:6])
	if err != nil {
		return 0, false
	}
	return rune(b[0])<<8 | rune(b[1]), true
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
