package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// WithWireLog returns a context whose registry requests are logged to w, one
// line per attempt: method, URL, status (or the transport error) and time,
// e.g.
//
//	registry: GET https://registry.example/v2/team/app/manifests/1.0 -> 200 (41ms)
//
// Headers and bodies are never logged, so no Authorization header, token or
// password can appear; userinfo in a URL and query values other than the
// registry protocol's own (scope, service, n, last, digest, mount, from) are
// replaced by "REDACTED" (a pre-signed blob URL carries its signature there).
// This is stowage's -v.
func WithWireLog(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, wireLogKey{}, &wireLog{w: w})
}

type wireLogKey struct{}

// wireLog serialises the lines of concurrent requests.
type wireLog struct {
	mu sync.Mutex
	w  io.Writer
}

// wireLogTransport logs each attempt of a request whose context carries a
// wireLog; it sits at the bottom of the stack, so retries, pings and token
// requests each get their line.
type wireLogTransport struct {
	inner http.RoundTripper
}

func (t wireLogTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	l, _ := req.Context().Value(wireLogKey{}).(*wireLog)
	if l == nil {
		return t.inner.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.inner.RoundTrip(req)
	outcome := "error: " + fmt.Sprint(err)
	if err == nil {
		outcome = fmt.Sprint(resp.StatusCode)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "registry: %s %s -> %s (%dms)\n", req.Method, logURL(req.URL), outcome, time.Since(start).Milliseconds())
	return resp, err
}

// protocolParams are the query parameters of the registry and token
// protocols, logged as sent; every other value is redacted.
var protocolParams = map[string]bool{"scope": true, "service": true, "n": true, "last": true, "digest": true, "mount": true, "from": true}

// logURL is u without userinfo, with query values outside protocolParams
// redacted and the parameters sorted.
func logURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	c.RawQuery = ""
	s := c.String()
	q := u.Query()
	if len(q) == 0 {
		return s
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			if !protocolParams[k] {
				v = "REDACTED"
			}
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	return s + "?" + strings.Join(parts, "&")
}
