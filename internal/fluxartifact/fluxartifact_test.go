package fluxartifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

var files = map[string][]byte{
	"kustomization.yaml":          []byte("resources:\n- daemonset.yaml\n"),
	"daemonset.yaml":              []byte("kind: DaemonSet\n"),
	"configmap-records.yaml":      []byte("kind: ConfigMap\n"),
	"nested/dir/secret-pull.yaml": []byte("kind: Secret\n"),
}

var meta = Metadata{Created: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Source: "https://git.example.org/x.git", Revision: "main@sha1:0123"}

// TestImageLayout: Flux's media types and annotations, and one layer
// holding the files sorted, with fixed modes, owners and times.
func TestImageLayout(t *testing.T) {
	t.Parallel()
	img, err := Image(files, meta)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ContentMediaType {
		t.Fatalf("manifest %s config %s layers %v", m.MediaType, m.Config.MediaType, m.Layers)
	}
	want := map[string]string{CreatedAnnotation: "2026-12-01T10:00:00Z", SourceAnnotation: meta.Source, RevisionAnnotation: meta.Revision}
	if len(m.Annotations) != len(want) {
		t.Errorf("annotations %v, want %v", m.Annotations, want)
	}
	for k, v := range want {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header carries name %q time %v", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: owner %d:%d %q, time %v", h.Name, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if h.Mode != 0o755 {
				t.Errorf("%s: mode %o", h.Name, h.Mode)
			}
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			if h.Mode != 0o644 || !bytes.Equal(b, files[h.Name]) {
				t.Errorf("%s: mode %o, content %q", h.Name, h.Mode, b)
			}
		default:
			t.Errorf("%s: type %c", h.Name, h.Typeflag)
		}
	}
	wantNames := []string{"configmap-records.yaml", "daemonset.yaml", "kustomization.yaml", "nested/", "nested/dir/", "nested/dir/secret-pull.yaml"}
	if len(names) != len(wantNames) {
		t.Fatalf("tar entries %v, want %v", names, wantNames)
	}
	for i := range names {
		if names[i] != wantNames[i] {
			t.Fatalf("tar entries %v, want %v", names, wantNames)
		}
	}
}

// TestImageReproducible: the same files and metadata give the same
// digest; another created time or content gives another.
func TestImageReproducible(t *testing.T) {
	t.Parallel()
	digest := func(f map[string][]byte, m Metadata) string {
		img, err := Image(f, m)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	a, b := digest(files, meta), digest(files, meta)
	if a != b {
		t.Fatalf("two builds: %s and %s", a, b)
	}
	later := meta
	later.Created = later.Created.Add(time.Second)
	if digest(files, later) == a {
		t.Error("another created time gives the same digest")
	}
	other := map[string][]byte{"kustomization.yaml": []byte("resources: []\n")}
	if digest(other, meta) == a {
		t.Error("other files give the same digest")
	}
}

// TestTarRefusesNames: a name leaving the artifact's root is refused.
func TestTarRefusesNames(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"", "/etc/passwd", "../x.yaml", "a/../../x", "./a.yaml", "a//b"} {
		if _, err := Tar(map[string][]byte{n: nil}); err == nil {
			t.Errorf("Tar accepted %q", n)
		}
	}
}
