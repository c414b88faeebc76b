package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// counting is an in-process registry that counts the blob bytes uploaded
// to it and the requests by method and path kind.
type counting struct {
	next http.Handler

	mu       sync.Mutex
	bytes    int64
	requests map[string]int
	fail     func(r *http.Request) int // a status to answer instead, or 0
}

// countBody wraps the registry so that every upload body is counted as the
// registry reads it.
func (c *counting) wrap() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/uploads") && r.Body != nil {
			r.Body = &countingBody{ReadCloser: r.Body, c: c}
		}
		c.serve(w, r)
	})
}

type countingBody struct {
	io.ReadCloser
	c *counting
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.mu.Lock()
	b.c.bytes += int64(n)
	b.c.mu.Unlock()
	return n, err
}

func (c *counting) serve(w http.ResponseWriter, r *http.Request) {
	kind := "other"
	switch {
	case strings.Contains(r.URL.Path, "/blobs/uploads"):
		kind = "upload"
	case strings.Contains(r.URL.Path, "/blobs/"):
		kind = "blob"
	case strings.Contains(r.URL.Path, "/manifests/"):
		kind = "manifest"
	}
	c.mu.Lock()
	if c.requests == nil {
		c.requests = map[string]int{}
	}
	c.requests[r.Method+" "+kind]++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		if code := fail(r); code != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"errors":[{"code":"INJECTED","message":"injected by the test"}]}`)
			return
		}
	}
	c.next.ServeHTTP(w, r)
}

func (c *counting) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes, c.requests = 0, map[string]int{}
}

func (c *counting) count(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[k]
}

func startRegistry(t testing.TB) (string, *counting) {
	t.Helper()
	c := &counting{next: ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))}
	srv := httptest.NewServer(c.wrap())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), c
}

// fixture is a source registry holding: two single images sharing a base
// layer, a multi-arch index whose children share that base too, and an
// image pushed under two repositories.
type fixture struct {
	src, dst  string
	dstCount  *counting
	srcCount  *counting
	images    []Image
	resolver  *registry.Resolver
	baseBytes int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	f.src, f.srcCount = startRegistry(t)
	f.dst, f.dstCount = startRegistry(t)
	r, err := registry.New(registry.WithInsecure(f.src, f.dst), registry.WithKeychain(authn.NewMultiKeychain()), registry.WithRetry(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	f.resolver = r
	base := registrytest.Layer("base", 40000)
	amd := registrytest.Image(t, base, registrytest.Layer("amd64", 3000))
	arm := registrytest.Image(t, base, registrytest.Layer("arm64", 3100))
	idx := registrytest.Index(amd, arm)
	type seed struct {
		repo, tag string
		img       v1.Image
		idx       v1.ImageIndex
	}
	seeds := []seed{
		{"team/app-a", "v1", registrytest.Image(t, base, registrytest.Layer("app-a", 5000)), nil},
		{"team/app-b", "v2", registrytest.Image(t, base, registrytest.Layer("app-b", 7000)), nil},
		{"lib/multi", "1.0", nil, idx},
		{"other/app-a", "v1", registrytest.Image(t, base, registrytest.Layer("app-a", 5000)), nil},
	}
	for _, s := range seeds {
		f.images = append(f.images, push(t, f.src, s.repo, s.tag, s.img, s.idx))
	}
	f.baseBytes = mustSize(t, base)
	return f
}

func mustSize(t *testing.T, l v1.Layer) int64 {
	t.Helper()
	n, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// push writes img (or idx) to repo:tag at the plain-HTTP registry host
// and returns the image to mirror.
func push(t *testing.T, host, repo, tag string, img v1.Image, idx v1.ImageIndex) Image {
	t.Helper()
	ref, h := registrytest.Push(t, host, repo, tag, img, idx)
	return Image{Name: ref.Context().Name() + ":" + tag, Source: ref.Context(), Tag: tag, Digest: h}
}

func (f *fixture) mirror(t *testing.T, opts ...Option) *Mirror {
	t.Helper()
	m, err := New(append([]Option{WithResolver(f.resolver), WithJobs(4)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) site() site.Mapping { return site.Mapping{Default: f.dst + "/site"} }

// uniqueBlobBytes computes, independently of the plan, the bytes of the
// unique blobs of every image in the source.
func (f *fixture) uniqueBlobBytes(t *testing.T) int64 {
	t.Helper()
	seen := map[v1.Hash]int64{}
	var addImage func(img v1.Image)
	addImage = func(img v1.Image) {
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		seen[m.Config.Digest] = m.Config.Size
		for _, l := range m.Layers {
			seen[l.Digest] = l.Size
		}
	}
	for _, img := range f.images {
		ref := img.Source.Digest(img.Digest.String())
		d, err := remote.Get(ref)
		if err != nil {
			t.Fatal(err)
		}
		if d.MediaType.IsIndex() {
			idx, _ := d.ImageIndex()
			im, _ := idx.IndexManifest()
			for _, c := range im.Manifests {
				ci, err := idx.Image(c.Digest)
				if err != nil {
					t.Fatal(err)
				}
				addImage(ci)
			}
		} else {
			i, _ := d.Image()
			addImage(i)
		}
	}
	var n int64
	for _, s := range seen {
		n += s
	}
	return n
}

func TestCopyMovesUniqueBlobsOnceAndVerifies(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := f.mirror(t, WithToSite(f.site()))
	plan, err := m.Plan(ctx, f.images)
	if err != nil || len(plan.Errors) > 0 {
		t.Fatalf("plan: %v %v", err, plan.Errors)
	}
	want := f.uniqueBlobBytes(t)
	if plan.Bytes != want {
		t.Errorf("plan bytes %d, want the unique blob bytes %d", plan.Bytes, want)
	}
	if plan.Missing() != 4 {
		t.Errorf("missing %d, want 4", plan.Missing())
	}
	// The base layer is in four repositories: uploaded once, mounted
	// into the three others; app-a's own layer and config are in two.
	if plan.Mounts != 3+2 {
		t.Errorf("mounts %d, want 5", plan.Mounts)
	}
	f.dstCount.reset()
	rep, err := m.Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 4 || rep.Present != 0 {
		t.Errorf("copied %d present %d, want 4 and 0", rep.Copied, rep.Present)
	}
	if f.dstCount.bytes != want {
		t.Errorf("destination received %d blob bytes, want exactly %d", f.dstCount.bytes, want)
	}
	if rep.Bytes != want {
		t.Errorf("report says %d bytes, want %d", rep.Bytes, want)
	}
	// Every digest at the destination, by tag, is the source's.
	for _, img := range f.images {
		to, _ := f.site().Repository(img.Source, name.Insecure)
		d, err := remote.Head(to.Tag(img.Tag))
		if err != nil {
			t.Fatal(err)
		}
		if d.Digest != img.Digest {
			t.Errorf("%s: %s at the destination, want %s", img.Name, d.Digest, img.Digest)
		}
	}
	// A second run plans nothing and sends no blob.
	f.dstCount.reset()
	plan2, err := m.Plan(ctx, f.images)
	if err != nil {
		t.Fatal(err)
	}
	rep2, err := m.Run(ctx, plan2)
	if err != nil {
		t.Fatal(err)
	}
	if plan2.Bytes != 0 || plan2.Missing() != 0 || rep2.Present != 4 || f.dstCount.bytes != 0 {
		t.Errorf("rerun: plan bytes %d, missing %d, present %d, bytes received %d; want 0, 0, 4, 0", plan2.Bytes, plan2.Missing(), rep2.Present, f.dstCount.bytes)
	}
	if n := f.dstCount.count("POST upload") + f.dstCount.count("PUT manifest"); n != 0 {
		t.Errorf("rerun: %d uploads or manifest writes, want 0", n)
	}
}

func TestUniqueBytesCountsSharedBlobsOnce(t *testing.T) {
	f := newFixture(t)
	m := f.mirror(t, WithToSite(f.site()))
	plan, err := m.Plan(context.Background(), f.images)
	if err != nil {
		t.Fatal(err)
	}
	a, b := plan.Images[0], plan.Images[1]
	_, both := plan.UniqueBytes(map[string]bool{a.Name: true, b.Name: true})
	if both != a.Bytes+b.Bytes-f.baseBytes {
		t.Errorf("unique bytes of %s and %s: %d, want %d + %d - base %d", a.Name, b.Name, both, a.Bytes, b.Bytes, f.baseBytes)
	}
}

func TestPartialDestinationResumes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := f.mirror(t, WithToSite(f.site()))
	// The first run fails every manifest PUT: blobs arrive, no tag.
	f.dstCount.fail = func(r *http.Request) int {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			return http.StatusInternalServerError
		}
		return 0
	}
	plan, _ := m.Plan(ctx, f.images)
	_, err := m.Run(ctx, plan)
	var es Errors
	if !errors.As(err, &es) || len(es) != 4 {
		t.Fatalf("got %v, want 4 image errors", err)
	}
	if !strings.Contains(es[0].Error(), "PUT manifest") || !strings.Contains(es[0].Error(), "500 Internal Server Error: INJECTED") {
		t.Errorf("error does not name the operation and the answer: %v", es[0])
	}
	for _, img := range f.images {
		to, _ := f.site().Repository(img.Source, name.Insecure)
		if _, err := remote.Head(to.Tag(img.Tag)); err == nil {
			t.Errorf("%s: a tag exists after its manifest failed", img.Name)
		}
	}
	f.dstCount.fail = nil
	f.dstCount.reset()
	plan2, _ := m.Plan(ctx, f.images)
	if plan2.Bytes != 0 {
		t.Errorf("resume plans %d bytes, want 0: the blobs are there", plan2.Bytes)
	}
	if _, err := m.Run(ctx, plan2); err != nil {
		t.Fatal(err)
	}
	if f.dstCount.bytes != 0 {
		t.Errorf("resume sent %d blob bytes, want 0", f.dstCount.bytes)
	}
}

func TestFailingImageIsNamedOthersComplete(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	missing := f.images[0]
	missing.Name, missing.Tag = missing.Source.Name()+":gone", "gone"
	missing.Digest = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}
	m := f.mirror(t, WithToSite(f.site()))
	plan, err := m.Plan(ctx, append([]Image{missing}, f.images...))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.Run(ctx, plan)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("got %v, want one image error", err)
	}
	want := fmt.Sprintf("image %q: %s: GET manifest sha256:%s: 404 Not Found", missing.Name, f.src, strings.Repeat("a", 64))
	if !strings.HasPrefix(es[0].Error(), want) {
		t.Errorf("got  %s\nwant %s…", es[0], want)
	}
	if rep.Copied != 4 {
		t.Errorf("copied %d, want the 4 others", rep.Copied)
	}
}

func TestChildAlone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	multi := f.images[2]
	d, err := remote.Get(multi.Source.Digest(multi.Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(d.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	child := multi
	child.Digest, child.Tag = im.Manifests[1].Digest, ""
	m := f.mirror(t, WithToSite(f.site()))
	plan, _ := m.Plan(ctx, []Image{child})
	if _, err := m.Run(ctx, plan); err != nil {
		t.Fatal(err)
	}
	to, _ := f.site().Repository(multi.Source, name.Insecure)
	if _, err := remote.Head(to.Digest(child.Digest.String())); err != nil {
		t.Errorf("child not at the destination: %v", err)
	}
	if _, err := remote.Head(to.Digest(multi.Digest.String())); err == nil {
		t.Errorf("the index was copied, want the child alone")
	}
	if _, err := remote.Head(to.Tag(multi.Tag)); err == nil {
		t.Errorf("a tag was written for a pinned child")
	}
}

func TestBundleRoundTripAndByteIdentical(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	lockBytes := (&lock.Lock{}).Marshal()
	build := func(dir string) {
		m := f.mirror(t, WithToLayout(dir, lockBytes))
		plan, err := m.Plan(ctx, f.images)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(ctx, plan); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	build(a)
	// b is built in two steps, the first with half the images, and
	// images given in another order: the result must not show it.
	m := f.mirror(t, WithToLayout(b, lockBytes))
	plan, _ := m.Plan(ctx, f.images[:2])
	if _, err := m.Run(ctx, plan); err != nil {
		t.Fatal(err)
	}
	rev := append([]Image(nil), f.images...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	build2 := f.mirror(t, WithToLayout(b, lockBytes))
	plan, _ = build2.Plan(ctx, rev)
	if _, err := build2.Run(ctx, plan); err != nil {
		t.Fatal(err)
	}
	fa, fb := files(t, a), files(t, b)
	if len(fa) != len(fb) {
		t.Fatalf("%d files against %d", len(fa), len(fb))
	}
	for p, da := range fa {
		if !bytes.Equal(da, fb[p]) {
			t.Errorf("%s differs between two builds", p)
		}
	}
	if !bytes.Equal(fa[BundleLock], lockBytes) {
		t.Errorf("the bundle's lock is %q", fa[BundleLock])
	}
	// From the bundle to a registry: the same digests as a direct copy.
	imgs, lock, err := BundleImages(a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(lock, lockBytes) || len(imgs) != len(f.images) {
		t.Fatalf("bundle lists %d images, lock %q", len(imgs), lock)
	}
	byName := map[string]Image{}
	for _, img := range imgs {
		byName[img.Name] = img
	}
	for _, want := range f.images {
		got := byName[want.Name]
		if got.Digest != want.Digest || got.Tag != want.Tag || got.Source.Name() != want.Source.Name() {
			t.Errorf("bundle image %s: %+v, want %+v", want.Name, got, want)
		}
	}
	push := f.mirror(t, WithFromLayout(a), WithToSite(f.site()))
	f.srcCount.reset()
	plan, _ = push.Plan(ctx, imgs)
	if plan.Bytes != f.uniqueBlobBytes(t) {
		t.Errorf("bundle push plans %d bytes, want %d", plan.Bytes, f.uniqueBlobBytes(t))
	}
	f.srcCount.reset()
	if _, err := push.Run(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if n := f.srcCount.count("GET blob") + f.srcCount.count("GET manifest"); n != 0 {
		t.Errorf("the push from the bundle read the source registry %d times", n)
	}
	for _, img := range f.images {
		to, _ := f.site().Repository(img.Source, name.Insecure)
		d, err := remote.Head(to.Tag(img.Tag))
		if err != nil || d.Digest != img.Digest {
			t.Errorf("%s: %v %v", img.Name, d, err)
		}
	}
}

func TestLayoutTargetMustBeABundle(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(WithToLayout(dir, nil), WithResolver(&registry.Resolver{}))
	if err == nil || !strings.Contains(err.Error(), "is not an OCI image layout") {
		t.Errorf("got %v", err)
	}
}

func files(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
