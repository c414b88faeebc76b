package registry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestVerifySite: against the in-process registry, every manifest the
// site holds passes with one HEAD by digest at the site repository as
// named; a child the site lacks is a failure marked missing, naming the
// site reference, the digest and the platform; a manifest the registry
// does not answer for (500) is a failure not marked missing.
func TestVerifySite(t *testing.T) {
	h, f := server(t)
	r := resolver(t, registry.WithInsecure(h), registry.WithRetry(1, 0))
	src := kindOf(t, h+"/site/ghcr.io/example-org/multi", true)
	seed(t, r, nil, src)
	e := standinEntry(t, src)
	img := image(t, "ghcr.io/example-org/multi:"+src[strings.LastIndex(src, ":")+1:])
	repo, err := name.NewRepository(h + "/site/ghcr.io/example-org/multi")
	if err != nil {
		t.Fatal(err)
	}
	ref := src + "@" + e.Digest
	ms := []plan.SiteManifest{{Image: img, Reference: ref, Repository: repo, Digest: e.Digest}}
	for _, c := range e.Platforms {
		ms = append(ms, plan.SiteManifest{Image: img, Reference: ref, Repository: repo, Digest: c.Digest, Platform: c.Platform})
	}
	f.Reset()
	if failed, err := r.VerifySite(context.Background(), ms); err != nil || failed != nil {
		t.Fatalf("VerifySite of a complete site: %v %v", failed, err)
	}
	if n := f.Count(http.MethodHead, "/v2/site/ghcr.io/example-org/multi/manifests/sha256:"); n != 3 {
		t.Errorf("%d HEADs by digest at the site repository, want 3: %v", n, f.Requests())
	}

	absent := "sha256:" + strings.Repeat("0", 64)
	broken := "sha256:" + strings.Repeat("1", 64)
	ms = append(ms,
		plan.SiteManifest{Image: img, Reference: ref, Repository: repo, Digest: absent, Platform: "linux/s390x"},
		plan.SiteManifest{Image: img, Reference: ref, Repository: repo, Digest: broken, Platform: "linux/ppc64le"})
	f.Add(registrytest.Rule{Path: broken, Fault: registrytest.Status(http.StatusInternalServerError, nil)})
	failed, err := r.VerifySite(context.Background(), ms)
	var es registry.Errors
	if !errors.As(err, &es) || len(es) != 2 || len(failed) != 2 {
		t.Fatalf("VerifySite with two bad manifests: %v (%d failures)", err, len(failed))
	}
	if got := failed[0]; !got.Missing || got.Manifest.Digest != absent ||
		!strings.Contains(got.Err.Error(), `image "`+ref+`"`) ||
		!strings.Contains(got.Err.Error(), "HEAD digest "+absent+" (index child linux/s390x): 404 Not Found") {
		t.Errorf("absent child: missing %v, %v", got.Missing, got.Err)
	}
	if got := failed[1]; got.Missing || got.Manifest.Digest != broken || !strings.Contains(got.Err.Error(), "500 Internal Server Error") {
		t.Errorf("broken child: missing %v, %v", got.Missing, got.Err)
	}
}
