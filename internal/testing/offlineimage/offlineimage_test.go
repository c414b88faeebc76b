package offlineimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"log"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/lock"
)

func parse(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatalf("ParseReference(%q): %v", s, err)
	}
	return ref
}

// TestDigestsArePinned is a regression pin. The literal digests below were
// computed once; every machine, OS, Go release and run must compute the same,
// because committed example locks and golden output hold them. If this test
// fails, the stand-ins stopped being deterministic (or their recipe changed,
// which invalidates every example lock): fix that rather than the literals.
func TestDigestsArePinned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref       string
		digest    string
		kind      lock.Kind
		platforms []lock.Platform
		size      int64
	}{
		{
			ref:    "busybox:1.31.1",
			digest: "sha256:ea2528a21fc71247fdb25ff45a25fbe9abcbc635326ea364467f4a08abfbc9ba",
			kind:   lock.KindIndex,
			platforms: []lock.Platform{
				{Platform: "linux/amd64", Digest: "sha256:9f51fd24680b17a25fe41e8571f2aa7168caf87b63b8afa69fdd928e9282aac8", Size: 2390},
				{Platform: "linux/arm64/v8", Digest: "sha256:3b2b80989b1f962922930133b8213a467d7c9d8da8a7bac674ce3ae37a6f01c1", Size: 2405},
			},
		},
		{
			ref:    "registry.k8s.io/pause:3.10",
			digest: "sha256:96dd9fa0cfbfa78ed7c63bb11f1d651de34a74be0d39e662a4df01d65bd9c4b0",
			kind:   lock.KindManifest,
			size:   2384,
		},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			e, err := Entry(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if e.Digest != tc.digest || e.Kind != tc.kind || e.Size != tc.size || !reflect.DeepEqual(e.Platforms, tc.platforms) {
				t.Errorf("Entry(%q) = %+v\nwant digest %s, kind %s, size %d, platforms %+v", tc.ref, e, tc.digest, tc.kind, tc.size, tc.platforms)
			}
		})
	}
}

func TestSpellingsShareAStandIn(t *testing.T) {
	t.Parallel()
	for _, group := range [][]string{
		{"busybox:1.31.1", "docker.io/library/busybox:1.31.1", "index.docker.io/library/busybox:1.31.1", "busybox:1.31.1@sha256:1f3c66cf0f0e4c4da2f1d7c3f2b7d5b8e6a5c4f3e2d1c0b9a8f7e6d5c4b3a291"},
		{"nvidia/k8s-device-plugin:1.0.0-beta4", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", "index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4"},
	} {
		first, err := Entry(group[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range group[1:] {
			e, err := Entry(s)
			if err != nil {
				t.Fatal(err)
			}
			if e.Digest != first.Digest || e.Name != first.Name {
				t.Errorf("Entry(%q) = %s %s, want %s %s as for %q", s, e.Name, e.Digest, first.Name, first.Digest, group[0])
			}
			if e.Reference != s {
				t.Errorf("Entry(%q).Reference = %q, want the spelling as written", s, e.Reference)
			}
		}
	}
}

// refs is a spread of references for the properties below.
var refs = []string{
	"busybox:1.31.1",
	"nvidia/k8s-device-plugin:1.0.0-beta4",
	"ghcr.io/example-org/tool:2",
	"registry.lab.internal:5000/team/app",
	"localhost:5000/svc:1.2",
	"apache/submarine:jupyter-notebook-0.7.0",
	"apache/submarine:jupyter-notebook-0.7.0-chinese",
	"openpai/rest-server:v1.5.0",
	"openpai/hivedscheduler:v1.5.0",
	"registry.lab.internal/team/metadata-broker@sha256:7b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9",
}

func TestIndexOrManifest(t *testing.T) {
	t.Parallel()
	kinds := map[bool]int{}
	digests := map[string]string{}
	for _, s := range refs {
		ref := parse(t, s)
		k, _ := key(ref)
		sum := sha256.Sum256([]byte(k))
		wantIndex := sum[0]%2 == 0
		if IsIndex(ref) != wantIndex {
			t.Errorf("IsIndex(%s) = %v, want %v", s, !wantIndex, wantIndex)
		}
		img, idx, err := For(ref)
		if err != nil {
			t.Fatalf("For(%s): %v", s, err)
		}
		if (img == nil) == (idx == nil) {
			t.Fatalf("For(%s): img %v, idx %v; want exactly one", s, img, idx)
		}
		if (idx != nil) != wantIndex {
			t.Errorf("For(%s) gave index %v, want %v", s, idx != nil, wantIndex)
		}
		kinds[wantIndex]++
		e, err := Entry(s)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := digests[e.Digest]; dup {
			t.Errorf("%s and %s have the same stand-in digest %s", s, other, e.Digest)
		}
		digests[e.Digest] = s
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("kinds over %d refs = %v; want both indexes and manifests", len(refs), kinds)
	}
}

func TestStandInsAreWellFormed(t *testing.T) {
	t.Parallel()
	for _, s := range refs {
		t.Run(s, func(t *testing.T) {
			img, idx, err := For(parse(t, s))
			if err != nil {
				t.Fatal(err)
			}
			if img != nil {
				checkImage(t, img, single)
				return
			}
			if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
				t.Errorf("index media type = %s, want %s", mt, types.OCIImageIndex)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Manifests) != len(platforms) {
				t.Fatalf("index has %d children, want %d", len(im.Manifests), len(platforms))
			}
			for i, d := range im.Manifests {
				if d.Platform == nil || !d.Platform.Equals(platforms[i]) {
					t.Errorf("child %d platform = %v, want %v", i, d.Platform, platforms[i])
				}
				child, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, child, platforms[i])
			}
			if im.Manifests[0].Digest == im.Manifests[1].Digest {
				t.Errorf("children share digest %s; want them to differ by platform", im.Manifests[0].Digest)
			}
		})
	}
}

// checkImage checks the fixed recipe of one stand-in image for platform p.
func checkImage(t *testing.T, img v1.Image, p v1.Platform) {
	t.Helper()
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want %s", mt, types.OCIManifestSchema1)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Created.Time.Equal(epoch) || cfg.OS != p.OS || cfg.Architecture != p.Architecture || cfg.Variant != p.Variant {
		t.Errorf("config created %v, platform %s/%s/%s; want %v, %s", cfg.Created.Time, cfg.OS, cfg.Architecture, cfg.Variant, epoch, p.String())
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(tr)
	if hdr.Name != "stowage-standin.txt" || hdr.Mode != 0o644 || hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(epoch) {
		t.Errorf("layer file header = %+v; want stowage-standin.txt, 0644, uid/gid 0, mtime epoch", hdr)
	}
	if !bytes.Contains(body, []byte("platform: "+p.String()+"\n")) {
		t.Errorf("layer file = %q, want it to name platform %s", body, p.String())
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("layer has more than one file (next: %v)", err)
	}
}

func TestEntryMatchesImages(t *testing.T) {
	t.Parallel()
	for _, s := range refs {
		t.Run(s, func(t *testing.T) {
			ref := parse(t, s)
			e, err := Entry(s)
			if err != nil {
				t.Fatal(err)
			}
			if k, _ := key(ref); e.Name != k || e.Reference != s {
				t.Errorf("Name, Reference = %q, %q; want %q, %q", e.Name, e.Reference, k, s)
			}
			if err := lock.Validate(e); err != nil {
				t.Errorf("Entry does not validate: %v", err)
			}
			img, idx, err := For(ref)
			if err != nil {
				t.Fatal(err)
			}
			if img != nil {
				h, _ := img.Digest()
				m, _ := img.Manifest()
				size := m.Config.Size + m.Layers[0].Size
				if e.Kind != lock.KindManifest || e.Digest != h.String() || e.Size != size || e.Platforms != nil {
					t.Errorf("Entry = %+v; want manifest %s, size %d", e, h, size)
				}
				return
			}
			h, _ := idx.Digest()
			if e.Kind != lock.KindIndex || e.Digest != h.String() || e.Size != 0 {
				t.Errorf("Entry = %+v; want index %s without size", e, h)
			}
			im, _ := idx.IndexManifest()
			if len(e.Platforms) != len(im.Manifests) {
				t.Fatalf("Entry has %d platforms, index has %d children", len(e.Platforms), len(im.Manifests))
			}
			for i, d := range im.Manifests { // children are already in platform order
				child, _ := idx.Image(d.Digest)
				m, _ := child.Manifest()
				want := lock.Platform{Platform: d.Platform.String(), Digest: d.Digest.String(), Size: m.Config.Size + m.Layers[0].Size}
				if e.Platforms[i] != want {
					t.Errorf("platforms[%d] = %+v, want %+v", i, e.Platforms[i], want)
				}
			}
		})
	}
}

func TestEntryRefusesBadReference(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"https://harbor.lab.internal/release/notebook:1.1.0", "registry.example.org/foo/ScreenApp:1", "ghcr.io/example-org/img:"} {
		if _, err := Entry(s); err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Entry(%q) error = %v, want one naming the reference", s, err)
		}
	}
}

// TestSurvivesPush pushes stand-ins to go-containerregistry's in-process
// registry and reads the digests back, so a stand-in lock matches what a
// real registry serves.
func TestSurvivesPush(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, s := range refs[:4] {
		t.Run(s, func(t *testing.T) {
			ref := parse(t, s)
			img, idx, err := For(ref)
			if err != nil {
				t.Fatal(err)
			}
			e, err := Entry(s)
			if err != nil {
				t.Fatal(err)
			}
			dst, err := name.ParseReference(host+"/"+ref.Context().RepositoryStr()+":pushed", name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			if img != nil {
				err = remote.Write(dst, img)
			} else {
				err = remote.WriteIndex(dst, idx)
			}
			if err != nil {
				t.Fatalf("push %s: %v", dst, err)
			}
			desc, err := remote.Head(dst)
			if err != nil {
				t.Fatalf("head %s: %v", dst, err)
			}
			if desc.Digest.String() != e.Digest {
				t.Errorf("registry digest = %s, want %s", desc.Digest, e.Digest)
			}
			// Read the whole thing back and summarise it as the lock would.
			got, err := remote.Get(dst)
			if err != nil {
				t.Fatal(err)
			}
			var back lock.Entry
			if got.MediaType.IsIndex() {
				ri, err := got.ImageIndex()
				if err != nil {
					t.Fatal(err)
				}
				back, err = lock.IndexEntry(ri)
				if err != nil {
					t.Fatal(err)
				}
			} else {
				ri, err := got.Image()
				if err != nil {
					t.Fatal(err)
				}
				back, err = lock.ManifestEntry(ri)
				if err != nil {
					t.Fatal(err)
				}
			}
			back.Name, back.Reference = e.Name, e.Reference
			if !reflect.DeepEqual(back, e) {
				t.Errorf("pulled back %+v, want %+v", back, e)
			}
		})
	}
}
