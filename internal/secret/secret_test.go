package secret

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// pw has what each encoding treats differently: '/', '+', '&', '<', '>',
// '"', a space and a non-ASCII letter.
const pw = `c4n4ry/P@ss+w"ör d&<x>`

// TestScrubSpellings: each way an upstream answer could echo the password
// is scrubbed inside a message, whatever surrounds it; base64 inside a
// longer encoded value at each byte alignment loses every character that
// depends on the password; case variants are scrubbed too.
func TestScrubSpellings(t *testing.T) {
	t.Parallel()
	var s Set
	s.AddBasic("robot$ci", pw)
	jsonAll, _ := json.Marshal(map[string]string{"password": pw})
	type spelling struct {
		name string
		text string
		// secretPart is [from, to) of text that depends on the password
		// alone (all of text when to is 0).
		from, to int
	}
	var cases []spelling
	add := func(name, text string) { cases = append(cases, spelling{name: name, text: text}) }
	add("plain", pw)
	add("upper case", upperASCII(pw))
	add("lower case", lowerASCII(pw))
	add("user:password", "robot$ci:"+pw)
	add("query escaped", url.QueryEscape(pw))
	add("path escaped", url.PathEscape(pw))
	add("query escaped, lower-case hex", strings.ToLower(url.QueryEscape(pw)))
	add("JSON string", strings.Trim(string(mustJSON(pw)), `"`))
	add("hex", hex.EncodeToString([]byte(pw)))
	add("HEX", strings.ToUpper(hex.EncodeToString([]byte(pw))))
	for _, enc := range []struct {
		name string
		e    *base64.Encoding
	}{{"base64", base64.StdEncoding}, {"base64 raw", base64.RawStdEncoding}, {"base64url", base64.URLEncoding}, {"base64url raw", base64.RawURLEncoding}} {
		add(enc.name, enc.e.EncodeToString([]byte(pw)))
		add(enc.name+" of user:password", enc.e.EncodeToString([]byte("robot$ci:"+pw)))
		// {"password":"…"}: the escaped password after 13 bytes.
		cases = append(cases, spelling{name: enc.name + " of a JSON document", text: enc.e.EncodeToString(jsonAll),
			from: (8*13 + 5) / 6, to: 8 * (len(jsonAll) - 2) / 6})
		for a := range 3 {
			prefix := strings.Repeat("x", 10+a)
			text := enc.e.EncodeToString([]byte(prefix + pw + "-tail"))
			cases = append(cases, spelling{name: enc.name + " inside, alignment " + string(rune('0'+a)), text: text,
				from: (8*len(prefix) + 5) / 6, to: 8 * (len(prefix) + len(pw)) / 6})
		}
	}
	// Encoders with escape sets of their own, none of them listed as a
	// spelling: Python's quote (keeps '/', a space as %20), a URL's
	// userinfo (keeps '+' and '&'), JavaScript's encodeURIComponent (keeps
	// '!'), a query escaped twice, JSON \u00XX of every other byte.
	add("python quote", strings.NewReplacer("%2F", "/", "+", "%20").Replace(url.QueryEscape(pw)))
	add("userinfo", url.UserPassword("robot$ci", pw).String())
	add("query escaped twice", url.QueryEscape(url.QueryEscape(pw)))
	add("JSON of query escaped", string(mustJSON(url.QueryEscape(pw))))
	add("mixed escapes", mixed(pw))
	add("base64 then query escaped", url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("robot$ci:"+pw))))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := "registry said: " + tc.text + " (end)"
			got := s.Scrub(msg)
			if !strings.HasPrefix(got, "registry said: ") || !strings.HasSuffix(got, " (end)") || !strings.Contains(got, Mask) {
				t.Fatalf("Scrub(%q) = %q, want the words kept and the secret masked", msg, got)
			}
			part := tc.text
			if tc.to != 0 {
				part = tc.text[tc.from:tc.to]
			}
			// No 4-byte window of what depends on the password survives.
			for i := 0; i+4 <= len(part); i++ {
				if w := part[i : i+4]; strings.Contains(strings.ToLower(got), strings.ToLower(w)) && !strings.Contains(strings.ToLower(msg[:15]+" (end)"), strings.ToLower(w)) {
					t.Errorf("Scrub(%q) = %q keeps %q", msg, got, w)
					break
				}
			}
		})
	}
}

// TestScrubKeepsOrdinaryText: short values are not secrets, and a message
// without a secret is returned as is.
func TestScrubKeepsOrdinaryText(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add("abc", "")
	if !s.Empty() {
		t.Errorf("values shorter than %d bytes were recorded", MinLen)
	}
	s.Add("hunter22")
	for _, m := range []string{"", "GET /v2/: 401 Unauthorized", "hunter2 is not the password"} {
		if got := s.Scrub(m); got != m {
			t.Errorf("Scrub(%q) = %q", m, got)
		}
	}
	if got := s.Scrub("x HUNTER22 y hunter22"); got != "x *** y ***" {
		t.Errorf("got %q", got)
	}
}

// mixed is v with every other byte escaped, alternately as %XX and
// \u00XX, the letters outside ASCII as \uXXXX.
func mixed(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r >= 0x80:
			fmt.Fprintf(&b, `\u%04X`, r)
		case i%4 == 1:
			fmt.Fprintf(&b, "%%%02x", r)
		case i%4 == 3:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// BenchmarkScrubLongMessage: Scrub over a 64 KiB message holding no
// secret, as a status report's fields are scrubbed.
func BenchmarkScrubLongMessage(b *testing.B) {
	var s Set
	s.AddBasic("robot", pw)
	m := strings.Repeat("node worker-17 pulled registry.example/team/app%2Fx+y \\n ", 1200)
	b.SetBytes(int64(len(m)))
	for b.Loop() {
		s.Scrub(m)
	}
}
