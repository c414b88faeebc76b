package registry_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// server is the in-process registry behind a fault injector.
func server(t *testing.T) (host string, f *registrytest.Faults) {
	t.Helper()
	f = &registrytest.Faults{Next: ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), f
}

func resolver(t *testing.T, opts ...registry.Option) *registry.Resolver {
	t.Helper()
	r, err := registry.New(append([]registry.Option{registry.WithRetry(3, time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func seed(t *testing.T, r *registry.Resolver, auth *authn.AuthConfig, refs ...string) {
	t.Helper()
	if err := registrytest.SeedStandIns(context.Background(), r, auth, refs, 2); err != nil {
		t.Fatal(err)
	}
}

func image(t *testing.T, s string) *plan.Image {
	t.Helper()
	ref, err := imageref.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return &plan.Image{Key: ref.Key(), Ref: ref}
}

// kindOf returns repo:tag for the first tag v1, v2, … whose stand-in is an
// index (index true) or a single manifest.
func kindOf(t *testing.T, repo string, index bool) string {
	t.Helper()
	for i := 1; i < 100; i++ {
		s := repo + ":v" + string(rune('0'+i/10)) + string(rune('0'+i%10))
		if offlineimage.IsIndex(mustRef(t, s)) == index {
			return s
		}
	}
	t.Fatal("no tag of the kind wanted")
	return ""
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func standinEntry(t *testing.T, s string) lock.Entry {
	t.Helper()
	e, err := offlineimage.Entry(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// allAccept are the media types a manifest request must accept, so that a
// registry never converts (schema 1) or hides (index) what the tag holds.
var allAccept = []string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}

// TestFillMatchesStandIns resolves a single manifest and an index: the
// entries equal internal/testing/offlineimage's, a new entry costs one GET with the full
// Accept list, and an index one more GET per child.
func TestFillMatchesStandIns(t *testing.T) {
	h, f := server(t)
	r := resolver(t, registry.WithInsecure(h))
	single, multi := kindOf(t, h+"/a/single", false), kindOf(t, h+"/a/multi", true)
	seed(t, r, nil, single, multi)
	f.Reset()
	l, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, single), image(t, multi)}, registry.Fill)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{single, multi} {
		want := standinEntry(t, s)
		got, ok := l.Lookup(want.Name)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("entry of %s = %+v, want %+v", s, got, want)
		}
	}
	tagGets := 0
	for _, req := range f.Requests() {
		if !strings.Contains(req.Path, "/manifests/") {
			continue
		}
		if req.Method != http.MethodGet {
			t.Errorf("%s %s: want only GETs for new entries", req.Method, req.Path)
		}
		if strings.Contains(req.Path, "/manifests/v") {
			tagGets++
			for _, mt := range allAccept {
				if !strings.Contains(req.Accept, mt) {
					t.Errorf("GET %s: Accept %q lacks %s", req.Path, req.Accept, mt)
				}
			}
		}
	}
	if tagGets != 2 {
		t.Errorf("%d GETs by tag, want 2", tagGets)
	}
	if n := f.Count(http.MethodGet, "/a/multi/manifests/sha256:"); n != 2 {
		t.Errorf("%d GETs of the index's children, want 2", n)
	}
	if n := f.Count("", "/a/single/manifests/sha256:"); n != 0 {
		t.Errorf("%d requests by digest for the single manifest, want 0", n)
	}
}

// TestRefresh: a steady bump is one HEAD per image and nothing else; a
// moved tag is read again by the digest the HEAD answered.
func TestRefresh(t *testing.T) {
	h, f := server(t)
	r := resolver(t, registry.WithInsecure(h))
	single, multi := kindOf(t, h+"/a/single", false), kindOf(t, h+"/a/multi", true)
	seed(t, r, nil, single, multi)
	images := []*plan.Image{image(t, single), image(t, multi)}
	old, err := r.Lock(context.Background(), nil, images, registry.Fill)
	if err != nil {
		t.Fatal(err)
	}

	f.Reset()
	same, err := r.Lock(context.Background(), old, images, registry.Refresh)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(same, old) {
		t.Errorf("steady refresh changed the lock")
	}
	if got := len(f.Requests()); got != 2 || f.Count(http.MethodHead, "/manifests/") != 2 {
		t.Errorf("steady refresh sent %v, want exactly one HEAD per image (the pings were done)", f.Requests())
	}

	// Move the single tag to what another reference's stand-in is.
	other := kindOf(t, h+"/a/other", true)
	img, idx, err := offlineimage.For(mustRef(t, other))
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.Write(context.Background(), r, mustRef(t, single), nil, img, idx); err != nil {
		t.Fatal(err)
	}
	f.Reset()
	moved, err := r.Lock(context.Background(), old, images, registry.Refresh)
	if err != nil {
		t.Fatal(err)
	}
	want := standinEntry(t, other)
	want.Name, want.Reference = image(t, single).Key, single
	if got, _ := moved.Lookup(want.Name); !reflect.DeepEqual(got, want) {
		t.Errorf("moved entry = %+v, want %+v", got, want)
	}
	if n := f.Count(http.MethodGet, "/a/single/manifests/"+want.Digest); n != 1 {
		t.Errorf("%d GETs of the new digest, want 1: %v", n, f.Requests())
	}
}

// TestPins: a digest written in the config is recorded with one GET by
// digest, checked with one HEAD by a refresh, and named when it is gone.
func TestPins(t *testing.T) {
	h, f := server(t)
	r := resolver(t, registry.WithInsecure(h))
	src := kindOf(t, h+"/a/pinned", true)
	seed(t, r, nil, src)
	d := standinEntry(t, src).Digest
	pin := image(t, src+"@"+d)
	f.Reset()
	l, err := r.Lock(context.Background(), nil, []*plan.Image{pin}, registry.Fill)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := l.Lookup(pin.Ref.Key())
	if e.Digest != d || e.Reference != pin.Ref.Written || e.Kind != lock.KindIndex || len(e.Platforms) != 2 {
		t.Errorf("pinned entry = %+v", e)
	}
	if n := f.Count(http.MethodGet, "/manifests/"+d); n != 1 || f.Count("", "/manifests/v") != 0 {
		t.Errorf("pin recorded with %v, want one GET by digest and nothing by tag", f.Requests())
	}
	f.Reset()
	if _, err := r.Lock(context.Background(), l, []*plan.Image{pin}, registry.Refresh); err != nil {
		t.Fatal(err)
	}
	if got := f.Requests(); len(got) != 1 || got[0].Method != http.MethodHead || !strings.HasSuffix(got[0].Path, d) {
		t.Errorf("refresh of a pin sent %v, want one HEAD by digest", got)
	}

	gone := image(t, h+"/a/pinned@sha256:"+strings.Repeat("0", 64))
	_, err = r.Lock(context.Background(), nil, []*plan.Image{gone}, registry.Fill)
	var ie *registry.ImageError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "404 Not Found") || !strings.Contains(err.Error(), "the digest does not exist in this repository") {
		t.Errorf("unknown pin: %v", err)
	}
	if err := r.Verify(context.Background(), []registry.Pin{{Image: gone, Digest: gone.Ref.Digest}}); err == nil || !strings.Contains(err.Error(), "HEAD digest sha256:0000") {
		t.Errorf("Verify of an unknown digest: %v", err)
	}
	if err := r.Verify(context.Background(), []registry.Pin{{Image: pin, Digest: d}}); err != nil {
		t.Errorf("Verify of a pushed digest: %v", err)
	}
}

// TestPlatforms: a requested platform must be a child of the index
// ("linux/arm64" matches a recorded "linux/arm64/v8"), or the platform of a
// single manifest's config, which the lock then records.
func TestPlatforms(t *testing.T) {
	h, _ := server(t)
	r := resolver(t, registry.WithInsecure(h))
	single, multi := kindOf(t, h+"/a/single", false), kindOf(t, h+"/a/multi", true)
	seed(t, r, nil, single, multi)
	tests := []struct {
		ref       string
		platforms []string
		err       string
	}{
		{multi, []string{"linux/arm64"}, ""},
		{multi, []string{"linux/amd64", "linux/arm64/v8"}, ""},
		{multi, []string{"linux/s390x"}, "no platform linux/s390x (available: linux/amd64, linux/arm64/v8)"},
		// A single manifest serves its own platform, read from its
		// config (the stand-in's is linux/amd64), and no other.
		{single, []string{"linux/amd64"}, ""},
		{single, []string{"linux/arm64"}, "single manifest for linux/amd64 (available: linux/amd64)"},
	}
	for _, tc := range tests {
		img := image(t, tc.ref)
		img.Platforms = tc.platforms
		l, err := r.Lock(context.Background(), nil, []*plan.Image{img}, registry.Fill)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %v: %v", tc.ref, tc.platforms, err)
		case tc.err == "" && tc.ref == single:
			e := l.Entries[0]
			if e.Platform != "linux/amd64" || e.Kind != lock.KindManifest {
				t.Errorf("%s: entry %+v, want the manifest with platform linux/amd64", tc.ref, e)
			}
			p := plan.PinOf(img.Ref, tc.platforms, l)
			if p.Digest != e.Digest || p.Why != plan.PinManifest || len(p.Errs) > 0 {
				t.Errorf("%s %v pins %+v, want the manifest itself", tc.ref, tc.platforms, p)
			}
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %v: error %v, want %q", tc.ref, tc.platforms, err, tc.err)
		}
	}
}

// TestMirror reads a registry's images at a mirror path; the entries keep
// the original names.
func TestMirror(t *testing.T) {
	h, f := server(t)
	r := resolver(t, registry.WithInsecure(h), registry.WithMirror("docker.io", h+"/hub"))
	ref := "busybox:1.31.1"
	seed(t, r, nil, ref)
	if f.Count(http.MethodPut, "/v2/hub/library/busybox/manifests/1.31.1") != 1 {
		t.Fatalf("seeding did not go to the mirror path: %v", f.Requests())
	}
	l, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, ref)}, registry.Fill)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Marshal(), (&lock.Lock{Entries: []lock.Entry{standinEntry(t, ref)}}).Marshal(); string(got) != string(want) {
		t.Errorf("lock through a mirror:\n%s\nwant\n%s", got, want)
	}
}

// staticKeychain answers one credential for every registry.
type staticKeychain authn.AuthConfig

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return authn.FromConfig(authn.AuthConfig(k)), nil
}

// TestCredentialOrder: the config's credentials win for their image; the
// keychain serves the others; a missing password source is named.
func TestCredentialOrder(t *testing.T) {
	h, f := server(t)
	push := resolver(t, registry.WithInsecure(h))
	app, tool := h+"/a/app:1", h+"/a/tool:1"
	seed(t, push, nil, app, tool)
	f.Add(registrytest.Rule{Path: "/a/app/", Fault: registrytest.RequireBasic("alice", "alice-pw")})
	f.Add(registrytest.Rule{Path: "/a/tool/", Fault: registrytest.RequireBasic("bob", "bob-pw")})
	f.Add(registrytest.Rule{Path: "/v2/", Fault: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.URL.Path == "/v2/" && r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}})
	r := resolver(t, registry.WithInsecure(h),
		registry.WithKeychain(staticKeychain{Username: "bob", Password: "bob-pw"}),
		registry.WithPasswords(func(src string) ([]byte, error) {
			if src == "env:ALICE" {
				return []byte("alice-pw"), nil
			}
			return nil, errors.New("environment variable " + strings.TrimPrefix(src, "env:") + " is not set")
		}))
	a := image(t, app)
	a.Auth = &v1alpha1.Auth{Username: "alice", Password: "env:ALICE"}
	if _, err := r.Lock(context.Background(), nil, []*plan.Image{a, image(t, tool)}, registry.Fill); err != nil {
		t.Fatalf("config credentials for app, keychain for tool: %v", err)
	}
	a.Auth.Password = "env:MISSING"
	_, err := r.Lock(context.Background(), nil, []*plan.Image{a}, registry.Fill)
	if err == nil || !strings.Contains(err.Error(), "environment variable MISSING is not set") {
		t.Errorf("missing password source: %v", err)
	}
}

// TestPasswordNeverInErrors: a registry that echoes the password in its
// error gets it replaced.
func TestPasswordNeverInErrors(t *testing.T) {
	h, f := server(t)
	const pw = "s3cret-[p~a_s.s>w=o\"r%d;\\"
	f.Add(registrytest.Rule{Path: "/v2/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		user, pass, _ := r.BasicAuth()
		msg, _ := json.Marshal("bad password " + pass + " for " + user)
		w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":` + string(msg) + `}]}`))
	}})
	r := resolver(t, registry.WithInsecure(h), registry.WithPasswords(func(string) ([]byte, error) { return []byte(pw), nil }))
	img := image(t, h+"/a/app:1")
	img.Auth = &v1alpha1.Auth{Username: "alice", Password: "env:P"}
	_, err := r.Lock(context.Background(), nil, []*plan.Image{img}, registry.Fill)
	if err == nil || !strings.Contains(err.Error(), "bad password *** for alice") || strings.Contains(err.Error(), pw) {
		t.Errorf("error = %v; want the registry's message with the password replaced", err)
	}
}

// TestPlainHTTPRefused: a registry not marked insecure is never sent a
// plain HTTP request, loopback included.
func TestPlainHTTPRefused(t *testing.T) {
	h, f := server(t)
	r := resolver(t)
	_, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	var pe *registry.PlainHTTPError
	if !errors.As(err, &pe) || pe.Host != h || !strings.Contains(err.Error(), "--insecure-registry "+h) {
		t.Errorf("error = %v, want a refusal naming --insecure-registry %s", err, h)
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("the registry saw %d requests", n)
	}
}

// TestCAFile trusts a private CA for HTTPS.
func TestCAFile(t *testing.T) {
	srv := httptest.NewUnstartedServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := strings.TrimPrefix(srv.URL, "https://")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	r := resolver(t, registry.WithCAFile(ca))
	seed(t, r, nil, h+"/a/app:1")
	if _, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill); err != nil {
		t.Errorf("with the CA: %v", err)
	}
	_, err := resolver(t).Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	if err == nil || !strings.Contains(err.Error(), "unknown authority; pass the CA with --ca-file") {
		t.Errorf("without the CA: %v", err)
	}
}

// counter is a registry.Progress that counts.
type counter struct{ total, done atomic.Int64 }

func (c *counter) Start(n int) { c.total.Add(int64(n)) }
func (c *counter) Done()       { c.done.Add(1) }

// TestProgressAndJobs: progress hears of every reference contacted, and no
// more than --jobs requests run at once.
func TestProgressAndJobs(t *testing.T) {
	h, f := server(t)
	var running, peak atomic.Int64
	f.Add(registrytest.Rule{Path: "/manifests/", Fault: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		next.ServeHTTP(w, r)
		running.Add(-1)
	}})
	c := &counter{}
	r := resolver(t, registry.WithInsecure(h), registry.WithJobs(3), registry.WithProgress(c))
	var images []*plan.Image
	var refs []string
	for i := range 12 {
		s := kindOf(t, h+"/a/img"+string(rune('a'+i)), false)
		refs = append(refs, s)
		images = append(images, image(t, s))
	}
	seed(t, resolver(t, registry.WithInsecure(h)), nil, refs...)
	peak.Store(0)
	if _, err := r.Lock(context.Background(), nil, images, registry.Fill); err != nil {
		t.Fatal(err)
	}
	if c.total.Load() != 12 || c.done.Load() != 12 {
		t.Errorf("progress: total %d, done %d; want 12, 12", c.total.Load(), c.done.Load())
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("%d manifest requests at once, want 2 to 3 (--jobs 3)", p)
	}
}

func TestOptionsRejectNonsense(t *testing.T) {
	for _, o := range []registry.Option{
		registry.WithJobs(0),
		registry.WithRetry(0, time.Second),
		registry.WithRequestTimeout(0),
		registry.WithInsecure("http://x"),
		registry.WithMirror("docker.io/library", "x"),
		registry.WithCAFile(filepath.Join(t.TempDir(), "missing.pem")),
	} {
		if _, err := registry.New(o); err == nil {
			t.Errorf("an invalid option was accepted")
		}
	}
}
