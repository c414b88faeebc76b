package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PutBlob writes blob d into repo, a destination repository (Destination's
// credential, the keychain's, and transport stack), in the fewest requests
// the OCI distribution specification allows, where go-containerregistry's
// remote.Pusher sends four (a HEAD it already answered for the plan, a
// POST, a PATCH with the bytes and a closing PUT):
//
//   - with from (a repository of the same registry holding d): one POST
//     asking the registry to mount d from there ("mount" and "from"
//     query parameters). A 201 answer means it is mounted and nothing is
//     sent (mounted is true);
//   - without from, or when the registry declines the mount by opening an
//     upload session instead (202): the bytes in one PUT to the session's
//     Location, with the digest (the specification's monolithic upload, a
//     POST then a PUT): two requests. A declined mount first HEADs the
//     blob in repo (a registry that keeps one blob store for all its
//     repositories answers 200 there; the session is then deleted and
//     mounted is true).
//
// open is called for each attempt's bytes; the caller bounds and checks
// them. A registry that refuses a monolithic PUT (405 or 501) gets the
// blob from go-containerregistry's remote.Pusher instead (chunked). The
// whole sequence is tried again, WithRetry's attempts and backoff, after a
// failure that retryable accepts. A Location on another host is followed
// only over HTTPS and never to a loopback, private or link-local address
// literal (a hostile registry steering the bytes to an internal service);
// credentials only go to the registry's own host (go-containerregistry's
// bearer transport). Errors: the registry's answer
// (*transport.Error), a refused Location, or open's error.
func (r *Resolver) PutBlob(ctx context.Context, repo name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error), from *name.Repository) (mounted bool, err error) {
	if r == nil {
		return false, errNoResolver
	}
	if from != nil && from.RegistryStr() != repo.RegistryStr() {
		from = nil
	}
	client, err := r.uploadClient(ctx, repo, from)
	if err != nil {
		return false, err
	}
	wait := r.o.backoff
	for attempt := 1; ; attempt++ {
		mounted, err = putBlobOnce(ctx, client, repo, d, open, from)
		if err == nil || attempt >= r.o.attempts || !retryable(err) || ctx.Err() != nil {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return false, context.Cause(ctx)
		}
		wait *= 3
	}
	var fallback *monolithicRefused
	if errors.As(err, &fallback) {
		_, push, _, derr := r.Destination(repo)
		if derr != nil {
			return false, derr
		}
		return false, push.Upload(ctx, repo, &openedLayer{d: d, open: open})
	}
	return mounted, err
}

// monolithicRefused is a registry answering a monolithic PUT with 405 or
// 501: it wants the bytes in PATCH requests.
type monolithicRefused struct{ err error }

func (e *monolithicRefused) Error() string { return e.err.Error() }
func (e *monolithicRefused) Unwrap() error { return e.err }

// putBlobOnce is one try of PutBlob's sequence.
func putBlobOnce(ctx context.Context, client *http.Client, repo name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error), from *name.Repository) (bool, error) {
	u := url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/blobs/uploads/"}
	if from != nil {
		u.RawQuery = url.Values{"mount": {d.Digest.String()}, "from": {from.RepositoryStr()}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusCreated, http.StatusAccepted); err != nil {
		return false, err
	}
	if resp.StatusCode == http.StatusCreated {
		if from != nil {
			return true, nil
		}
		return false, fmt.Errorf("POST %s: the registry answered 201 (done) to an upload that sent no bytes", u.Path)
	}
	loc, err := uploadLocation(resp)
	if err != nil {
		return false, err
	}
	if from != nil {
		// The mount was declined. A registry that stores blobs once for
		// all its repositories (and mounts nothing) may hold it anyway:
		// one HEAD, in this rare case only, before sending the bytes;
		// the session opened is then cancelled.
		if there, err := blobThere(ctx, client, repo, d.Digest); err == nil && there {
			if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, loc.String(), nil); err == nil {
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			return true, nil
		}
	}
	q := loc.Query()
	q.Set("digest", d.Digest.String())
	loc.RawQuery = q.Encode()
	body, err := open()
	if err != nil {
		return false, err
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPut, loc.String(), body)
	if err != nil {
		body.Close()
		return false, err
	}
	req.ContentLength = d.Size
	req.GetBody = open
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err = client.Do(req)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	err = transport.CheckError(resp, http.StatusCreated)
	if err != nil && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		return false, &monolithicRefused{err: err}
	}
	return false, err
}

// blobThere HEADs blob h in repo.
func blobThere(ctx context.Context, client *http.Client, repo name.Repository, h v1.Hash) (bool, error) {
	u := url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/blobs/" + h.String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, transport.CheckError(resp, http.StatusOK, http.StatusNotFound)
}

// uploadLocation is an upload session's Location, resolved against the
// request; another host is accepted only over HTTPS and not as a
// loopback, private or link-local address literal.
func uploadLocation(resp *http.Response) (*url.URL, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, errors.New("the registry opened an upload session without a Location")
	}
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("upload Location: %w", err)
	}
	u = resp.Request.URL.ResolveReference(u)
	if u.Host == resp.Request.URL.Host {
		return u, nil
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("the registry sent the upload to %s over %s: only HTTPS is followed to another host", u.Host, u.Scheme)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()) {
		return nil, fmt.Errorf("the registry sent the upload to %s, an internal address: not followed", u.Host)
	}
	return u, nil
}

// uploadClient is the authenticated client PutBlob writes repo with (push
// scope on repo, pull on from), made once per pair and run through
// go-containerregistry's transport.NewWithContext over the Resolver's
// stack: its ping is the run's (pingCache), its token exchange (a
// registry with bearer tokens) once per pair.
func (r *Resolver) uploadClient(ctx context.Context, repo name.Repository, from *name.Repository) (*http.Client, error) {
	key := repo.Name()
	scopes := []string{repo.Scope(transport.PushScope)}
	if from != nil {
		key += "\x00" + from.Name()
		scopes = append(scopes, from.Scope(transport.PullScope))
	}
	r.mu.Lock()
	if r.uploaders == nil {
		r.uploaders = map[string]*uploader{}
	}
	u := r.uploaders[key]
	if u == nil {
		u = &uploader{}
		r.uploaders[key] = u
	}
	r.mu.Unlock()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.client != nil {
		return u.client, nil
	}
	auth, err := authn.Resolve(ctx, r.o.keychain, repo)
	if err != nil {
		return nil, err
	}
	var inner http.RoundTripper = r.guard
	if r.o.userAgent != "" {
		inner = transport.NewUserAgent(inner, r.o.userAgent)
	}
	t, err := transport.NewWithContext(ctx, repo.Registry, auth, inner, scopes)
	if err != nil {
		return nil, err
	}
	// Redirects: net/http's (at most 10; the body again through
	// GetBody), each checked by the Resolver's stack.
	u.client = &http.Client{Transport: t}
	return u.client, nil
}

// uploader is one repository's upload client, made on first use.
type uploader struct {
	mu     sync.Mutex
	client *http.Client
}

// openedLayer is a blob for remote.Pusher's chunked upload, opened with
// open on each read.
type openedLayer struct {
	d    v1.Descriptor
	open func() (io.ReadCloser, error)
}

func (l *openedLayer) Digest() (v1.Hash, error) { return l.d.Digest, nil }
func (l *openedLayer) DiffID() (v1.Hash, error) {
	return v1.Hash{}, errors.New("diff ID not known for a streamed blob")
}
func (l *openedLayer) Compressed() (io.ReadCloser, error) { return l.open() }
func (l *openedLayer) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("a streamed blob is copied as it is, never uncompressed")
}
func (l *openedLayer) Size() (int64, error) { return l.d.Size, nil }
func (l *openedLayer) MediaType() (types.MediaType, error) {
	if l.d.MediaType == "" {
		return types.OCILayer, nil
	}
	return l.d.MediaType, nil
}
