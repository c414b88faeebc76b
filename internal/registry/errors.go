package registry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/stowage/stowage/internal/plan"
)

// ImageError is one image that could not be resolved or checked. Its
// message names the image, the registry contacted, what was asked and the
// registry's answer; no credential is ever part of it.
type ImageError struct {
	// Image is the reference as the config wrote it.
	Image string
	// Key is its lock key.
	Key string
	// UsedBy says what in the config uses it; may be empty.
	UsedBy string
	// Registry is the registry contacted, host[:port] (a mirror when one
	// is configured); empty when none was.
	Registry string
	// Where is where the failure happened when that is said as is, with
	// no "registry" before it: a host[:port] or "oci:PATH" (the mirror
	// command's copies); usually empty.
	Where string
	// Op is what was asked: "HEAD tag 1.31.1", "GET digest sha256:…".
	Op string
	// Answer is the registry's answer or the failure, in words.
	Answer string
	// Err is the underlying error, for errors.Is and errors.As. Its text
	// is not used by Error (Answer is scrubbed of passwords, Err is not).
	Err error
}

// Error formats the failure as
// `image "<written>" (<key>; used by <uses>): registry <host>: <where>: <op>: <answer>`,
// leaving out the parts that are empty.
func (e *ImageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "image %q", e.Image)
	var about []string
	if e.Key != "" && e.Key != e.Image {
		about = append(about, e.Key)
	}
	if e.UsedBy != "" {
		about = append(about, "used by "+e.UsedBy)
	}
	if len(about) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(about, "; "))
	}
	b.WriteString(": ")
	if e.Registry != "" {
		fmt.Fprintf(&b, "registry %s: ", e.Registry)
	}
	if e.Where != "" {
		b.WriteString(e.Where + ": ")
	}
	if e.Op != "" {
		fmt.Fprintf(&b, "%s: ", e.Op)
	}
	b.WriteString(e.Answer)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ImageError) Unwrap() error { return e.Err }

// Transient reports whether the same run, unchanged, may succeed later:
// the registry could not be reached or did not answer in time, answered
// 408, 429 or a 5xx status, or the connection broke (the failures
// go-containerregistry retries). Every other failure (401, 403, 404, a
// certificate, a digest or signature that does not match, a registry
// whose name does not resolve) needs a change first: credentials, the
// reference, the CA, the key.
func (e *ImageError) Transient() bool {
	err := e.Err
	if err == nil {
		return false
	}
	var (
		terr *transport.Error
		tmo  *TimeoutError
		run  *RunTimeoutError
		dns  *net.DNSError
		op   *net.OpError
	)
	switch {
	case errors.As(err, &terr):
		return terr.StatusCode == http.StatusRequestTimeout || terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= 500
	case errors.As(err, &tmo), errors.As(err, &run), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &dns):
		return !dns.IsNotFound
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &op) && op.Op == "dial":
		return true
	}
	return retryable(err)
}

// Transient counts the failures of es a later run may resolve unchanged
// (ImageError.Transient).
func (es Errors) Transient() int {
	n := 0
	for _, e := range es {
		if e.Transient() {
			n++
		}
	}
	return n
}

// Errors are the failures of one run, one per image, sorted by lock key:
// every failure is reported, not only the first.
type Errors []*ImageError

// Error is the one failure's message, or "N images failed:" followed by
// one indented line per failure.
func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "  " + e.Error()
	}
	return fmt.Sprintf("%d images failed:\n%s", len(es), strings.Join(lines, "\n"))
}

// Unwrap returns the failures, for errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Sorted orders es in place by lock key, then by the reference as
// written, and returns it.
func (es Errors) Sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Key != es[j].Key {
			return es[i].Key < es[j].Key
		}
		return es[i].Image < es[j].Image
	})
	return es
}

// opFailure is a failed operation before it is tied to an image.
type opFailure struct {
	op  string
	id  string // the tag or digest asked for; "" when none
	err error
	st  *opState
}

// imageError ties a failure to its image, putting the registry's answer in
// words and removing every password read so far.
func (r *Resolver) imageError(img *plan.Image, t target, f *opFailure) *ImageError {
	return &ImageError{
		Image:    img.Ref.Written,
		Key:      img.Ref.Key(),
		UsedBy:   img.UsedBy(),
		Registry: t.repo.RegistryStr(),
		Op:       r.scrub(f.op),
		Answer:   r.scrub(answer(f, img, t)),
		Err:      f.err,
	}
}

// answer says in words what went wrong: the HTTP status and the registry's
// error codes, or the network failure, and how many attempts were made.
func answer(f *opFailure, img *plan.Image, t target) string {
	s, st := failure(f, img, t), f.st
	if st != nil {
		st.mu.Lock()
		n, ra, withheld, tlsc, plainErr := st.attempts, st.retryAfter, st.withheld, st.tlsCause, st.plainErr
		st.mu.Unlock()
		if tlsc != "" && strings.HasPrefix(s, tlsWords) {
			// go-containerregistry returns both attempts' errors, and
			// failure worded the TLS one: word the plain-HTTP attempt's
			// instead, so that the TLS cause is said once, below.
			if plainErr != nil {
				s = failure(&opFailure{op: f.op, id: f.id, err: plainErr}, img, t)
			} else {
				tlsc = ""
			}
		}
		if tlsc != "" {
			s += " (HTTPS was tried first and failed: TLS: " + tlsc + ")"
		}
		if withheld != "" {
			s += fmt.Sprintf(" (the registry asked for a token from %s, which is not its own host, so no credentials were sent there; trust it with --trust-token-realm %s)", withheld, withheld)
		}
		if ra != "" {
			s += fmt.Sprintf(" (Retry-After: %s)", ra)
		}
		if n > 1 {
			s += fmt.Sprintf(" (%d attempts)", n)
		}
	}
	return s
}

// tlsWords begins failure's wording of a certificate failure.
const tlsWords = "TLS: "

func failure(f *opFailure, img *plan.Image, t target) string {
	err := f.err
	var (
		terr  *transport.Error
		tmo   *TimeoutError
		plain *PlainHTTPError
		run   *RunTimeoutError
		redir *RedirectLimitError
		ua    x509.UnknownAuthorityError
		hn    x509.HostnameError
		dns   *net.DNSError
	)
	switch {
	case errors.As(err, &run):
		return run.Error()
	case errors.As(err, &redir):
		return redir.Error()
	case errors.As(err, &terr):
		return statusAnswer(terr, f.id, img, t)
	case errors.As(err, &tmo):
		return tmo.Error()
	case errors.As(err, &ua):
		return tlsWords + "the certificate is signed by an unknown authority; pass the CA with --ca-file"
	case errors.As(err, &hn):
		return tlsWords + hn.Error()
	case errors.As(err, &plain) && plain.Redirected:
		return plain.Error()
	case errors.As(err, &plain):
		return "the registry does not answer HTTPS, and " + plain.Error()
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there"
	case errors.As(err, &dns):
		return fmt.Sprintf("host %s not found", dns.Name)
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return err.Error()
}

// statusAnswer words an HTTP error answer.
func statusAnswer(e *transport.Error, id string, img *plan.Image, t target) string {
	s := StatusWords(e)
	if len(e.Errors) == 0 {
		// An answer that is not the registry error format (a proxy's
		// page): transport.Error keeps it only in its message.
		if _, raw, ok := strings.Cut(e.Error(), http.StatusText(e.StatusCode)+": "); ok {
			s += ": " + excerpt(raw, 200)
		}
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if img.Auth != nil && img.Auth.Username != "" && img.Auth.Password != "" && !t.mirrored {
			s += fmt.Sprintf(" (sent the config's credentials: user %q, password from %s)", img.Auth.Username, img.Auth.Password)
		} else {
			s += " (no config credentials apply; tried the Docker config and credential helpers, then anonymous)"
		}
	case http.StatusNotFound:
		if isDigest(id) {
			s += " (the digest does not exist in this repository)"
		} else {
			s += " (no such repository or tag)"
		}
	}
	return s
}

// StatusWords is an HTTP error answer in words: "<code> <status text>",
// then the registry's error codes with their messages, as
// ": CODE message; CODE message" (nothing when it sent none).
func StatusWords(e *transport.Error) string {
	s := fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	for i, d := range e.Errors {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		s += sep + string(d.Code)
		if d.Message != "" {
			s += " " + d.Message
		}
	}
	return s
}

// excerpt is s on one line, cut to at most n bytes (at a rune boundary).
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
