package mirror

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// startReferrersRegistry is an in-process registry that serves the OCI 1.1
// Referrers API (startRegistry's does not, like Debian's docker-registry).
func startReferrersRegistry(t *testing.T) (string, *counting) {
	t.Helper()
	c := &counting{next: ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true))}
	srv := httptest.NewServer(c.wrap())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), c
}

// artifact is a small manifest with one layer of mediaType mt, the shape
// of cosign's signature, attestation and SBOM manifests.
func artifact(t testing.TB, mt types.MediaType, payload string) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, static.NewLayer([]byte(payload), mt))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// attached is what the signed fixture attaches to lib/multi:1.0.
type attached struct {
	index, amd, arm v1.Hash
	// tags maps each cosign tag to its manifest's digest.
	tags map[string]v1.Hash
	// referrer is an OCI 1.1 referrer of the arm64 child.
	referrer v1.Hash
	// bytes are the unique blob bytes of every attachment.
	bytes int64
}

// sign attaches to the fixture's index: a signature of the index, an
// attestation of its amd64 child, an SBOM of its arm64 child (cosign's tag
// scheme), and an OCI 1.1 referrer of the arm64 child (pushed with
// go-containerregistry, which writes the referrers tag-schema index on a
// registry without the Referrers API).
func (f *fixture) sign(t *testing.T) attached {
	t.Helper()
	var multi Image
	for _, img := range f.images {
		if strings.HasSuffix(img.Name, "lib/multi:1.0") {
			multi = img
		}
	}
	idx, err := remote.Index(multi.Source.Digest(multi.Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	a := attached{index: multi.Digest, amd: im.Manifests[0].Digest, arm: im.Manifests[1].Digest, tags: map[string]v1.Hash{}}
	blobs := map[v1.Hash]int64{}
	count := func(img v1.Image) {
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			blobs[d.Digest] = d.Size
		}
	}
	for _, s := range []struct {
		subject v1.Hash
		kind    string
		mt      types.MediaType
	}{
		{a.index, KindSignature, "application/vnd.dev.cosign.simplesigning.v1+json"},
		{a.amd, KindAttestation, "application/vnd.dsse.envelope.v1+json"},
		{a.arm, KindSBOM, "text/spdx+json"},
	} {
		img := artifact(t, s.mt, s.kind+" of "+s.subject.String())
		tag := attachmentTag(s.subject, s.kind)
		if err := remote.Write(multi.Source.Tag(tag), img); err != nil {
			t.Fatal(err)
		}
		a.tags[tag] = registrytest.Digest(t, img)
		count(img)
	}
	ref := artifact(t, "application/vnd.in-toto+json", "in-toto of the arm64 child")
	ref = mutate.ConfigMediaType(ref, "application/vnd.example.sbom.v1+json").(v1.Image)
	ref = mutate.Subject(ref, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: a.arm, Size: im.Manifests[1].Size}).(v1.Image)
	a.referrer = registrytest.Digest(t, ref)
	if err := remote.Write(multi.Source.Digest(a.referrer.String()), ref); err != nil {
		t.Fatal(err)
	}
	count(ref)
	for _, n := range blobs {
		a.bytes += n
	}
	return a
}

// referrersAt lists the referrers of h in repo as a client finds them (the
// Referrers API, else the tag-schema index).
func referrersAt(t *testing.T, repo name.Repository, h v1.Hash) []v1.Hash {
	t.Helper()
	idx, err := remote.Referrers(repo.Digest(h.String()))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, d := range im.Manifests {
		out = append(out, d.Digest)
	}
	return out
}

// checkAttached asserts that the destination repository of lib/multi holds
// every attachment at the source's digest, the referrer listed.
func checkAttached(t *testing.T, repo name.Repository, a attached) {
	t.Helper()
	for tag, want := range a.tags {
		d, err := remote.Head(repo.Tag(tag))
		if err != nil {
			t.Errorf("%s:%s at the destination: %v", repo, tag, err)
			continue
		}
		if d.Digest != want {
			t.Errorf("%s:%s is %s, want %s", repo, tag, d.Digest, want)
		}
	}
	if got := referrersAt(t, repo, a.arm); len(got) != 1 || got[0] != a.referrer {
		t.Errorf("referrers of the arm64 child at %s: %v, want [%s]", repo, got, a.referrer)
	}
}

func multiImage(t *testing.T, f *fixture) []Image {
	t.Helper()
	for _, img := range f.images {
		if strings.HasSuffix(img.Name, "lib/multi:1.0") {
			return []Image{img}
		}
	}
	t.Fatal("no lib/multi in the fixture")
	return nil
}

// TestAttachmentsTravelWithIndexAndChildren: the signatures, attestations,
// SBOMs and referrers of an index and of its children are planned (counted
// with their bytes), copied at the same digests, listed at a destination
// with the Referrers API and at one without it (the tag-schema index), and
// a rerun plans and writes nothing.
func TestAttachmentsTravelWithIndexAndChildren(t *testing.T) {
	for _, api := range []bool{false, true} {
		t.Run(fmt.Sprintf("referrers-api=%v", api), func(t *testing.T) {
			f := newFixture(t)
			if api {
				f.dst, f.dstCount = startReferrersRegistry(t)
				r, err := newResolver(f.src, f.dst)
				if err != nil {
					t.Fatal(err)
				}
				f.resolver = r
			}
			a := f.sign(t)
			ctx := context.Background()
			images := multiImage(t, f)
			m := f.mirror(t, WithToSite(f.site()), WithAttachments())
			plan, err := m.Plan(ctx, images)
			if err != nil || len(plan.Errors) > 0 {
				t.Fatalf("plan: %v %v", err, plan.Errors)
			}
			if plan.Attachments != 4 || plan.AttachmentsPresent != 0 {
				t.Errorf("plan: %d attachments, %d present; want 4 and 0", plan.Attachments, plan.AttachmentsPresent)
			}
			if plan.AttachmentBytes != a.bytes {
				t.Errorf("plan: attachment bytes %d, want %d", plan.AttachmentBytes, a.bytes)
			}
			rep, err := m.Run(ctx, plan)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Copied != 1 || rep.AttachmentsCopied != 4 {
				t.Errorf("run: %d images and %d attachments copied, want 1 and 4", rep.Copied, rep.AttachmentsCopied)
			}
			to, _ := f.site().Repository(images[0].Source, name.Insecure)
			checkAttached(t, to, a)
			fallback := to.Tag(strings.Replace(a.arm.String(), ":", "-", 1))
			_, err = remote.Head(fallback)
			if api && err == nil {
				t.Errorf("a registry with the Referrers API got the tag-schema index %s", fallback)
			}
			if !api && err != nil {
				t.Errorf("no tag-schema index %s on a registry without the Referrers API: %v", fallback, err)
			}
			// A rerun: everything present, nothing written.
			f.dstCount.reset()
			plan2, err := m.Plan(ctx, images)
			if err != nil || len(plan2.Errors) > 0 {
				t.Fatalf("rerun plan: %v %v", err, plan2.Errors)
			}
			rep2, err := m.Run(ctx, plan2)
			if err != nil {
				t.Fatal(err)
			}
			// The image is there, so nothing attached to it is asked
			// for again.
			if plan2.Bytes != 0 || plan2.Missing() != 0 || plan2.Attachments != 0 || rep2.Present != 1 {
				t.Errorf("rerun: %d bytes, %d missing, %d attachments, %d images present; want 0, 0, 0, 1", plan2.Bytes, plan2.Missing(), plan2.Attachments, rep2.Present)
			}
			if n := f.dstCount.count("POST upload") + f.dstCount.count("PUT manifest"); n != 0 {
				t.Errorf("rerun: %d uploads or manifest writes, want 0", n)
			}
		})
	}
}

func newResolver(hosts ...string) (*registry.Resolver, error) {
	return registry.New(registry.WithInsecure(hosts...), registry.WithKeychain(authn.NewMultiKeychain()), registry.WithRetry(1, 0))
}

// TestNoAttachmentsLeavesThemOut: without WithAttachments nothing
// attached is looked up or copied.
func TestNoAttachmentsLeavesThemOut(t *testing.T) {
	f := newFixture(t)
	a := f.sign(t)
	images := multiImage(t, f)
	m := f.mirror(t, WithToSite(f.site()))
	f.srcCount.reset()
	if _, err := runAll(t, m, images); err != nil {
		t.Fatal(err)
	}
	to, _ := f.site().Repository(images[0].Source, name.Insecure)
	for tag := range a.tags {
		if _, err := remote.Head(to.Tag(tag)); err == nil {
			t.Errorf("%s was copied without WithAttachments", tag)
		}
	}
	if n := f.srcCount.count("HEAD manifest"); n != 0 {
		t.Errorf("%d HEADs at the source, want none", n)
	}
}

// TestAttachmentsThroughABundle: a bundle carries the attachments (listed
// in index.json with their kind and subject), is the same bytes however it
// is built, and pushed from it the site gets the same digests as a direct
// copy, the tag-schema index included.
func TestAttachmentsThroughABundle(t *testing.T) {
	f := newFixture(t)
	a := f.sign(t)
	ctx := context.Background()
	images := multiImage(t, f)
	lockBytes := (&lock.Lock{}).Marshal()
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, err := runAll(t, f.mirror(t, WithToLayout(dir, lockBytes), WithAttachments()), images); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "bundle")
	if _, err := runAll(t, f.mirror(t, WithToLayout(dir2, lockBytes), WithAttachments()), images); err != nil {
		t.Fatal(err)
	}
	fa, fb := files(t, dir), files(t, dir2)
	for p := range fa {
		if !bytes.Equal(fa[p], fb[p]) {
			t.Errorf("%s differs between two builds", p)
		}
	}
	imgs, _, err := BundleImages(dir)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, img := range imgs {
		if img.Attachment != nil {
			kinds = append(kinds, img.Attachment.Kind+" "+img.Attachment.Subject.String())
		}
	}
	sort.Strings(kinds)
	want := []string{KindAttestation + " " + a.amd.String(), KindReferrer + " " + a.arm.String(), KindSBOM + " " + a.arm.String(), KindSignature + " " + a.index.String()}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("bundle attachments %v, want %v", kinds, want)
	}
	// The push from the bundle reads nothing from the source.
	f.srcCount.reset()
	push := f.mirror(t, WithFromLayout(dir), WithToSite(f.site()), WithAttachments())
	plan, err := push.Plan(ctx, imgs)
	if err != nil || len(plan.Errors) > 0 {
		t.Fatalf("plan: %v %v", err, plan.Errors)
	}
	if plan.Attachments != 4 {
		t.Errorf("push plans %d attachments, want 4", plan.Attachments)
	}
	if _, err := push.Run(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if n := len(f.srcCount.requests); n != 0 {
		t.Errorf("the push from the bundle sent %d requests to the source", n)
	}
	to, _ := f.site().Repository(images[0].Source, name.Insecure)
	checkAttached(t, to, a)
	// A direct copy to another site gives the same tag-schema index.
	direct := site.Mapping{Default: f.dst + "/direct"}
	if _, err := runAll(t, f.mirror(t, WithToSite(direct), WithAttachments()), images); err != nil {
		t.Fatal(err)
	}
	to2, _ := direct.Repository(images[0].Source, name.Insecure)
	tag := strings.Replace(a.arm.String(), ":", "-", 1)
	d1, err1 := remote.Head(to.Tag(tag))
	d2, err2 := remote.Head(to2.Tag(tag))
	if err1 != nil || err2 != nil || d1.Digest != d2.Digest {
		t.Errorf("tag-schema index through the bundle %v (%v), direct %v (%v): want the same digest", d1, err1, d2, err2)
	}
}

// TestReferrerStoredButNotListedIsRelinked: a referrer whose manifest
// reached the site but whose listing did not (a run stopped between the
// two writes) is written again on the rerun, and then listed.
func TestReferrerStoredButNotListedIsRelinked(t *testing.T) {
	f := newFixture(t)
	a := f.sign(t)
	images := multiImage(t, f)
	to, _ := f.site().Repository(images[0].Source, name.Insecure)
	// The referrer's manifest alone, put with a plain PUT (no listing).
	src, err := remote.Get(images[0].Source.Digest(a.referrer.String()))
	if err != nil {
		t.Fatal(err)
	}
	refImg, err := src.Image()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := refImg.Manifest()
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		l, err := refImg.LayerByDigest(d.Digest)
		if err != nil {
			l, err = configLayer(refImg)
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := remote.WriteLayer(to, l); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+to.RegistryStr()+"/v2/"+to.RepositoryStr()+"/manifests/"+a.referrer.String(), bytes.NewReader(src.Manifest))
	req.Header.Set("Content-Type", string(src.MediaType))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %s", resp.Status)
	}
	if got := referrersAt(t, to, a.arm); len(got) != 0 {
		t.Fatalf("referrers listed before the run: %v", got)
	}
	mr := f.mirror(t, WithToSite(f.site()), WithAttachments())
	plan, err := mr.Plan(context.Background(), images)
	if err != nil || len(plan.Errors) > 0 {
		t.Fatalf("plan: %v %v", err, plan.Errors)
	}
	if _, err := mr.Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	checkAttached(t, to, a)
}

// configLayer is img's config blob as a layer, to upload it.
func configLayer(img v1.Image) (v1.Layer, error) {
	raw, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	return static.NewLayer(raw, types.OCIConfigJSON), nil
}

// TestFailedAttachmentHoldsTheTag: when an attachment cannot be written,
// the image's tag is not written either (the image fails, naming the
// attachment), so that the rerun plans the image and its attachments
// again and completes both.
func TestFailedAttachmentHoldsTheTag(t *testing.T) {
	f := newFixture(t)
	a := f.sign(t)
	images := multiImage(t, f)
	var sbom string
	for tag := range a.tags {
		if strings.HasSuffix(tag, ".sbom") {
			sbom = tag
		}
	}
	f.dstCount.mu.Lock()
	f.dstCount.fail = func(r *http.Request) int {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+sbom) {
			return http.StatusInternalServerError
		}
		return 0
	}
	f.dstCount.mu.Unlock()
	m := f.mirror(t, WithToSite(f.site()), WithAttachments())
	_, err := runAll(t, m, images)
	if err == nil || !strings.Contains(err.Error(), "SBOM "+sbom) || !strings.Contains(err.Error(), "PUT tag 1.0: not written: its SBOM "+sbom+" failed") {
		t.Fatalf("run: %v; want the SBOM's failure and the image's tag held", err)
	}
	to, _ := f.site().Repository(images[0].Source, name.Insecure)
	if _, err := remote.Head(to.Tag("1.0")); err == nil {
		t.Fatal("the image's tag was written though its SBOM failed")
	}
	f.dstCount.mu.Lock()
	f.dstCount.fail = nil
	f.dstCount.mu.Unlock()
	if _, err := runAll(t, m, images); err != nil {
		t.Fatal(err)
	}
	checkAttached(t, to, a)
	if d, err := remote.Head(to.Tag("1.0")); err != nil || d.Digest != images[0].Digest {
		t.Errorf("after the rerun the tag is %v (%v), want %s", d, err, images[0].Digest)
	}
}

// TestAttachmentsBounded: an image with more attachments than the bound
// fails by name, naming the bound and the way out, and nothing of it is
// copied; without attachments it copies.
func TestAttachmentsBounded(t *testing.T) {
	f := newFixture(t)
	f.sign(t)
	images := multiImage(t, f)
	m := f.mirror(t, WithToSite(f.site()), WithAttachments())
	m.o.maxAttachments = 3
	plan, err := m.Plan(context.Background(), images)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Errors) != 1 || !strings.Contains(plan.Errors[0].Error(), "4 attachments, more than the 3 carried with one image; copy it without them with --no-attachments") {
		t.Fatalf("plan errors %v, want the image named with the bound", plan.Errors)
	}
	if plan.Attachments != 0 || plan.Blobs != 0 {
		t.Errorf("plan: %d attachments, %d blobs of a failed image", plan.Attachments, plan.Blobs)
	}
	if _, err := runAll(t, f.mirror(t, WithToSite(f.site())), images); err != nil {
		t.Fatal(err)
	}
}
