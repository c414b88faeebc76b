package mirror

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// logged is a real docker-registry behind a reverse proxy that logs every
// request as it arrives ("> METHOD URI") and as its answer ends ("<
// METHOD URI STATUS"), in order; before passes a request on (true) or
// holds or answers it itself.
type logged struct {
	host   string
	before func(w http.ResponseWriter, r *http.Request) bool
	after  func(r *http.Request, code int)

	mu  sync.Mutex
	log []string
}

func startLogged(t *testing.T) *logged {
	t.Helper()
	d := registrytest.Start(t, registrytest.Options{})
	u, err := url.Parse("http://" + d.Host)
	if err != nil {
		t.Fatal(err)
	}
	l := &logged{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.add("> " + r.Method + " " + r.URL.RequestURI())
		if l.before != nil && !l.before(w, r) {
			return
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		rp.ServeHTTP(sw, r)
		l.add("< " + r.Method + " " + r.URL.RequestURI() + " " + http.StatusText(sw.code))
		if l.after != nil {
			l.after(r, sw.code)
		}
	}))
	t.Cleanup(srv.Close)
	l.host = strings.TrimPrefix(srv.URL, "http://")
	return l
}

// onBlobGet has l pass every GET of the blob dgst to handle, which
// answers it or holds it and returns whether to pass it on to the
// registry; every other request is passed on.
func (l *logged) onBlobGet(dgst v1.Hash, handle func(w http.ResponseWriter, r *http.Request) bool) {
	l.before = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+dgst.String()) {
			return true
		}
		return handle(w, r)
	}
}

func (l *logged) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, s)
}

// lines are the log lines so far.
func (l *logged) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

// first is the index of the first log line that starts with prefix and
// contains every one of parts, or -1.
func first(lines []string, prefix string, parts ...string) int {
	return slices.IndexFunc(lines, func(s string) bool {
		if !strings.HasPrefix(s, prefix) {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush lets the reverse proxy stream.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// mirrorToSite plans and runs the mirror of images from src to dst's
// repositories under site/, four at a time, with a resolver of opts that
// reads both over plain HTTP anonymously; a plan that fails fails t.
func mirrorToSite(t *testing.T, src, dst *logged, images []Image, opts ...registry.Option) (*Transfer, *Report, error) {
	t.Helper()
	opts = append([]registry.Option{registry.WithInsecure(src.host, dst.host), registry.WithKeychain(authn.NewMultiKeychain())}, opts...)
	r, err := registry.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(WithResolver(r), WithToSite(site.Mapping{Default: dst.host + "/site"}), WithJobs(4))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plan, err := m.Plan(ctx, images)
	if err != nil || len(plan.Errors) > 0 {
		t.Fatalf("plan: %v %v", err, plan.Errors)
	}
	rep, err := m.Run(ctx, plan)
	return plan, rep, err
}

// TestCopyIsPipelinedPerImage: the source holds back one large blob of an
// image until the destination has stored another, small image (its
// manifest PUT by its tag) — at most 20 s. The small image is there while
// the large blob is still held: its copy does not wait for every upload
// of the run. The large image follows, its tag last.
func TestCopyIsPipelinedPerImage(t *testing.T) {
	src, dst := startLogged(t), startLogged(t)
	bigLayer := registrytest.Layer("big", 8<<20)
	bigDigest := registrytest.Digest(t, bigLayer)
	images := []Image{
		push(t, src.host, "team/big", "1", registrytest.Image(t, bigLayer), nil),
		push(t, src.host, "team/small", "1", registrytest.Image(t, registrytest.Layer("small", 2000)), nil),
	}
	release := make(chan struct{})
	var once sync.Once
	var releasedBy string
	src.onBlobGet(bigDigest, func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
			once.Do(func() { releasedBy = "the 20 s bound"; close(release) })
		case <-r.Context().Done():
			return false
		}
		return true
	})
	dst.after = func(r *http.Request, code int) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/team/small/manifests/1") && code == http.StatusCreated {
			once.Do(func() { releasedBy = "the small image's manifest"; close(release) })
		}
	}
	plan, rep, err := mirrorToSite(t, src, dst, images)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 2 || rep.Bytes != plan.Bytes {
		t.Errorf("copied %d images and %d bytes, want 2 and %d", rep.Copied, rep.Bytes, plan.Bytes)
	}
	if releasedBy != "the small image's manifest" {
		t.Errorf("the large blob was released by %s, want the small image's manifest", releasedBy)
	}
	lines := dst.lines()
	small := first(lines, "< PUT", "/team/small/manifests/1", "Created")
	bigStarts := first(lines, "> PUT", "/team/big/blobs/uploads/", bigDigest.Hex)
	bigEnds := first(lines, "< PUT", "/team/big/blobs/uploads/", bigDigest.Hex, "Created")
	bigTag := first(lines, "> PUT", "/team/big/manifests/1")
	if small < 0 || bigStarts < 0 || bigEnds < 0 || bigTag < 0 || !(small < bigStarts && bigStarts < bigEnds && bigEnds < bigTag) {
		t.Errorf("at the site: small image stored at line %d, the large blob's PUT sent at %d and done at %d, the large image's tag at %d; want them in that order:\n%s",
			small, bigStarts, bigEnds, bigTag, strings.Join(lines, "\n"))
	}
}

// TestFailedBlobFailsOnlyItsImages: the source refuses one blob. The
// images that hold it fail, named with it, and nothing of theirs that
// needs it is sent (no manifest, no tag, no mount of it into a second
// repository; an index's other child is written, the index is not); an
// image sharing another blob with them completes.
func TestFailedBlobFailsOnlyItsImages(t *testing.T) {
	src, dst := startLogged(t), startLogged(t)
	base := registrytest.Layer("base", 40000)
	bad := registrytest.Layer("bad", 9000)
	badDigest := registrytest.Digest(t, bad)
	good := registrytest.Image(t, base, registrytest.Layer("good-child", 3000))
	idx := registrytest.Index(good, registrytest.Image(t, base, bad))
	images := []Image{
		push(t, src.host, "team/a", "1", registrytest.Image(t, base, bad), nil),
		push(t, src.host, "other/a", "1", registrytest.Image(t, base, bad), nil),
		push(t, src.host, "lib/multi", "1.0", nil, idx),
		push(t, src.host, "team/b", "1", registrytest.Image(t, base, registrytest.Layer("b", 7000)), nil),
	}
	src.onBlobGet(badDigest, func(w http.ResponseWriter, r *http.Request) bool {
		registrytest.Status(http.StatusNotFound, nil)(w, r, nil)
		return false
	})
	plan, rep, err := mirrorToSite(t, src, dst, images, registry.WithRetry(1, 0))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v, want image errors", err)
	}
	var failed []string
	for _, e := range es {
		failed = append(failed, e.Key)
		if !strings.Contains(e.Error(), "copy blob "+badDigest.String()) {
			t.Errorf("%s: %v, want the failed blob named", e.Key, e)
		}
	}
	want := []string{images[2].Name, images[1].Name, images[0].Name}
	if !slices.Equal(failed, want) {
		t.Errorf("failed %q, want %q", failed, want)
	}
	if rep.Copied != 1 {
		t.Errorf("copied %d, want team/b alone", rep.Copied)
	}
	lines := dst.lines()
	for _, repo := range []string{"/team/a/manifests/", "/other/a/manifests/", "/lib/multi/manifests/1.0"} {
		if i := first(lines, "> PUT", repo); i >= 0 {
			t.Errorf("sent %s although a blob it needs failed", lines[i])
		}
	}
	if i := first(lines, "> POST", "mount="+url.QueryEscape(badDigest.String())); i >= 0 {
		t.Errorf("sent %s: a mount of the blob whose upload failed", lines[i])
	}
	if i := first(lines, "< PUT", "/lib/multi/manifests/"+registrytest.Digest(t, good).String(), "Created"); i < 0 {
		t.Errorf("the index's child that does not need the blob was not written:\n%s", strings.Join(lines, "\n"))
	}
	var b *PlannedImage
	for _, pi := range plan.Images {
		if pi.Name == images[3].Name {
			b = pi
		}
	}
	ref, err := name.NewTag(strings.Split(b.Destination, "@")[0], name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := remote.Head(ref); err != nil || d.Digest != images[3].Digest {
		t.Errorf("%s at the site: %v %v, want %s", ref, d, err, images[3].Digest)
	}
}
