// Package registrytest provides real registries for tests and benchmarks:
// a fault-injecting http.Handler to wrap go-containerregistry's in-process
// registry (pkg/registry), and Debian's docker-registry (CNCF distribution)
// started on 127.0.0.1 with plain HTTP, htpasswd basic auth or TLS signed by
// a CA made for the run. It holds no registry client: images are pushed
// with internal/registry.
package registrytest

import (
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one request a Faults handler saw.
type Request struct {
	// Method is the HTTP method.
	Method string
	// Path is the URL path, e.g. "/v2/team/app/manifests/1.0".
	Path string
	// Accept is the Accept header as sent.
	Accept string
}

// Fault answers a request in the registry's place, or passes it to next
// (the registry), possibly changing what goes in or out. It may also hijack
// the connection and answer nothing.
type Fault func(w http.ResponseWriter, r *http.Request, next http.Handler)

// Rule applies Fault to the requests whose path contains Path (and whose
// method is Method, when set), for the first Times of them (0: all).
type Rule struct {
	Path   string
	Method string
	Times  int
	Fault  Fault
}

// Faults wraps a registry handler: it records every request, then applies
// the first matching rule that has not run out. Safe for concurrent use.
type Faults struct {
	Next http.Handler

	mu       sync.Mutex
	rules    []*ruleState
	requests []Request
}

type ruleState struct {
	Rule
	fired int
}

// Add appends a rule.
func (f *Faults) Add(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{Rule: r})
}

// Reset forgets the rules and the recorded requests.
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.requests = nil, nil
}

// Requests returns a copy of the requests seen so far, in arrival order.
func (f *Faults) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Count is the number of requests seen whose path contains path and, when
// method is not empty, whose method is method.
func (f *Faults) Count(method, path string) int {
	n := 0
	for _, r := range f.Requests() {
		if (method == "" || r.Method == method) && strings.Contains(r.Path, path) {
			n++
		}
	}
	return n
}

// ServeHTTP records the request, then answers it with the first rule that
// matches and has not run out, or passes it to Next.
func (f *Faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, Request{Method: r.Method, Path: r.URL.Path, Accept: r.Header.Get("Accept")})
	var fault Fault
	for _, rs := range f.rules {
		if !strings.Contains(r.URL.Path, rs.Path) || (rs.Method != "" && rs.Method != r.Method) {
			continue
		}
		if rs.Times > 0 && rs.fired >= rs.Times {
			continue
		}
		rs.fired++
		fault = rs.Fault
		break
	}
	f.mu.Unlock()
	if fault != nil {
		fault(w, r, f.Next)
		return
	}
	f.Next.ServeHTTP(w, r)
}

// Status answers code with the given headers and a registry error body
// (none for HEAD).
func Status(code int, headers map[string]string) Fault {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if r.Method != http.MethodHead {
			w.Write([]byte(`{"errors":[{"code":"` + codeName(code) + `","message":"injected by the test"}]}`))
		}
	}
}

func codeName(code int) string {
	switch code {
	case http.StatusNotFound:
		return "MANIFEST_UNKNOWN"
	case http.StatusUnauthorized:
		return "UNAUTHORIZED"
	case http.StatusTooManyRequests:
		return "TOOMANYREQUESTS"
	}
	return "UNKNOWN"
}

// RequireBasic answers 401 with a Basic challenge unless the request
// carries exactly user and password; it lets authorised requests through.
func RequireBasic(user, password string) Fault {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Header.Get("Authorization") == want {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
		Status(http.StatusUnauthorized, nil)(w, r, next)
	}
}

// WithoutHeader lets the registry answer but drops header from the answer
// (e.g. Docker-Content-Digest, as some registries and proxies do).
func WithoutHeader(header string) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(&dropHeader{ResponseWriter: w, header: header}, r)
	}
}

// dropHeader deletes one header just before the answer goes out.
type dropHeader struct {
	http.ResponseWriter
	header string
	done   bool
}

// WriteHeader drops the header, then writes the status.
func (d *dropHeader) WriteHeader(code int) {
	if !d.done {
		d.done = true
		d.ResponseWriter.Header().Del(d.header)
	}
	d.ResponseWriter.WriteHeader(code)
}

// Write writes the body, the header first if not yet written.
func (d *dropHeader) Write(b []byte) (int, error) {
	if !d.done {
		d.WriteHeader(http.StatusOK)
	}
	return d.ResponseWriter.Write(b)
}

// Delay holds the answer for d (or until the client gives up), then lets
// the registry answer.
func Delay(d time.Duration) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			next.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}
}

// Reset closes the connection with a TCP reset before any answer.
func Reset() Fault {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("registrytest: Reset needs a hijackable connection")
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			panic(err)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	}
}

// AlterBody lets the registry answer, then sends its status and headers
// (Docker-Content-Digest included) with the body changed by alter and
// Content-Length fixed: a proxy that rewrites a manifest under a tag while
// keeping the registry's digest header. HEAD answers pass unchanged.
func AlterBody(alter func([]byte) []byte) Fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			body = alter(body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	}
}
