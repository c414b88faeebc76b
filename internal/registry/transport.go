package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
//     caller can fall back to GET.
//
// Per-operation state travels in the request's context (see opState).
type attemptTransport struct {
	inner         http.RoundTripper
	insecure      map[string]bool
	timeout       time.Duration
	maxRetryAfter time.Duration
}

// opState is the state of one registry operation (a HEAD or a GET and its
// retries), carried by the context of its requests.
type opState struct {
	mu         sync.Mutex
	attempts   int
	notBefore  time.Time
	retryAfter string // the last Retry-After header, as sent
	noDigest   bool   // a HEAD answered 200 without Docker-Content-Digest
}

type opKey struct{}

// withOp returns a context carrying a fresh opState, and the state.
func withOp(ctx context.Context) (context.Context, *opState) {
	st := &opState{}
	return context.WithValue(ctx, opKey{}, st), st
}

func opFrom(ctx context.Context) *opState {
	st, _ := ctx.Value(opKey{}).(*opState)
	return st
}

// PlainHTTPError is a plain-HTTP request to a registry that was not marked
// insecure; it was not sent.
type PlainHTTPError struct {
	// Host is the registry, host[:port].
	Host string
}

// Error names the registry and the flag that allows plain HTTP to it.
func (e *PlainHTTPError) Error() string {
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

// RoundTrip sends one attempt; see attemptTransport.
func (t *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.insecure[req.URL.Host] {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &PlainHTTPError{Host: req.URL.Host}
	}
	st := opFrom(req.Context())
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
		st.mu.Unlock()
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, ctx: ctx, parent: req.Context(), cancel: cancel, timeout: t.timeout}
	return resp, nil
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
	if err != nil && err != io.EOF && b.ctx.Err() != nil && b.parent.Err() == nil {
		return n, &TimeoutError{After: b.timeout}
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
	if errors.As(err, &pe) || errors.As(err, &re) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var tmp interface{ Temporary() bool }
	return errors.As(err, &tmp) && tmp.Temporary()
}
