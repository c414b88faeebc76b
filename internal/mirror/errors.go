package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/stowage/stowage/internal/registry"
)

// ImageError is one image that could not be planned, copied or verified:
// registry.ImageError with Key the lock key, Where the registry
// (host[:port]) or "oci:PATH" that answered, Op what was asked ("GET
// manifest sha256:…", "upload blob sha256:…") and Answer the answer in
// words, scrubbed of passwords. Its message is
// `image "<written>" (<key>): <where>: <op>: <answer>`.
type ImageError = registry.ImageError

// Errors are the failed images of a run, sorted by lock key: all of them
// (registry.Errors).
type Errors = registry.Errors

// failure is a failed operation before it is tied to an image.
type failure struct {
	where, op string
	err       error
}

func (f *failure) imageError(img Image, r *registry.Resolver) *ImageError {
	return &ImageError{
		Image:  img.written(),
		Key:    img.Name,
		Where:  f.where,
		Op:     attachmentOp(img, f.op),
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
		s := registry.StatusWords(terr)
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
