package registrytest

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/registry"
)

// Write pushes an image (img) or a multi-arch index with its children (idx)
// to ref, exactly one of them non-nil, where r would read ref: through r's
// mirrors, over plain HTTP where r allows it (registry.Resolver.Source). It
// is how tests, the examples' locks and the benchmarks seed a registry.
// With auth nil it pushes with r's Pusher (registry.Resolver.Destination:
// r's keychain, CA, timeouts and retries); with auth, as that user with
// basic auth over go-containerregistry's default transport.
func Write(ctx context.Context, r *registry.Resolver, ref name.Reference, auth *authn.AuthConfig, img v1.Image, idx v1.ImageIndex) error {
	if (img == nil) == (idx == nil) {
		return fmt.Errorf("write %s: give exactly one of an image or an index", ref)
	}
	located, _, err := r.Source(ref.Context(), nil)
	if err != nil {
		return fmt.Errorf("write %s: %w", ref, err)
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	repo := located
	if auth != nil {
		opts = append(opts, remote.WithAuth(authn.FromConfig(*auth)))
	} else {
		var pusher *remote.Pusher
		if repo, pusher, _, err = r.Destination(located); err != nil {
			return fmt.Errorf("write %s: %w", ref, err)
		}
		opts = append(opts, remote.Reuse(pusher))
	}
	var to name.Reference = repo.Tag(ref.Identifier())
	if d, ok := ref.(name.Digest); ok {
		to = repo.Digest(d.DigestStr())
	}
	if img != nil {
		err = remote.Write(to, img, opts...)
	} else {
		err = remote.WriteIndex(to, idx, opts...)
	}
	if err != nil {
		return fmt.Errorf("write %s: %s", to, r.Scrub(err.Error()))
	}
	return nil
}
