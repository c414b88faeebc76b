package sigverify

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// BenchmarkVerify signs STOWAGE_BENCH_SIGNED images (default 50) with the
// real cosign on a docker-registry, then times, per image, Verify (what
// lock is to run, sequentially, one Puller) against `cosign verify --key
// --insecure-ignore-tlog` run once per image (go test -bench Verify -run
// '^$' ./internal/sigverify; the numbers are in docs/benchmarks.md).
func BenchmarkVerify(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("STOWAGE_BENCH_SIGNED")); err == nil && v > 0 {
		n = v
	}
	cs := cosigntest.Lookup(b)
	d := registrytest.Start(b, registrytest.Options{})
	repo, err := name.NewRepository(d.Host+"/bench/app", name.Insecure)
	if err != nil {
		b.Fatal(err)
	}
	keyFile, pub := cs.KeyPair("bench")
	var digests []v1.Hash
	start := time.Now()
	for i := range n {
		img, err := random.Image(1024, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := remote.Write(repo.Tag(fmt.Sprintf("v%d", i)), img); err != nil {
			b.Fatal(err)
		}
		h, _ := img.Digest()
		cs.Must("sign", "--new-bundle-format=false", "--key", keyFile, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+h.String())
		digests = append(digests, h)
	}
	b.Logf("signed %d images in %s", n, time.Since(start).Round(time.Millisecond))
	raw, err := os.ReadFile(pub)
	if err != nil {
		b.Fatal(err)
	}
	k, err := LoadKey(pub, raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sigverify", func(b *testing.B) {
		p, err := remote.NewPuller()
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			for _, h := range digests {
				if _, err := Verify(context.Background(), repo, p, h, []*Key{k}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/image")
	})
	b.Run("cosign-verify", func(b *testing.B) {
		for range b.N {
			for _, h := range digests {
				cs.Must("verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--allow-insecure-registry", repo.Name()+"@"+h.String())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/image")
	})
}
