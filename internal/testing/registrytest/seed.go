package registrytest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// SeedStandIns pushes the deterministic stand-in (internal/testing/offlineimage) of every
// reference through r, so r's mirrors and insecure marks decide where each
// lands, on up to jobs goroutines. auth, when not nil, is sent as basic
// auth. Every failure is reported.
func SeedStandIns(ctx context.Context, r *registry.Resolver, auth *authn.AuthConfig, refs []string, jobs int) error {
	jobs = max(jobs, 1)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
		next = make(chan string)
	)
	for range jobs {
		wg.Go(func() {
			for s := range next {
				if err := seedOne(ctx, r, auth, s); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		})
	}
	for _, s := range refs {
		next <- s
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("seeding stand-ins: %s", strings.Join(errs, "; "))
	}
	return nil
}

func seedOne(ctx context.Context, r *registry.Resolver, auth *authn.AuthConfig, s string) error {
	ref, err := name.ParseReference(s)
	if err != nil {
		return err
	}
	img, idx, err := offlineimage.For(ref)
	if err != nil {
		return err
	}
	return Write(ctx, r, ref, auth, img, idx)
}

// MirrorPath is the repository path under which a test registry keeps the
// images of registry reg (host[:port] as pkg/name normalises it): reg with
// ':' written '-', a valid repository path component.
func MirrorPath(reg string) string {
	return strings.ReplaceAll(reg, ":", "-")
}
