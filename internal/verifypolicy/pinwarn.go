package verifypolicy

import (
	"context"
	"fmt"
	"io"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
)

// PinWarn is Pin on next, the lock r.Lock returned from old for images
// with lockErr its error, writing on stderr a warning for each signature
// an optional policy could not verify and for each one an admission kind
// of a profile using the image cannot read (UnreadableSignatures: render
// would refuse the profile). Its results are Pin's.
func PinWarn(ctx context.Context, stderr io.Writer, r *registry.Resolver, cfg *v1alpha1.Config, old, next *lock.Lock, images []*plan.Image, lockErr error) (*lock.Lock, error) {
	out, warnings, err := Pin(ctx, r, cfg, old, next, images, lockErr)
	for _, w := range warnings {
		if w.Verified {
			fmt.Fprintf(stderr, "stowage: warning: %s; pinned, verified under another of its policies (this one's mode is optional)\n", escape.Line(w.Err.Error()))
		} else {
			fmt.Fprintf(stderr, "stowage: warning: %s; pinned unverified (%s.mode is optional)\n", escape.Line(w.Err.Error()), w.At)
		}
	}
	// A signature the site's admission controller cannot read: render
	// will refuse the profile, so say it now, naming image and kind.
	if out != nil {
		for _, u := range UnreadableSignatures(cfg, out, images) {
			fmt.Fprintf(stderr, "stowage: warning: %s\n", escape.Line(u.String()))
		}
	}
	return out, err
}
