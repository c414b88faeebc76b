package registry_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestPasswordEchoedEscaped: a registry on loopback whose 401 body echoes
// the password as some encoder of its own escapes it — Python's quote
// (keeps '/'), a URL's userinfo (keeps '+' and '&', escapes ':' and '@'),
// JavaScript's encodeURIComponent (keeps '!' and '*'), query escaped
// twice, query escaped inside JSON, every byte \u00XX-escaped, the base64
// of "user:password" — never gets its echo into the error stowage shows.
// Before the escape-tolerant match the first three and the twice-escaped
// one were shown as sent.
func TestPasswordEchoedEscaped(t *testing.T) {
	const user, pw = "robot", `Pw/canary+7c1e&<ok>:@!*x y`
	jsEscape := strings.NewReplacer("%21", "!", "%2A", "*", "+", "%20").Replace(url.QueryEscape(pw))
	spellings := map[string]string{
		"python quote":                strings.NewReplacer("%2F", "/", "+", "%20").Replace(url.QueryEscape(pw)),
		"userinfo":                    url.UserPassword(user, pw).String(),
		"encodeURIComponent":          jsEscape,
		"query escaped twice":         url.QueryEscape(url.QueryEscape(pw)),
		"query escaped, lower hex":    strings.ToLower(url.QueryEscape(pw)),
		"path escaped":                url.PathEscape(pw),
		"unicode escaped":             unicodeEscaped(pw),
		"base64 of user:password":     base64.StdEncoding.EncodeToString([]byte(user + ":" + pw)),
		"base64url of user:password":  base64.RawURLEncoding.EncodeToString([]byte(user + ":" + pw)),
		"JSON in JSON, query escaped": string(mustJSON(t, url.QueryEscape(pw))),
	}
	for name, echo := range spellings {
		t.Run(name, func(t *testing.T) {
			h, f := server(t)
			f.Add(registrytest.Rule{Path: "/v2/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				msg, _ := json.Marshal("denied [" + echo + "] for you")
				w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":` + string(msg) + `}]}`))
			}})
			r := resolver(t, registry.WithInsecure(h), registry.WithPasswords(func(string) ([]byte, error) { return []byte(pw), nil }))
			img := image(t, h+"/a/app:1")
			img.Auth = &v1alpha1.Auth{Username: user, Password: "env:P"}
			_, err := r.Lock(context.Background(), nil, []*plan.Image{img}, registry.Fill)
			if err == nil {
				t.Fatal("Lock succeeded against a registry refusing everything")
			}
			msg := err.Error()
			if !strings.Contains(msg, "denied [") || !strings.Contains(msg, "] for you") || !strings.Contains(msg, "***") {
				t.Errorf("error = %s\nwant the registry's words with the password masked", msg)
			}
			// What depends on the password: the echo, less the user name's
			// part of a base64 value.
			core := echo
			if strings.HasPrefix(name, "base64") {
				core = echo[len(echo)/3 : len(echo)-2]
			}
			if strings.Contains(strings.ToLower(msg), strings.ToLower(core)) || strings.Contains(msg, "canary") {
				t.Errorf("error carries the password (%s):\n%s", name, msg)
			}
		})
	}
}

// unicodeEscaped is s with every byte a JSON \u00XX escape.
func unicodeEscaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
