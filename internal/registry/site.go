package registry

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/stowage/stowage/internal/plan"
)

// VerifySite checks with one HEAD each (a GET where the registry sends no
// Docker-Content-Digest) that the site registry holds every manifest of
// ms (plan.Plan.SiteManifests) at its site repository, by digest: what a
// node pulls with no other registry reachable. The repository is contacted
// as named, never through WithMirror or WithSite; plain HTTP only where
// WithInsecure allows it. Credentials are the ones the rendered pull
// Secret carries to that registry (the image's config auth, whose
// password is read then), else the Docker config and credential helpers,
// else anonymous. The error is Errors, one *ImageError per manifest that
// the site lacks (404) or that could not be checked; its Image is the
// pinned site reference, its Op names the digest and, for an index child,
// the platform. The failures are also returned one by one, in ms's order.
func (r *Resolver) VerifySite(ctx context.Context, ms []plan.SiteManifest) ([]SiteFailure, error) {
	if r == nil {
		return nil, errNoResolver
	}
	ctx, cancel := r.runContext(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		failed = make([]*ImageError, len(ms))
	)
	r.each(ctx, len(ms), func(i int) string { return ms[i].Reference }, func(ctx context.Context, i int) {
		m := ms[i]
		var opts []name.Option
		if r.o.insecure[m.Repository.RegistryStr()] {
			opts = append(opts, name.Insecure)
		}
		repo, err := name.NewRepository(m.Repository.Name(), opts...)
		t := target{repo: repo}
		var of *opFailure
		if err != nil {
			of = &opFailure{op: "reference", err: err}
		} else {
			_, _, of = r.head(ctx, fetch{t: t, auth: m.Image.Auth}, m.Digest)
		}
		if of == nil {
			return
		}
		if m.Platform != "" {
			of.op += " (index child " + m.Platform + ")"
		}
		ie := r.imageError(m.Image, t, of)
		ie.Image = m.Reference
		mu.Lock()
		failed[i] = ie
		mu.Unlock()
	})
	var (
		out  []SiteFailure
		errs Errors
	)
	for i, ie := range failed {
		if ie == nil {
			continue
		}
		var te *transport.Error
		out = append(out, SiteFailure{Manifest: ms[i], Err: ie, Missing: errors.As(ie.Err, &te) && te.StatusCode == http.StatusNotFound})
		errs = append(errs, ie)
	}
	if len(errs) > 0 {
		return out, errs.Sorted()
	}
	return nil, nil
}

// SiteFailure is a manifest VerifySite did not find at the site.
type SiteFailure struct {
	// Manifest is the manifest checked.
	Manifest plan.SiteManifest
	// Err says what was asked and the registry's answer.
	Err *ImageError
	// Missing is set when the registry answered 404 (it lacks the
	// manifest); unset when it could not be asked or gave another answer.
	Missing bool
}
