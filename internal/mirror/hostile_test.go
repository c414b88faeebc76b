package mirror

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestEndlessBlobStopsAtItsSize: a source registry whose blob answer never
// ends is read to the blob's declared size and one byte, then the image
// fails naming the blob; the destination receives no more than that.
func TestEndlessBlobStopsAtItsSize(t *testing.T) {
	img := registrytest.Image(t, registrytest.Layer("endless", 5000))
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	big := ls[0]
	bigDigest := registrytest.Digest(t, big)
	var sent atomic.Int64
	next := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+bigDigest.String()) {
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 32<<10)
			for sent.Load() < 1<<30 {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(src.Close)
	srcHost := strings.TrimPrefix(src.URL, "http://")
	dst, dstCount := startRegistry(t)
	repo, _ := name.NewRepository(srcHost+"/team/endless", name.Insecure)
	if err := remote.Write(repo.Tag("1"), img); err != nil {
		t.Fatal(err)
	}
	r, err := registry.New(registry.WithInsecure(srcHost, dst), registry.WithKeychain(authn.NewMultiKeychain()), registry.WithRetry(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(WithResolver(r), WithToImageSites())
	if err != nil {
		t.Fatal(err)
	}
	_, err = runAll(t, m, []Image{{Name: repo.Name() + ":1", Source: repo, Tag: "1", Digest: registrytest.Digest(t, img), Site: dst + "/team/endless"}})
	var oe *OversizeBlobError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), bigDigest.String()) {
		t.Fatalf("err = %v", err)
	}
	dstCount.mu.Lock()
	got := dstCount.bytes
	dstCount.mu.Unlock()
	cfg, _ := img.RawConfigFile()
	if size, _ := big.Size(); got > size+1+int64(len(cfg)) {
		t.Errorf("the destination received %d bytes of a %d-byte blob and a %d-byte config", got, size, len(cfg))
	}
	if n := sent.Load(); n >= 1<<30 {
		t.Errorf("the source sent %d bytes: the read did not stop", n)
	}
}
