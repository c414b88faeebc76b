package registry

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/stowage/stowage/internal/secret"
)

// secretSet is every credential a Resolver has read or seen on the wire:
// the password itself and "user:password" (a Basic Authorization header's
// value), the value of every Authorization header sent (Basic or Bearer),
// and the token, access_token and refresh_token fields of token answers.
// scrub replaces each of them, in every spelling internal/secret knows
// (base64 at every alignment, URL-encoded, JSON-escaped, hex, any ASCII
// case), by "***".
type secretSet struct {
	set secret.Set
}

// add records each value and its spellings.
func (s *secretSet) add(vals ...string) { s.set.Add(vals...) }

// addBasic records a user name and password as the password alone and as
// "user:password" (whose base64 is a Basic Authorization value).
func (s *secretSet) addBasic(user, pw string) { s.set.AddBasic(user, pw) }

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
func (s *secretSet) scrub(m string) string { return s.set.Scrub(m) }

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
