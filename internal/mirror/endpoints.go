package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
)

// maxManifestBytes bounds a manifest read from a source (distribution's own
// limit for a manifest PUT is 4 MiB).
const maxManifestBytes = 4 << 20

// source is where images are read.
type source interface {
	// where names the source of img in messages.
	where(img *Image) string
	// manifest reads the manifest h of img, checked against h.
	manifest(ctx context.Context, img *Image, h v1.Hash) ([]byte, types.MediaType, error)
	// blob opens the blob d of img as a stream checked against d.
	blob(ctx context.Context, img *Image, d v1.Descriptor) (io.ReadCloser, error)
}

// sink is where images go.
type sink interface {
	// repo is the destination repository of img.
	repo(img *Image) (name.Repository, error)
	// where names the destination repository in messages.
	where(repo name.Repository) string
	// blobKey is the scope in which blob presence counts: the repository
	// for a registry, "" for a layout (one blob store).
	blobKey(repo name.Repository) string
	// head resolves id (a tag or a digest) in repo; ok is false when it
	// does not exist.
	head(ctx context.Context, img *Image, repo name.Repository, id string) (v1.Hash, bool, error)
	hasBlob(ctx context.Context, repo name.Repository, h v1.Hash) (bool, error)
	upload(ctx context.Context, repo name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error)) error
	mount(ctx context.Context, repo, from name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error)) error
	putManifest(ctx context.Context, repo name.Repository, n *node) error
	tag(ctx context.Context, img *Image, repo name.Repository, n *node) error
	// finish completes the destination after the copies (a layout's
	// index.json); images are the ones copied or present.
	finish(ctx context.Context, images []*PlannedImage) error
	// reference is the image's name at the destination, for the plan.
	reference(img *Image, repo name.Repository) string
}

// rawManifest is a manifest to PUT as-is, so that its digest is kept.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// registrySource reads images from their registries.
type registrySource struct{ r *registry.Resolver }

func (s *registrySource) where(img *Image) string {
	repo, _, err := s.r.Source(img.Source, nil)
	if err != nil {
		return img.Source.RegistryStr()
	}
	return repo.RegistryStr()
}

func (s *registrySource) manifest(ctx context.Context, img *Image, h v1.Hash) ([]byte, types.MediaType, error) {
	repo, p, err := s.r.Source(img.Source, img.Auth)
	if err != nil {
		return nil, "", err
	}
	d, err := p.Get(ctx, repo.Digest(h.String()))
	if err != nil {
		return nil, "", err
	}
	return d.Manifest, d.MediaType, nil
}

func (s *registrySource) blob(ctx context.Context, img *Image, d v1.Descriptor) (io.ReadCloser, error) {
	repo, p, err := s.r.Source(img.Source, img.Auth)
	if err != nil {
		return nil, err
	}
	l, err := p.Layer(ctx, repo.Digest(d.Digest.String()))
	if err != nil {
		return nil, err
	}
	// go-containerregistry checks the digest as the stream ends.
	return l.Compressed()
}

// layoutSource reads images from an OCI image layout, every file through
// an os.Root on its directory, never through a link, each bounded.
type layoutSource struct {
	path string
	root *os.Root
}

func openLayoutSource(path string) (*layoutSource, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	if _, err := confined.ReadInRoot(root, path, layoutName, layoutKind); err != nil {
		root.Close()
		return nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	for _, d := range []string{blobsDir, blobsDir + "/sha256"} {
		if err := checkDir(root, path, d); err != nil {
			root.Close()
			return nil, err
		}
	}
	return &layoutSource{path: path, root: root}, nil
}

func (s *layoutSource) where(*Image) string { return "oci:" + s.path }

// has reports whether the bundle has a file for blob h (a delta bundle
// leaves some out).
func (s *layoutSource) has(h v1.Hash) bool {
	fi, err := s.root.Lstat(blobName(h))
	return err == nil && fi.Mode().IsRegular()
}

func (s *layoutSource) manifest(_ context.Context, _ *Image, h v1.Hash) ([]byte, types.MediaType, error) {
	f, err := openBlob(s.root, s.path, h)
	if err != nil {
		return nil, "", fmt.Errorf("manifest %s is not in the bundle: %w", h, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(raw) > maxManifestBytes {
		return nil, "", fmt.Errorf("manifest %s is larger than %d bytes", h, maxManifestBytes)
	}
	got, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil || got != h {
		return nil, "", fmt.Errorf("manifest %s: the bundle's file has digest %s", h, got)
	}
	return raw, sniffMediaType(raw), nil
}

func (s *layoutSource) blob(_ context.Context, _ *Image, d v1.Descriptor) (io.ReadCloser, error) {
	f, err := openBlob(s.root, s.path, d.Digest)
	if err != nil {
		return nil, fmt.Errorf("blob %s is not in the bundle: %w", d.Digest, err)
	}
	return newVerifier(f, d), nil
}

// sniffMediaType is a manifest's own mediaType field; an OCI manifest may
// leave it out, then an index is told by its "manifests" list.
func sniffMediaType(raw []byte) types.MediaType {
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
	}
	if json.Unmarshal(raw, &m) == nil && m.MediaType != "" {
		return m.MediaType
	}
	if len(m.Manifests) > 0 {
		return types.OCIImageIndex
	}
	return types.OCIManifestSchema1
}

// verifier checks a stream against its descriptor's size and digest as it
// ends.
type verifier struct {
	rc   io.ReadCloser
	d    v1.Descriptor
	h    hash.Hash
	n    int64
	done bool
}

func newVerifier(rc io.ReadCloser, d v1.Descriptor) *verifier {
	return &verifier{rc: rc, d: d, h: sha256.New()}
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.d.Size > 0 && v.n > v.d.Size {
		return n, fmt.Errorf("blob %s: more than its %d bytes", v.d.Digest, v.d.Size)
	}
	if err == io.EOF && !v.done {
		v.done = true
		if v.d.Size > 0 && v.n != v.d.Size {
			return n, fmt.Errorf("blob %s: %d bytes, want %d", v.d.Digest, v.n, v.d.Size)
		}
		if got := "sha256:" + hex.EncodeToString(v.h.Sum(nil)); got != v.d.Digest.String() {
			return n, fmt.Errorf("blob %s: content has digest %s", v.d.Digest, got)
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.rc.Close() }

// registrySink writes to a site registry.
type registrySink struct {
	r *registry.Resolver
	// site maps images without a Site (and must agree with the Site of
	// the others); nil when every image names its own.
	site *site.Mapping
}

// repo is img.Site, or where the mapping puts img when it names none; an
// image whose Site the mapping would move is refused (SiteConflictError).
func (s *registrySink) repo(img *Image) (name.Repository, error) {
	var to name.Repository
	if s.site != nil {
		mapped, err := s.site.Repository(img.Source)
		if err != nil {
			return name.Repository{}, err
		}
		to = mapped
	}
	if img.Site != "" {
		own, err := name.NewRepository(img.Site, name.StrictValidation)
		if err != nil {
			return name.Repository{}, fmt.Errorf("site repository %q: %w", img.Site, err)
		}
		if s.site != nil && to.Name() != own.Name() {
			return name.Repository{}, &SiteConflictError{Site: own.Name(), To: to.Name()}
		}
		to = own
	} else if s.site == nil {
		return name.Repository{}, errNoSite
	}
	repo, _, _, err := s.r.Destination(to)
	return repo, err
}

// SiteConflictError is an image whose recorded site repository (where
// render points) is not where the destination mapping (--to) puts it.
type SiteConflictError struct {
	// Site is the image's own site repository, To the mapping's.
	Site, To string
}

// Error names both repositories and the way out.
func (e *SiteConflictError) Error() string {
	return fmt.Sprintf("render points at %s, the destination given would write %s; leave --to out (the images go where render points) or give the prefix that puts them there", e.Site, e.To)
}

// errNoSite is an image that names no site repository sent to a registry
// without a mapping.
var errNoSite = errors.New("no site repository is recorded for it (the config named no site registry when it was bundled); give --to HOST[:PORT][/PREFIX]")

func (s *registrySink) where(repo name.Repository) string { return repo.RegistryStr() }
func (s *registrySink) blobKey(repo name.Repository) string {
	return repo.Name()
}

func (s *registrySink) reference(img *Image, repo name.Repository) string {
	if img.Tag != "" {
		return repo.Name() + ":" + img.Tag + "@" + img.Digest.String()
	}
	return repo.Name() + "@" + img.Digest.String()
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

func (s *registrySink) head(ctx context.Context, _ *Image, repo name.Repository, id string) (v1.Hash, bool, error) {
	_, _, p, err := s.r.Destination(repo)
	if err != nil {
		return v1.Hash{}, false, err
	}
	ref, err := refAt(repo, id)
	if err != nil {
		return v1.Hash{}, false, err
	}
	d, err := p.Head(ctx, ref)
	switch {
	case isNotFound(err):
		return v1.Hash{}, false, nil
	case err != nil:
		return v1.Hash{}, false, err
	}
	return d.Digest, true, nil
}

func refAt(repo name.Repository, id string) (name.Reference, error) {
	if _, err := v1.NewHash(id); err == nil {
		return repo.Digest(id), nil
	}
	return repo.Tag(id), nil
}

func (s *registrySink) hasBlob(ctx context.Context, repo name.Repository, h v1.Hash) (bool, error) {
	_, _, p, err := s.r.Destination(repo)
	if err != nil {
		return false, err
	}
	l, err := p.Layer(ctx, repo.Digest(h.String()))
	if err != nil {
		return false, err
	}
	ml, ok := l.(*remote.MountableLayer)
	if !ok {
		return false, fmt.Errorf("blob %s: cannot ask whether it exists", h)
	}
	return ml.Exists()
}

func (s *registrySink) upload(ctx context.Context, repo name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error)) error {
	// A POST and a PUT with the bytes (registry.PutBlob): the plan's
	// HEAD already found the blob missing.
	_, err := s.r.PutBlob(ctx, repo, d, open, nil)
	return err
}

func (s *registrySink) mount(ctx context.Context, repo, from name.Repository, d v1.Descriptor, open func() (io.ReadCloser, error)) error {
	// One POST asking the registry to mount the blob from the other
	// repository; a registry that declines opens an upload session,
	// which gets the bytes (registry.PutBlob).
	_, err := s.r.PutBlob(ctx, repo, d, open, &from)
	return err
}

func (s *registrySink) putManifest(ctx context.Context, repo name.Repository, n *node) error {
	_, push, _, err := s.r.Destination(repo)
	if err != nil {
		return err
	}
	return push.Put(ctx, repo.Digest(n.digest.String()), rawManifest{raw: n.raw, mt: n.mt})
}

func (s *registrySink) tag(ctx context.Context, img *Image, repo name.Repository, n *node) error {
	_, push, _, err := s.r.Destination(repo)
	if err != nil {
		return err
	}
	return push.Put(ctx, repo.Tag(img.Tag), rawManifest{raw: n.raw, mt: n.mt})
}

func (s *registrySink) finish(context.Context, []*PlannedImage) error { return nil }
