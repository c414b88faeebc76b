package mirror

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// bytesSent is the upload body bytes sent to host so far.
func (c *wireCount) bytesSent(host string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent[host]
}

// wireCount is an http.RoundTripper under the Resolver that counts every
// request (pings, retries and token requests included) by host and by
// "METHOD kind", kind being ping, manifest, blob, upload or other.
type wireCount struct {
	inner http.RoundTripper

	mu   sync.Mutex
	byOp map[string]map[string]int // host → "METHOD kind" → requests
	// sent are the bytes of the upload bodies, by host.
	sent map[string]int64
}

func (c *wireCount) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := "other"
	switch p := req.URL.Path; {
	case p == "/v2/" || p == "/v2":
		kind = "ping"
	case p == "/v2/_catalog":
		kind = "catalog"
	case strings.Contains(p, "/blobs/uploads"):
		kind = "upload"
	case strings.Contains(p, "/blobs/"):
		kind = "blob"
	case strings.Contains(p, "/manifests/"):
		kind = "manifest"
	}
	c.mu.Lock()
	if c.byOp == nil {
		c.byOp = map[string]map[string]int{}
	}
	if c.byOp[req.URL.Host] == nil {
		c.byOp[req.URL.Host] = map[string]int{}
	}
	c.byOp[req.URL.Host][req.Method+" "+kind]++
	if kind == "upload" && req.ContentLength > 0 {
		if c.sent == nil {
			c.sent = map[string]int64{}
		}
		c.sent[req.URL.Host] += req.ContentLength
	}
	c.mu.Unlock()
	return c.inner.RoundTrip(req)
}

// take returns the counts for host and forgets them, the bytes sent too.
func (c *wireCount) take(host string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.byOp[host]
	delete(c.byOp, host)
	delete(c.sent, host)
	if got == nil {
		got = map[string]int{}
	}
	return got
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func show(m map[string]int) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

// TestMirrorRequestCount pins the requests a small plan costs against the
// real docker-registry, source and site apart: two images in two
// repositories sharing a base layer, and a two-platform index whose
// children share it too (8 distinct blobs at the site: 2 configs and 2 own
// layers for the images, 2 and 2 for the index's children, the base
// mounted into the other repositories). Every request is counted under the
// Resolver, pings and retries included.
func TestMirrorRequestCount(t *testing.T) {
	src := registrytest.Start(t, registrytest.Options{})
	dst := registrytest.Start(t, registrytest.Options{})
	ctx := context.Background()
	base := registrytest.Layer("base", 40000)
	amd := registrytest.Image(t, base, registrytest.Layer("amd64", 3000))
	arm := registrytest.Image(t, base, registrytest.Layer("arm64", 3100))
	idx := registrytest.Index(amd, arm)
	var images []Image
	for _, s := range []struct {
		repo, tag string
		img       v1.Image
		idx       v1.ImageIndex
	}{
		{"team/app-a", "v1", registrytest.Image(t, base, registrytest.Layer("app-a", 5000)), nil},
		{"team/app-b", "v2", registrytest.Image(t, base, registrytest.Layer("app-b", 7000)), nil},
		{"lib/multi", "1.0", nil, idx},
	} {
		images = append(images, push(t, src.Host, s.repo, s.tag, s.img, s.idx))
	}
	wc := &wireCount{inner: http.DefaultTransport.(*http.Transport).Clone()}
	prefix := "site"
	mirrorOnce := func() {
		t.Helper()
		// A Resolver per run, as a command has.
		r, err := registry.New(registry.WithInsecure(src.Host, dst.Host), registry.WithKeychain(authn.NewMultiKeychain()), registry.WithTransport(wc))
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(WithResolver(r), WithToSite(site.Mapping{Default: dst.Host + "/" + prefix}), WithJobs(4))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := m.Plan(ctx, images)
		if err != nil || len(plan.Errors) > 0 {
			t.Fatalf("plan: %v %v", err, plan.Errors)
		}
		if _, err := m.Run(ctx, plan); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what, host string, want map[string]int) {
		t.Helper()
		got := wc.take(host)
		t.Logf("%s: %d requests: %s", what, sumCounts(got), show(got))
		if show(got) != show(want) {
			t.Errorf("%s: %d requests %s\nwant %d: %s", what, sumCounts(got), show(got), sumCounts(want), show(want))
		}
	}
	mirrorOnce()
	// One ping per registry and run: go-containerregistry tries HTTPS
	// first at a host marked insecure (the attempt counted here fails at
	// the TLS handshake), then HTTP. Per image, a HEAD of its tag; per
	// index child, a HEAD by digest; per blob and repository, one HEAD;
	// per blob uploaded a POST and a PUT with the bytes (9: 2 configs
	// and 2 own layers for the images, the same for the children, the
	// base once), per blob mounted a POST (the base into the two other
	// repositories); the children's manifests by digest, each image's
	// own by its tag only (5 PUTs); a HEAD per image to verify; the
	// catalog, once, to look for the blobs no repository of the run
	// holds (the site is empty: none).
	check("copy, site", dst.Host, map[string]int{
		"GET ping": 2, "GET catalog": 1, "HEAD manifest": 3 + 2 + 3, "HEAD blob": 11,
		"POST upload": 9 + 2, "PUT upload": 9, "PUT manifest": 2 + 3,
	})
	// The source: each manifest and blob read once.
	check("copy, source", src.Host, map[string]int{"GET ping": 2, "GET manifest": 5, "GET blob": 9})

	// The rerun: everything is there, a HEAD per image.
	mirrorOnce()
	check("rerun, site", dst.Host, map[string]int{"GET ping": 2, "HEAD manifest": 3})
	check("rerun, source", src.Host, map[string]int{})

	// Into another prefix of the same site: every blob is there under
	// "site/…", told by the catalog: each mounted (one POST), no byte sent.
	prefix = "other/prefix"
	mirrorOnce()
	if n := wc.bytesSent(dst.Host); n != 0 {
		t.Errorf("into another prefix: %d blob bytes sent, want 0 (every blob mounted)", n)
	}
	// The tags HEADed (absent), the children HEADed by digest, the 11
	// blobs HEADed in the run's repositories (absent), the 9 distinct
	// blobs HEADed where the catalog shows them, 11 mounts, the manifests
	// PUT, the images verified.
	check("another prefix, site", dst.Host, map[string]int{
		"GET ping": 2, "GET catalog": 1, "HEAD manifest": 3 + 2 + 3, "HEAD blob": 11 + 9,
		"POST upload": 11, "PUT manifest": 2 + 3,
	})
	check("another prefix, source", src.Host, map[string]int{"GET ping": 2, "GET manifest": 5})
}
