package registry

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// maxPingBody bounds the body of a ping answer kept by pingCache (a
// registry's GET /v2/ answers "{}" or a short error document).
const maxPingBody = 64 << 10

// pingCache answers go-containerregistry's pings (GET /v2/ without
// credentials, sent each time it sets up a repository's transport: every
// remote.Puller and remote.Pusher does so per repository) from the first
// answer of each registry, so that a run pings each registry once however
// many repositories it reads or writes. Kept, per scheme and host: a 200 or
// 401 answer (status, headers and body: the 401's WWW-Authenticate
// challenge is what go-containerregistry reads), and, for a host marked
// insecure, an HTTPS attempt answered in plain HTTP (a
// tls.RecordHeaderError: the host speaks HTTP; go-containerregistry then
// pings it with HTTP). Every other answer or error is not kept and the
// next ping is sent again. Concurrent pings of one key wait for the first
// (one request, not one per worker).
type pingCache struct {
	mu      sync.Mutex
	entries map[string]*pingEntry
}

type pingEntry struct {
	mu     sync.Mutex // held while the ping is in flight
	done   bool
	status int
	header http.Header
	body   []byte
	err    error
}

// isPing says whether req is go-containerregistry's ping: GET /v2/ with no
// credentials and no body.
func isPing(req *http.Request) bool {
	return req.Method == http.MethodGet && req.URL.Path == "/v2/" && req.URL.RawQuery == "" &&
		req.Header.Get("Authorization") == "" && (req.Body == nil || req.Body == http.NoBody)
}

// roundTrip answers req from the cache, or sends it with send and keeps the
// answer when it may be kept (see pingCache); insecure says whether the
// host is marked insecure.
func (c *pingCache) roundTrip(req *http.Request, insecure bool, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	key := req.URL.Scheme + "://" + req.URL.Host
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*pingEntry{}
	}
	e := c.entries[key]
	if e == nil {
		e = &pingEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.answer(req)
	}
	resp, err := send(req)
	if err != nil {
		var rh tls.RecordHeaderError
		if insecure && req.URL.Scheme == "https" && errors.As(err, &rh) {
			e.done, e.err = true, err
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxPingBody+1))
	resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	if len(body) > maxPingBody {
		// Not kept; the caller reads only the status and headers.
		body = body[:maxPingBody]
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	e.done, e.status, e.header, e.body = true, resp.StatusCode, resp.Header.Clone(), body
	return e.answer(req)
}

// answer is the kept answer as a new response to req.
func (e *pingEntry) answer(req *http.Request) (*http.Response, error) {
	if e.err != nil {
		return nil, e.err
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", e.status, http.StatusText(e.status)),
		StatusCode:    e.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        e.header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)),
		Request:       req,
	}, nil
}
