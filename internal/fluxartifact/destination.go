package fluxartifact

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/render"
)

// URLPrefix starts a destination, as in a Flux OCIRepository's url.
const URLPrefix = "oci://"

// DestinationError is a destination not of the form
// oci://REGISTRY/REPOSITORY:TAG: a mistake in the command line.
type DestinationError struct{ Err error }

// Error is the mistake, naming the destination.
func (e *DestinationError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *DestinationError) Unwrap() error { return e.Err }

// ParseDestination parses a push destination: oci:// then a reference
// with an explicit registry host (Flux's OCIRepository has no default
// registry) and a tag, and no digest (the digest is the artifact's).
// Credentials in the URL (oci://user:password@host/…) and a repository
// path the distribution grammar refuses ("..", ".", upper case, an empty
// component), which pkg/name partly accepts, are refused without echoing
// the credentials; any other refusal is a *DestinationError.
func ParseDestination(url string) (name.Tag, error) {
	rest, ok := strings.CutPrefix(url, URLPrefix)
	if !ok {
		rest = url
	}
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		return name.Tag{}, fmt.Errorf("destination %s***@%s: credentials in the URL are refused (they would be printed and stored); give them in the docker config", URLPrefix, escape.Line(rest[at+1:]))
	}
	if !ok {
		return name.Tag{}, &DestinationError{fmt.Errorf("destination %q: want oci://REGISTRY/REPOSITORY:TAG", url)}
	}
	repo, _, _ := strings.Cut(rest, "@")
	if _, err := imageref.Parse(repo); err != nil {
		return name.Tag{}, fmt.Errorf("destination %q: %w", url, err)
	}
	if strings.Contains(rest, "@") {
		return name.Tag{}, &DestinationError{fmt.Errorf("destination %q: give a tag, not a digest (the digest is the artifact's)", url)}
	}
	t, err := name.NewTag(rest, name.StrictValidation)
	if err != nil {
		return name.Tag{}, &DestinationError{fmt.Errorf("destination %q: %v (want oci://REGISTRY/REPOSITORY:TAG)", url, err)}
	}
	return t, nil
}

// Created is the created annotation's time: flag (RFC 3339, --created),
// else $SOURCE_DATE_EPOCH read through getenv (the reproducible-builds
// convention: seconds since the epoch), else the Unix epoch; in UTC.
// Errors name the flag or the variable and what to give.
func Created(flag string, getenv func(string) (string, bool)) (time.Time, error) {
	if flag != "" {
		t, err := time.Parse(time.RFC3339, flag)
		if err != nil {
			return time.Time{}, fmt.Errorf("--created %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z", flag)
		}
		return t.UTC(), nil
	}
	if s, ok := getenv("SOURCE_DATE_EPOCH"); ok && s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the Unix epoch", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}

// Build is the artifact of a rendered profile: objs as render writes them
// into a directory (render.Files), less the Secrets unless includeSecrets
// (LeaveOutSecrets: returned as leftOut, for the caller to name), with
// meta's annotations (Image).
func Build(objs []render.Object, meta Metadata, includeSecrets bool) (img v1.Image, leftOut []render.Object, err error) {
	if !includeSecrets {
		objs, leftOut = LeaveOutSecrets(objs)
	}
	files, err := render.Files(objs)
	if err != nil {
		return nil, nil, err
	}
	img, err = Image(files, meta)
	return img, leftOut, err
}
