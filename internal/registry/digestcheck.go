package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DigestMismatchError is a manifest answer whose body does not hash to the
// Docker-Content-Digest header the registry sent with it. go-containerregistry
// checks a body only against a digest the client asked for, so for a tag
// the digest recorded would be that of a body the registry does not have
// (a proxy or cache between changed it, or the registry is broken); stowage
// refuses it instead.
type DigestMismatchError struct {
	// Registry is the host[:port] that answered.
	Registry string
	// Header is the Docker-Content-Digest sent; Body the digest of the body.
	Header, Body string
}

// Error names both digests and the registry.
func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("the manifest body hashes to %s, but %s sent Docker-Content-Digest %s: refused (a proxy or cache between may have changed the body)",
		e.Body, e.Registry, e.Header)
}

// checkManifestDigest wraps the body of a 200 answer to a manifest GET
// that carries a sha256 Docker-Content-Digest, so that reading it to the
// end fails with a *DigestMismatchError when the bytes hash to something
// else. Docker schema 1 answers are left alone: their header is the digest
// of the unsigned payload, not of the body (stowage refuses schema 1
// anyway, with its own message).
func checkManifestDigest(req *http.Request, resp *http.Response) {
	if req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !strings.Contains(req.URL.Path, "/manifests/") {
		return
	}
	want := resp.Header.Get("Docker-Content-Digest")
	if !strings.HasPrefix(want, "sha256:") {
		return
	}
	if mt := types.MediaType(resp.Header.Get("Content-Type")); mt.IsSchema1() {
		return
	}
	resp.Body = &digestBody{ReadCloser: resp.Body, h: sha256.New(), want: want, host: req.URL.Host}
}

// digestBody hashes what is read and compares at the end of the body.
type digestBody struct {
	io.ReadCloser
	h    hash.Hash
	want string
	host string
}

// Read reads and hashes; at the end of the body a digest other than the
// header's turns io.EOF into a *DigestMismatchError.
func (b *digestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		if got := "sha256:" + hex.EncodeToString(b.h.Sum(nil)); got != b.want {
			return n, &DigestMismatchError{Registry: b.host, Header: b.want, Body: got}
		}
	}
	return n, err
}

// MaxManifestBytes bounds a manifest or an index read from a registry: 4
// MiB, distribution's own limit for a manifest PUT (go-containerregistry
// reads up to 100 MiB). lock, bump, vet --remote and mirror all read
// manifests through this package's transport, so the bound is the same
// for each.
const MaxManifestBytes = 4 << 20

// ManifestTooLargeError is a manifest answer larger than MaxManifestBytes.
type ManifestTooLargeError struct {
	// Registry is the host[:port] that answered; Size the Content-Length
	// it announced, or -1 when the body ran past the bound unannounced.
	Registry string
	Size     int64
}

// Error names the bound and the size.
func (e *ManifestTooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("%s announced a manifest of %d bytes, more than the %d bytes stowage reads: refused", e.Registry, e.Size, MaxManifestBytes)
	}
	return fmt.Sprintf("%s sent a manifest of more than the %d bytes stowage reads: refused", e.Registry, MaxManifestBytes)
}

// limitManifest refuses a manifest GET answer that announces more than
// MaxManifestBytes, and wraps the body of the others so that a read past
// the bound fails with a *ManifestTooLargeError.
func limitManifest(req *http.Request, resp *http.Response) error {
	if req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !strings.Contains(req.URL.Path, "/manifests/") {
		return nil
	}
	if resp.ContentLength > MaxManifestBytes {
		return &ManifestTooLargeError{Registry: req.URL.Host, Size: resp.ContentLength}
	}
	resp.Body = &limitBody{ReadCloser: resp.Body, left: MaxManifestBytes, host: req.URL.Host}
	return nil
}

// limitBody fails a read past its bound.
type limitBody struct {
	io.ReadCloser
	left int64
	host string
}

// Read reads at most the bytes left and one more; that one more is a
// *ManifestTooLargeError.
func (b *limitBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, &ManifestTooLargeError{Registry: b.host, Size: -1}
	}
	return n, err
}
