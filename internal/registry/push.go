package registry

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Push writes img to tag (its manifest, config and layers, then the tag)
// the way Destination writes: directly, plain HTTP only where WithInsecure
// allows it, credentials from the keychain. The error names tag and the
// registry's answer, every password r has read scrubbed.
func (r *Resolver) Push(ctx context.Context, tag name.Tag, img v1.Image) error {
	repo, pusher, _, err := r.Destination(tag.Context())
	if err != nil {
		return err
	}
	if err := pusher.Push(ctx, repo.Tag(tag.TagStr()), img); err != nil {
		return fmt.Errorf("push %s: %s", tag, r.Scrub(err.Error()))
	}
	return nil
}
