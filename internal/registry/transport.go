package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// attemptTransport is the bottom of the transport stack, under
// go-containerregistry's retry transport, so it sees every attempt:
//
//   - it refuses plain HTTP to registries not marked insecure;
//   - it gives each attempt its own deadline, body included;
//   - it remembers a Retry-After header of a 429 or 503 answer and holds
//     the next attempt of the same operation until then;
//   - it notes a HEAD answer without Docker-Content-Digest, so that the
//     caller can fall back to GET;
//   - it records every credential it sees (Authorization headers, the
//     tokens of token answers) so that no message can carry them;
//   - it sends credentials to a token realm only on the registry's own
//     host, or on one trusted by WithTrustedRealm (mayReceive).
//
// Per-operation state travels in the request's context (see opState).
type attemptTransport struct {
	inner         http.RoundTripper
	insecure      map[string]bool
	timeout       time.Duration
	maxRetryAfter time.Duration
	secrets       *secretSet
	trustedRealms map[string]bool

	mu         sync.Mutex
	registries map[string]bool // hosts that got a /v2/ request

	// pings keeps each registry's ping answer for the run.
	pings pingCache
}

// opState is the state of one registry operation (a HEAD or a GET and its
// retries), carried by the context of its requests.
type opState struct {
	mu         sync.Mutex
	attempts   int
	notBefore  time.Time
	retryAfter string // the last Retry-After header, as sent
	noDigest   bool   // a HEAD answered 200 without Docker-Content-Digest
	host       string // the registry contacted, host[:port]
	withheld   string // a token realm host that was not sent credentials
	redirects  int    // redirect answers so far
	tlsCause   string // why HTTPS failed to an insecure registry
	plainErr   error  // why the plain-HTTP attempt then failed, if it did
}

// tlsCause words a TLS failure, or "" when err is none. A server that
// answers in plain HTTP (tls.RecordHeaderError) is what an insecure
// registry is expected to be: no cause.
func tlsCause(err error) string {
	var (
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
		ae  *tls.AlertError
		cve *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &ua):
		return "the certificate is signed by an unknown authority (--ca-file)"
	case errors.As(err, &hn):
		return hn.Error()
	case errors.As(err, &ci):
		return ci.Error()
	case errors.As(err, &cve):
		return cve.Error()
	case errors.As(err, &ae):
		return ae.Error()
	}
	return ""
}

// MaxRedirects is how many redirect answers one operation (a HEAD or GET
// with its retries) may follow: 10, net/http's default, which
// go-containerregistry's own redirect check drops.
const MaxRedirects = 10

// RedirectLimitError is an operation stopped after MaxRedirects redirects.
type RedirectLimitError struct {
	// Location is the last redirect's target.
	Location string
}

// Error says that the redirects were cut off and where the last pointed.
func (e *RedirectLimitError) Error() string {
	return fmt.Sprintf("stopped after %d redirects (the last to %s)", MaxRedirects, e.Location)
}

type opKey struct{}

// withOp returns a context carrying a fresh opState for an operation on
// the registry host, and the state.
func withOp(ctx context.Context, host string) (context.Context, *opState) {
	st := &opState{host: host}
	return context.WithValue(ctx, opKey{}, st), st
}

func opFrom(ctx context.Context) *opState {
	st, _ := ctx.Value(opKey{}).(*opState)
	return st
}

// PlainHTTPError is a plain-HTTP request to a host that was not marked
// insecure; it was not sent.
type PlainHTTPError struct {
	// Host is the host asked, host[:port].
	Host string
	// Redirected is set when the request followed a redirect answer (a
	// registry sending a blob or manifest to a plain-HTTP store).
	Redirected bool
}

// Error names the host and the flag that allows plain HTTP to it; for a
// redirect, that the registry redirected there. The redirect's path and
// query (a signed URL's signature) are never part of it.
func (e *PlainHTTPError) Error() string {
	if e.Redirected {
		return fmt.Sprintf("the registry redirected to plain HTTP at %s, which is not marked insecure: not followed (allow it with --insecure-registry %s)", e.Host, e.Host)
	}
	return fmt.Sprintf("plain HTTP to %s refused: it is not marked insecure (--insecure-registry %s)", e.Host, e.Host)
}

// TimeoutError is an attempt that got no complete answer within the
// per-request timeout.
type TimeoutError struct {
	// After is the per-request timeout.
	After time.Duration
}

// Error says how long the attempt waited.
func (e *TimeoutError) Error() string { return fmt.Sprintf("no answer within %v", e.After) }

// Timeout reports true: net.Error's meaning.
func (e *TimeoutError) Timeout() bool { return true }

// RoundTrip sends one attempt, a ping answered from pingCache when it
// can be; see attemptTransport.
func (t *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isPing(req) && (req.URL.Scheme != "http" || t.insecure[req.URL.Host]) {
		return t.pings.roundTrip(req, t.insecure[req.URL.Host], t.send)
	}
	return t.send(req)
}

// send sends one attempt.
func (t *attemptTransport) send(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.insecure[req.URL.Host] {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &PlainHTTPError{Host: req.URL.Host, Redirected: req.Response != nil}
	}
	st := opFrom(req.Context())
	if h := req.Header.Get("Authorization"); h != "" {
		t.secrets.addHeader(h)
	}
	registryPath := req.URL.Path == "/v2" || strings.HasPrefix(req.URL.Path, "/v2/")
	if registryPath {
		t.mu.Lock()
		t.registries[req.URL.Host] = true
		t.mu.Unlock()
	} else if !t.mayReceive(req.URL.Host, st) {
		var stripped bool
		var err error
		if req, stripped, err = withoutCredentials(req); err != nil {
			return nil, err
		}
		if stripped && st != nil {
			st.mu.Lock()
			st.withheld = req.URL.Host
			st.mu.Unlock()
		}
	}
	if st != nil {
		st.mu.Lock()
		// Count the operation's own requests, not the ping or token
		// exchange that may ride on its context.
		if strings.Contains(req.URL.Path, "/manifests/") || strings.Contains(req.URL.Path, "/blobs/") {
			st.attempts++
		}
		wait := time.Until(st.notBefore)
		st.mu.Unlock()
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-req.Context().Done():
				timer.Stop()
				return nil, context.Cause(req.Context())
			}
		}
	}
	ctx, cancel := context.WithTimeoutCause(req.Context(), t.timeout, &TimeoutError{After: t.timeout})
	resp, err := t.inner.RoundTrip(req.WithContext(ctx))
	if err != nil && st != nil && req.URL.Scheme == "https" && t.insecure[req.URL.Host] {
		// An insecure registry is tried with HTTPS first; keep why that
		// failed, so that the plain-HTTP answer that follows is not the
		// whole story.
		if cause := tlsCause(err); cause != "" {
			st.mu.Lock()
			st.tlsCause = cause
			st.mu.Unlock()
		}
	}
	if err != nil && st != nil && req.URL.Scheme == "http" {
		st.mu.Lock()
		st.plainErr = err
		st.mu.Unlock()
	}
	if err != nil {
		cause := context.Cause(ctx)
		cancel()
		var te *TimeoutError
		if errors.As(cause, &te) && req.Context().Err() == nil {
			return nil, te
		}
		if req.Context().Err() != nil {
			return nil, context.Cause(req.Context())
		}
		return nil, err
	}
	if st != nil {
		st.mu.Lock()
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			if h := resp.Header.Get("Retry-After"); h != "" {
				st.retryAfter = h
				if d, ok := parseRetryAfter(h, time.Now()); ok {
					st.notBefore = time.Now().Add(min(d, t.maxRetryAfter))
				}
			}
		}
		if req.Method == http.MethodHead && resp.StatusCode == http.StatusOK && resp.Header.Get("Docker-Content-Digest") == "" {
			st.noDigest = true
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			st.redirects++
			if st.redirects > MaxRedirects {
				st.mu.Unlock()
				resp.Body.Close()
				cancel()
				return nil, &RedirectLimitError{Location: resp.Header.Get("Location")}
			}
		}
		st.mu.Unlock()
	}
	if !registryPath && resp.StatusCode == http.StatusOK {
		t.secrets.recordTokens(resp)
	}
	if registryPath {
		if err := limitManifest(req, resp); err != nil {
			resp.Body.Close()
			cancel()
			return nil, err
		}
		checkManifestDigest(req, resp)
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, ctx: ctx, parent: req.Context(), cancel: cancel, timeout: t.timeout}
	return resp, nil
}

// dockerHubRealm is Docker Hub's token realm host, trusted for its
// registry host.
const dockerHubRealm, dockerHubRegistry = "auth.docker.io", "index.docker.io"

// mayReceive says whether credentials may go to host, a request outside
// the registry API (a token realm): a host trusted by WithTrustedRealm;
// the registry of the operation itself (or auth.docker.io for Docker Hub);
// without an operation, any host that is a registry of this run.
func (t *attemptTransport) mayReceive(host string, st *opState) bool {
	if t.trustedRealms[host] {
		return true
	}
	if st != nil && st.host != "" {
		return host == st.host || (st.host == dockerHubRegistry && host == dockerHubRealm)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.registries[host]
}

// maxFormBody bounds a token request's form read to remove credentials.
const maxFormBody = 64 << 10

// withoutCredentials returns req without its Authorization header and
// without the password and refresh_token fields of a form body, and
// whether it had any.
func withoutCredentials(req *http.Request) (*http.Request, bool, error) {
	stripped := false
	out := req.Clone(req.Context())
	if out.Header.Get("Authorization") != "" {
		out.Header.Del("Authorization")
		stripped = true
	}
	if req.Body == nil || req.Body == http.NoBody || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return out, stripped, nil
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, maxFormBody))
	req.Body.Close()
	if err != nil {
		return nil, false, err
	}
	v, err := url.ParseQuery(string(b))
	if err == nil {
		for _, k := range []string{"password", "refresh_token"} {
			if v.Has(k) {
				v.Del(k)
				stripped = true
			}
		}
		b = []byte(v.Encode())
	}
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.ContentLength = int64(len(b))
	out.GetBody = nil
	return out, stripped, nil
}

// cancelOnClose ends an attempt's deadline when its body is closed, and
// turns a read cut by the deadline into a TimeoutError.
type cancelOnClose struct {
	io.ReadCloser
	ctx, parent context.Context
	cancel      context.CancelFunc
	timeout     time.Duration
}

// Read reads the body; a read cut by the attempt's deadline is a
// TimeoutError.
func (b *cancelOnClose) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var te *TimeoutError
	if err != nil && err != io.EOF && errors.As(context.Cause(b.ctx), &te) && b.parent.Err() == nil {
		// The attempt's deadline, not Close (which cancels it too: a
		// read after the body was closed is not a timeout).
		return n, te
	}
	return n, err
}

// Close closes the body and ends the attempt's deadline.
func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110, section 10.2.3).
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryable is the retry predicate given to go-containerregistry
// (remote.WithRetryPredicate): the answers of retryStatusCodes (which the
// retry transport marks temporary), a per-request timeout, a reset or
// broken connection, an answer cut short. The run's own deadline or
// cancellation, a refused plain-HTTP request and every other error end the
// operation at once.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		return true
	}
	var pe *PlainHTTPError
	var re *RunTimeoutError
	var rl *RedirectLimitError
	if errors.As(err, &pe) || errors.As(err, &re) || errors.As(err, &rl) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var tmp interface{ Temporary() bool }
	return errors.As(err, &tmp) && tmp.Temporary()
}
