package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/stowage/stowage/internal/registry"
)

// ImageError is one image that could not be planned, copied or verified.
// Its message names the image, where it failed, what was asked and the
// answer; no credential is ever part of it.
type ImageError struct {
	// Image is the reference as the config wrote it.
	Image string
	// Name is its lock key.
	Name string
	// Where is the registry (host[:port]) or "oci:PATH" that answered.
	Where string
	// Op is what was asked: "GET manifest sha256:…", "upload blob sha256:…".
	Op string
	// Answer is the answer or the failure, in words, scrubbed of
	// passwords.
	Answer string
	// Err is the underlying error, for errors.Is and errors.As.
	Err error
}

// Error formats the failure as
// `image "<written>" (<name>): <where>: <op>: <answer>`.
func (e *ImageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "image %q", e.Image)
	if e.Name != "" && e.Name != e.Image {
		fmt.Fprintf(&b, " (%s)", e.Name)
	}
	b.WriteString(": ")
	if e.Where != "" {
		b.WriteString(e.Where + ": ")
	}
	if e.Op != "" {
		b.WriteString(e.Op + ": ")
	}
	b.WriteString(e.Answer)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ImageError) Unwrap() error { return e.Err }

// Errors are the failed images of a run, sorted by name: all of them.
type Errors []*ImageError

// Error is the one failure's message, or "N images failed:" and one
// indented line per image.
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

func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Name != es[j].Name {
			return es[i].Name < es[j].Name
		}
		return es[i].Image < es[j].Image
	})
	return es
}

// failure is a failed operation before it is tied to an image.
type failure struct {
	where, op string
	err       error
}

func (f *failure) imageError(img Image, r *registry.Resolver) *ImageError {
	return &ImageError{
		Image:  img.written(),
		Name:   img.Name,
		Where:  f.where,
		Op:     f.op,
		Answer: r.Scrub(answer(f.err) + credentialNote(f.err, img)),
		Err:    f.err,
	}
}

// answer words an error: an HTTP answer as status and the registry's error
// codes, a timeout, a network failure, else the error's text.
func answer(err error) string {
	var (
		terr *transport.Error
		tmo  *registry.TimeoutError
		run  *registry.RunTimeoutError
		pl   *registry.PlainHTTPError
	)
	switch {
	case errors.As(err, &run):
		return run.Error()
	case errors.As(err, &terr):
		s := fmt.Sprintf("%d %s", terr.StatusCode, http.StatusText(terr.StatusCode))
		for i, d := range terr.Errors {
			sep := "; "
			if i == 0 {
				sep = ": "
			}
			s += sep + string(d.Code)
			if d.Message != "" {
				s += " " + d.Message
			}
		}
		switch terr.StatusCode {
		case http.StatusTooManyRequests:
			s += " (rate limited; retried as go-containerregistry's backoff allows)"
		}
		return s
	case errors.As(err, &tmo):
		return tmo.Error() + " (the transfer stalled or was too slow; --timeout sets the limit per request)"
	case errors.As(err, &pl):
		return pl.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return err.Error()
}

// errNotThere is a verification that found no manifest.
var errNotThere = errors.New("not found at the destination after the copy")

// digestMismatch is a destination whose manifest is not the lock's.
type digestMismatch struct{ got, want v1.Hash }

func (e *digestMismatch) Error() string {
	return fmt.Sprintf("the destination has digest %s, the lock pins %s", e.got, e.want)
}

// credentialNote says which credential an authentication failure was
// answered to: the config's user and password source (never the
// password), or the Docker config and credential helpers.
func credentialNote(err error, img Image) string {
	var terr *transport.Error
	if !errors.As(err, &terr) || (terr.StatusCode != http.StatusUnauthorized && terr.StatusCode != http.StatusForbidden) {
		return ""
	}
	if a := img.Auth; a != nil && a.Username != "" && a.Password != "" {
		return fmt.Sprintf(" (sent the config's credentials to the source: user %q, password from %s; the destination gets the Docker config's)", a.Username, a.Password)
	}
	return " (tried the Docker config and credential helpers, then anonymous)"
}
