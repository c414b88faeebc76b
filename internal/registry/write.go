package registry

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Write pushes an image (img) or a multi-arch index with its children (idx)
// to ref, exactly one of them non-nil, through the resolver's mirrors,
// insecure marks, CA, timeouts and retries. It is how a registry is seeded
// with stand-in images (tests, the examples' locks, the benchmark). auth is
// a user name and password sent as-is (never a config source), or nil for
// the keychain; the password is scrubbed from errors.
func (r *Resolver) Write(ctx context.Context, ref name.Reference, auth *authn.AuthConfig, img v1.Image, idx v1.ImageIndex) error {
	if r == nil {
		return errNoResolver
	}
	if (img == nil) == (idx == nil) {
		return fmt.Errorf("write %s: give exactly one of an image or an index", ref)
	}
	t, err := r.locate(ref.Context())
	if err != nil {
		return err
	}
	to, err := refAt(t.repo, ref.Identifier())
	if err != nil {
		return err
	}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(r.guard),
		remote.WithRetryBackoff(remote.Backoff{Duration: r.o.backoff, Factor: 3, Jitter: 0.1, Steps: r.o.attempts}),
		remote.WithRetryStatusCodes(retryStatusCodes...),
		remote.WithRetryPredicate(retryable),
	}
	if auth != nil {
		opts = append(opts, remote.WithAuth(authn.FromConfig(*auth)))
		r.secrets.addBasic(auth.Username, auth.Password)
	} else {
		opts = append(opts, remote.WithAuthFromKeychain(r.o.keychain))
	}
	if img != nil {
		err = remote.Write(to, img, opts...)
	} else {
		err = remote.WriteIndex(to, idx, opts...)
	}
	if err != nil {
		return fmt.Errorf("write %s: %s", to, r.scrub(err.Error()))
	}
	return nil
}
