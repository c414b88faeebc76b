package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
)

// fetch is one reference to read: the repository contacted and the
// credential, with the identifier (tag or digest) to ask for.
type fetch struct {
	t    target
	auth *v1alpha1.Auth
}

// head asks for id (a tag or "sha256:…") with HEAD and returns the digest.
// When the registry sends no Docker-Content-Digest, it falls back to one GET
// and hashes the body; the descriptor of that GET is returned too, so the
// caller need not read it again.
func (r *Resolver) head(ctx context.Context, f fetch, id string) (v1.Hash, *remote.Descriptor, *opFailure) {
	p, err := r.puller(f.auth, f.t)
	if err != nil {
		return v1.Hash{}, nil, &opFailure{op: "credentials", err: err}
	}
	ref, err := refAt(f.t.repo, id)
	if err != nil {
		return v1.Hash{}, nil, &opFailure{op: "reference", err: err}
	}
	octx, st := withOp(ctx, f.t.repo.RegistryStr())
	d, err := p.Head(octx, ref)
	if err == nil {
		return d.Digest, nil, nil
	}
	st.mu.Lock()
	noDigest := st.noDigest
	st.mu.Unlock()
	if !noDigest {
		return v1.Hash{}, nil, &opFailure{op: "HEAD " + describeID(id), id: id, err: err, st: st}
	}
	desc, fail := r.get(ctx, f, id)
	if fail != nil {
		return v1.Hash{}, nil, fail
	}
	return desc.Digest, desc, nil
}

// get reads the manifest of id (a tag or "sha256:…") with GET. For a digest,
// go-containerregistry checks the body against it.
func (r *Resolver) get(ctx context.Context, f fetch, id string) (*remote.Descriptor, *opFailure) {
	p, err := r.puller(f.auth, f.t)
	if err != nil {
		return nil, &opFailure{op: "credentials", err: err}
	}
	ref, err := refAt(f.t.repo, id)
	if err != nil {
		return nil, &opFailure{op: "reference", err: err}
	}
	octx, st := withOp(ctx, f.t.repo.RegistryStr())
	d, err := p.Get(octx, ref)
	if err != nil {
		return nil, &opFailure{op: "GET " + describeID(id), id: id, err: err, st: st}
	}
	return d, nil
}

// MaxIndexChildren bounds the child manifests of one index: 1,000, about
// fifty times a real multi-arch image with its attestations.
const MaxIndexChildren = 1000

// entryOf summarises a fetched manifest for the lock (lock.ManifestEntry or
// lock.IndexEntryOf, the functions internal/testing/offlineimage uses too). An index is
// parsed once from the GET's body, and each child with a platform is read
// with one GET by digest. Name and Reference are left to the caller.
func (r *Resolver) entryOf(ctx context.Context, f fetch, d *remote.Descriptor) (lock.Entry, *opFailure) {
	switch {
	case d.MediaType.IsSchema1():
		return lock.Entry{}, &opFailure{op: "GET manifest", err: fmt.Errorf("the registry sent a Docker schema 1 manifest (%s), which has no stable digest to pin; push the image again with a current client", d.MediaType)}
	case d.MediaType.IsIndex():
		im, err := v1.ParseIndexManifest(bytes.NewReader(d.Manifest))
		if err != nil {
			return lock.Entry{}, &opFailure{op: "read index", err: err}
		}
		if n := len(im.Manifests); n > MaxIndexChildren {
			return lock.Entry{}, &opFailure{op: "read index", err: fmt.Errorf("the index lists %d child manifests, more than the %d stowage reads", n, MaxIndexChildren)}
		}
		var childFail *opFailure
		// A child listed several times (under several platforms) is
		// read once.
		read := map[v1.Hash]v1.Image{}
		e, err := lock.IndexEntryOf(d.Digest, im, func(h v1.Hash) (v1.Image, error) {
			if img, ok := read[h]; ok {
				return img, nil
			}
			cd, of := r.get(ctx, f, h.String())
			if of != nil {
				childFail = of
				return nil, of.err
			}
			// IndexEntryOf skips the children listed as indexes; one
			// listed as an image and served as an index is refused, not
			// followed: go-containerregistry's Image would resolve it to
			// one of its own children, and so on down a chain of any
			// length. So an image costs at most MaxIndexChildren + 1
			// manifests, each read once.
			if cd.MediaType.IsIndex() || servesIndex(cd.Manifest) {
				childFail = &opFailure{op: "GET digest " + h.String(), id: h.String(),
					err: fmt.Errorf("child %s is listed as an image manifest, and the registry serves an index (%s); stowage reads one level of index", h, cd.MediaType)}
				return nil, childFail.err
			}
			img, err := cd.Image()
			if err == nil {
				read[h] = img
			}
			return img, err
		})
		if childFail != nil {
			return lock.Entry{}, childFail
		}
		if err != nil {
			return lock.Entry{}, &opFailure{op: "GET the index's child manifests", err: err}
		}
		return e, nil
	default:
		img, err := d.Image()
		if err != nil {
			return lock.Entry{}, &opFailure{op: "read manifest", err: err}
		}
		e, err := lock.ManifestEntry(img)
		if err != nil {
			return lock.Entry{}, &opFailure{op: "read manifest", err: err}
		}
		return e, nil
	}
}

// servesIndex reports whether raw, a manifest, says it is an index (its
// mediaType field, or a manifests list), whatever the Content-Type was.
func servesIndex(raw []byte) bool {
	var m struct {
		MediaType types.MediaType  `json:"mediaType"`
		Manifests *json.RawMessage `json:"manifests"`
	}
	return json.Unmarshal(raw, &m) == nil && (m.MediaType.IsIndex() || m.Manifests != nil)
}

// getEntry GETs id and summarises it: the whole of recording a new entry.
func (r *Resolver) getEntry(ctx context.Context, f fetch, id string) (lock.Entry, *opFailure) {
	d, fail := r.get(ctx, f, id)
	if fail != nil {
		return lock.Entry{}, fail
	}
	return r.entryOf(ctx, f, d)
}

// refAt is repo with a tag or a digest.
func refAt(repo name.Repository, id string) (name.Reference, error) {
	if isDigest(id) {
		return repo.Digest(id), nil
	}
	if id == "" {
		return nil, errors.New("empty tag")
	}
	return repo.Tag(id), nil
}

// describeID names a tag or a digest for messages.
func describeID(id string) string {
	if isDigest(id) {
		return "digest " + id
	}
	return "tag " + id
}

// isDigest reports whether id is "algorithm:hex" rather than a tag.
func isDigest(id string) bool {
	_, err := v1.NewHash(id)
	return err == nil
}
