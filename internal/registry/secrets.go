package registry

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// secretSet is every credential a Resolver has read or seen on the wire,
// in each spelling a registry could echo back: the password itself, the
// base64 of "user:password" (a Basic Authorization header's value), the
// value of every Authorization header sent (Basic or Bearer), and the
// token, access_token and refresh_token fields of token answers. scrub
// replaces each of them, and the standard and URL base64 of each, by "***".
type secretSet struct {
	mu   sync.Mutex
	list []string
}

// minSecret is the shortest value taken as a secret: shorter ones would
// scrub ordinary words out of messages.
const minSecret = 4

// add records s and its base64 spellings.
func (s *secretSet) add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if len(v) < minSecret {
			continue
		}
		for _, sp := range []string{
			v,
			base64.StdEncoding.EncodeToString([]byte(v)),
			base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)),
			base64.RawURLEncoding.EncodeToString([]byte(v)),
			url.QueryEscape(v),
			jsonQuoted(v),
		} {
			if !slices.Contains(s.list, sp) {
				s.list = append(s.list, sp)
			}
		}
	}
	// Longest first, so a spelling that contains another goes whole.
	slices.SortStableFunc(s.list, func(a, b string) int { return len(b) - len(a) })
}

// addBasic records a user name and password as the password alone and as
// "user:password" (whose base64 is a Basic Authorization value).
func (s *secretSet) addBasic(user, pw string) {
	if pw == "" {
		return
	}
	s.add(pw, user+":"+pw)
}

// addHeader records the credential of an Authorization header value:
// "Basic <b64>" (and the password inside it) or "Bearer <token>".
func (s *secretSet) addHeader(h string) {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok {
		s.add(h)
		return
	}
	cred = strings.TrimSpace(cred)
	s.add(cred)
	if strings.EqualFold(scheme, "basic") {
		if raw, err := base64.StdEncoding.DecodeString(cred); err == nil {
			user, pw, _ := strings.Cut(string(raw), ":")
			s.addBasic(user, pw)
		}
	}
}

// addTokenBody records the tokens of a token answer's JSON body.
func (s *secretSet) addTokenBody(body []byte) {
	var t struct {
		Token        string `json:"token"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if json.Unmarshal(body, &t) == nil {
		s.add(t.Token, t.AccessToken, t.RefreshToken)
	}
}

// scrub replaces every recorded spelling in m by "***".
func (s *secretSet) scrub(m string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.list {
		m = strings.ReplaceAll(m, v, "***")
	}
	return m
}

func jsonQuoted(v string) string {
	b, _ := json.Marshal(v)
	return string(bytes.Trim(b, `"`))
}

// maxTokenBody bounds the token answer read to record its tokens: 1 MiB,
// go-containerregistry's own bound for token bodies.
const maxTokenBody = 1 << 20

// recordTokens reads a token answer's body (at most maxTokenBody bytes),
// records its tokens and puts the bytes back for go-containerregistry.
func (s *secretSet) recordTokens(resp *http.Response) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBody))
	s.addTokenBody(b)
	rest := resp.Body
	var tail io.Reader = rest
	if err != nil {
		tail = errReader{err}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), tail), rest}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
