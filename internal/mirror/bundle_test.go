package mirror

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// withSites gives every fixture image the site repository a
// site.registries mapping puts it at: the source registry to its own
// prefix, without the registry component (what render names).
func (f *fixture) withSites(t *testing.T) ([]Image, site.Mapping) {
	t.Helper()
	m := site.Mapping{Default: f.dst + "/unused", Registries: map[string]string{f.src: f.dst + "/sub"}}
	var out []Image
	for _, img := range f.images {
		to, err := m.Repository(img.Source)
		if err != nil {
			t.Fatal(err)
		}
		img.Site = to.Name()
		out = append(out, img)
	}
	return out, m
}

func runAll(t *testing.T, m *Mirror, images []Image) (*Report, error) {
	t.Helper()
	p, err := m.Plan(context.Background(), images)
	if err != nil {
		return nil, err
	}
	return m.Run(context.Background(), p)
}

// TestBundleLandsWhereRenderPoints: a bundle records each image's site
// repository; pushed without a mapping, every image lands exactly there
// (no PREFIX/<registry>/ component); a mapping that would put it elsewhere
// is refused per image, naming both repositories, and nothing is written.
func TestBundleLandsWhereRenderPoints(t *testing.T) {
	f := newFixture(t)
	images, _ := f.withSites(t)
	b := filepath.Join(t.TempDir(), "b")
	if _, err := runAll(t, f.mirror(t, WithToLayout(b, nil)), images); err != nil {
		t.Fatal(err)
	}
	got, _, err := BundleImages(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, img := range images {
		want[img.Name] = img.Site
	}
	for _, img := range got {
		if img.Site != want[img.Name] || !strings.HasPrefix(img.Site, f.dst+"/sub/") || strings.Contains(img.Site, "127.0.0.1_") {
			t.Errorf("bundle image %s records site %q, want %q", img.Name, img.Site, want[img.Name])
		}
	}
	// A mapping that disagrees: refused, nothing pushed.
	f.dstCount.reset()
	_, err = runAll(t, f.mirror(t, WithFromLayout(b), WithToSite(f.site()), WithToImageSites()), got)
	var conflict *SiteConflictError
	if !errors.As(err, &conflict) || !strings.Contains(err.Error(), f.dst+"/sub/") || !strings.Contains(err.Error(), f.dst+"/site/") {
		t.Errorf("a --to that moves the images: %v", err)
	}
	if n := f.dstCount.count("POST upload") + f.dstCount.count("PUT manifest"); n != 0 {
		t.Errorf("the refused push wrote %d times", n)
	}
	// Where the bundle says.
	if _, err := runAll(t, f.mirror(t, WithFromLayout(b), WithToImageSites()), got); err != nil {
		t.Fatal(err)
	}
	for _, img := range images {
		repo, err := name.NewRepository(img.Site, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(repo.Tag(img.Tag))
		if err != nil || d.Digest != img.Digest {
			t.Errorf("%s at %s:%s: %v %v, want %s", img.Name, img.Site, img.Tag, d, err, img.Digest)
		}
	}
	// A bundle without sites cannot be pushed without a mapping.
	plain := filepath.Join(t.TempDir(), "plain")
	if _, err := runAll(t, f.mirror(t, WithToLayout(plain, nil)), f.images[:1]); err != nil {
		t.Fatal(err)
	}
	noSite, _, _ := BundleImages(plain)
	_, err = runAll(t, f.mirror(t, WithFromLayout(plain), WithToImageSites()), noSite)
	if !errors.Is(err, errNoSite) {
		t.Errorf("a bundle without sites and no mapping: %v", err)
	}
}

func lockOf(t *testing.T, images []Image) []byte {
	t.Helper()
	var l lock.Lock
	for _, img := range images {
		l.Put(lock.Entry{Name: img.Name, Reference: img.Name, Digest: img.Digest.String(), Kind: lock.KindManifest, Size: 1})
	}
	return l.Marshal()
}

// TestSecondConfigMergesOrRefuses: a second config written into a bundle
// keeps the first one's images (and lock entries); one that would give an
// image the bundle holds another digest is refused before anything is
// written, naming the image.
func TestSecondConfigMergesOrRefuses(t *testing.T) {
	f := newFixture(t)
	b := filepath.Join(t.TempDir(), "b")
	first, second := f.images[:2], f.images[2:]
	if _, err := runAll(t, f.mirror(t, WithToLayout(b, lockOf(t, first))), first); err != nil {
		t.Fatal(err)
	}
	rep, err := runAll(t, f.mirror(t, WithToLayout(b, lockOf(t, second))), second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied+rep.Present != len(second) {
		t.Errorf("copied %d and %d there, want %d", rep.Copied, rep.Present, len(second))
	}
	got, lockBytes, err := BundleImages(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(f.images) {
		t.Fatalf("the bundle holds %d images after the second config, want %d", len(got), len(f.images))
	}
	l, err := lock.Parse(lockBytes, "bundle lock")
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range f.images {
		if e, ok := l.Lookup(img.Name); !ok || e.Digest != img.Digest.String() {
			t.Errorf("the bundle's lock lacks %s", img.Name)
		}
	}
	// Another digest of app-a under the same name and tag.
	other := f.images[0]
	other.Digest = f.images[1].Digest
	before := files(t, b)
	_, err = runAll(t, f.mirror(t, WithToLayout(b, nil)), []Image{other})
	if err == nil || !strings.Contains(err.Error(), "image "+other.Name+": the bundle holds "+f.images[0].Digest.String()) {
		t.Errorf("a conflicting image: %v", err)
	}
	after := files(t, b)
	if len(before) != len(after) {
		t.Errorf("the refused run changed the bundle: %d files, then %d", len(before), len(after))
	}
}

// TestForeignLayoutRefused: a layout another tool wrote (index.json
// without stowage's marks) is neither written into nor read as a bundle.
func TestForeignLayoutRefused(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "crane")
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(layoutFile), 0o644)
	foreign := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":100,"digest":"sha256:` + strings.Repeat("a", 64) + `","annotations":{"org.opencontainers.image.ref.name":"busybox:1.36"}}]}`
	os.WriteFile(filepath.Join(dir, "index.json"), []byte(foreign), 0o644)
	keep := filepath.Join(dir, "blobs", "sha256", strings.Repeat("a", 64))
	os.WriteFile(keep, []byte("theirs"), 0o644)
	_, err := New(WithToLayout(dir, nil), WithResolver(f.resolver))
	var fe *ForeignLayoutError
	if !errors.As(err, &fe) {
		t.Errorf("writing into a foreign layout: %v", err)
	}
	if _, _, err := BundleImages(dir); !errors.As(err, &fe) {
		t.Errorf("reading a foreign layout: %v", err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "theirs" {
		t.Errorf("the foreign layout's blob was changed")
	}
}

// TestBundleRefusesLinks: no path component of a bundle is a symbolic
// link, whether it points inside or outside; a reused blob is hashed again.
func TestBundleRefusesLinks(t *testing.T) {
	f := newFixture(t)
	b := filepath.Join(t.TempDir(), "b")
	if _, err := runAll(t, f.mirror(t, WithToLayout(b, nil)), f.images[:1]); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "host-file")
	os.WriteFile(secret, []byte("host"), 0o600)

	t.Run("index.json a link out", func(t *testing.T) {
		c := copyTree(t, b)
		os.Remove(filepath.Join(c, "index.json"))
		os.Symlink(secret, filepath.Join(c, "index.json"))
		_, _, err := BundleImages(c)
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("got %v", err)
		}
		if _, err := New(WithToLayout(c, nil), WithResolver(f.resolver)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("writing: got %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"index.json a link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"index.json a FIFO", func(p string) error { return mkfifo(p, 0o644) }, "not a regular file"},
		{"index.json past its bound", func(p string) error { return os.WriteFile(p, make([]byte, indexKind.Max+1), 0o644) }, "more than the 16777216 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := copyTree(t, b)
			os.Remove(filepath.Join(c, "index.json"))
			if err := tc.make(filepath.Join(c, "index.json")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, _, err := BundleImages(c); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bundle index.json "+filepath.Join(c, "index.json")) {
					t.Errorf("got %v, want %q naming the file", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("reading index.json did not return within 10 s")
			}
		})
	}
	t.Run("blobs a link", func(t *testing.T) {
		c := copyTree(t, b)
		os.Rename(filepath.Join(c, "blobs"), filepath.Join(outside, "blobs"))
		os.Symlink(filepath.Join(outside, "blobs"), filepath.Join(c, "blobs"))
		if _, err := New(WithToLayout(c, nil), WithResolver(f.resolver)); err == nil || !strings.Contains(err.Error(), "blobs is a symbolic link") {
			t.Errorf("got %v", err)
		}
		if _, err := New(WithFromLayout(c), WithToImageSites(), WithResolver(f.resolver)); err == nil || !strings.Contains(err.Error(), "blobs is a symbolic link") {
			t.Errorf("reading: got %v", err)
		}
	})
	t.Run("damaged blob rewritten", func(t *testing.T) {
		c := copyTree(t, b)
		var victim string
		for p := range files(t, c) {
			if strings.HasPrefix(p, "blobs/sha256/") {
				if st, _ := os.Stat(filepath.Join(c, p)); st.Size() > 1000 {
					victim = p
				}
			}
		}
		good, _ := os.ReadFile(filepath.Join(c, victim))
		bad := append([]byte(nil), good...)
		bad[0] ^= 0xff
		os.WriteFile(filepath.Join(c, victim), bad, 0o644)
		rep, err := runAll(t, f.mirror(t, WithToLayout(c, nil)), f.images[:1])
		if err != nil {
			t.Fatal(err)
		}
		if rep.Present != 0 || rep.Copied != 1 {
			t.Errorf("a damaged bundle counted as holding the image: %+v", rep)
		}
		if now, _ := os.ReadFile(filepath.Join(c, victim)); string(now) != string(good) {
			t.Errorf("the damaged blob %s was kept", victim)
		}
	})
}

func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	for p, b := range files(t, from) {
		os.MkdirAll(filepath.Dir(filepath.Join(to, p)), 0o755)
		if err := os.WriteFile(filepath.Join(to, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// TestDeltaBundleCarriesOnlyWhatTheSiteLacks: the site holds v1 of an
// image; v2 shares its large base layer and changes a small one. The delta
// bundle against v1 carries v2's manifest, config and small layer, not the
// base (recorded as left out, with the site repository holding it); the
// push mounts or skips the base, sends only the small blobs, and v2
// verifies at the site. Pushed to a site that lacks the base, the image
// fails naming the blob and the repository.
func TestDeltaBundleCarriesOnlyWhatTheSiteLacks(t *testing.T) {
	f := newFixture(t)
	base := registrytest.Layer("big base", 400_000)
	v1img := registrytest.Image(t, base, registrytest.Layer("v1 change", 600))
	v2img := registrytest.Image(t, base, registrytest.Layer("v2 change", 604))
	repo, _ := name.NewRepository(f.src+"/team/app", name.Insecure)
	if err := remote.Write(repo.Tag("old"), v1img); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("v"), v2img); err != nil {
		t.Fatal(err)
	}
	siteRepo := f.dst + "/sub/team/app"
	held := Image{Name: repo.Name() + ":v", Source: repo, Tag: "v", Digest: registrytest.Digest(t, v1img), Site: siteRepo}
	next := held
	next.Digest = registrytest.Digest(t, v2img)
	// The site holds v1 under the tag.
	if _, err := runAll(t, f.mirror(t, WithToImageSites()), []Image{held}); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "delta")
	m := f.mirror(t, WithToLayout(b, nil), WithHave([]Image{held}))
	p, err := m.Plan(context.Background(), []Image{next})
	if err != nil {
		t.Fatal(err)
	}
	if p.OmittedBlobs != 1 || p.OmittedBytes != mustSize(t, base) {
		t.Errorf("plan leaves out %d blobs, %d bytes; want 1 and %d", p.OmittedBlobs, p.OmittedBytes, mustSize(t, base))
	}
	if _, err := m.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	var total int64
	for name, b := range files(t, b) {
		if strings.HasPrefix(name, "blobs/") {
			total += int64(len(b))
		}
	}
	if total > 10_000 {
		t.Errorf("the delta bundle carries %d bytes of blobs for a 604-byte change", total)
	}
	imgs, _, err := BundleImages(b)
	if err != nil {
		t.Fatal(err)
	}
	baseDigest, _ := base.Digest()
	if len(imgs) != 1 || imgs[0].Omitted[baseDigest] != siteRepo {
		t.Fatalf("the bundle records %+v", imgs)
	}
	f.dstCount.reset()
	if _, err := runAll(t, f.mirror(t, WithFromLayout(b), WithToImageSites()), imgs); err != nil {
		t.Fatal(err)
	}
	f.dstCount.mu.Lock()
	sent := f.dstCount.bytes
	f.dstCount.mu.Unlock()
	if sent > 10_000 {
		t.Errorf("the push sent %d blob bytes for a 604-byte change", sent)
	}
	site, _ := name.NewRepository(siteRepo, name.Insecure)
	if d, err := remote.Head(site.Tag("v")); err != nil || d.Digest != next.Digest {
		t.Errorf("v2 at the site: %v %v", d, err)
	}
	// A site without the base: the image fails, naming the blob.
	// (go-containerregistry's registry keeps one blob store for all
	// repositories: another registry.)
	empty := newFixture(t)
	other := imgs[0]
	other.Site = empty.dst + "/sub/team/app"
	other.Omitted = map[v1.Hash]string{baseDigest: other.Site}
	_, err = runAll(t, empty.mirror(t, WithFromLayout(b), WithToImageSites()), []Image{other})
	if err == nil || !strings.Contains(err.Error(), baseDigest.String()) || !strings.Contains(err.Error(), "left it out") {
		t.Errorf("a site lacking the left-out blob: %v", err)
	}
}
