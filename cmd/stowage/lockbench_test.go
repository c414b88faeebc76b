package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// BenchmarkLockVerify signs STOWAGE_BENCH_SIGNED images (default 20) and
// the helper with the real cosign on a docker-registry, then times
// `stowage lock` of a config naming them all, from an empty lock, without
// a verify policy and with one naming the key, against `cosign verify --key
// --insecure-ignore-tlog` run once per image (STOWAGE_BENCH_SIGNED=200 go
// test -bench LockVerify -run '^$' -benchtime 1x ./cmd/stowage; the
// numbers are in docs/benchmarks.md).
func BenchmarkLockVerify(b *testing.B) {
	n := 20
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
	var refs []string
	start := time.Now()
	for i := range n + 1 {
		img, err := random.Image(1024, 1)
		if err != nil {
			b.Fatal(err)
		}
		tag := repo.Tag(fmt.Sprintf("v%d", i))
		if err := remote.Write(tag, img); err != nil {
			b.Fatal(err)
		}
		h, _ := img.Digest()
		cs.Must("sign", "--new-bundle-format=false", "--key", keyFile, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+h.String())
		refs = append(refs, tag.Name())
	}
	b.Logf("signed %d images in %s", n+1, time.Since(start).Round(time.Millisecond))
	pem, err := os.ReadFile(pub)
	if err != nil {
		b.Fatal(err)
	}
	config := func(dir string, verify bool) {
		var s strings.Builder
		s.WriteString("images:\n")
		var names []string
		for i, r := range refs[:n] {
			fmt.Fprintf(&s, "  app%d: {reference: %q}\n", i, r)
			names = append(names, fmt.Sprintf("app%d", i))
		}
		fmt.Fprintf(&s, "helper: {image: %q}\n", refs[n])
		fmt.Fprintf(&s, "profiles: {p: {pullers: [{name: pre, namespace: pre, images: [%s]}]}}\n", strings.Join(names, ", "))
		if verify {
			s.WriteString("verify: {keys: [keys/bench.pub]}\n")
		}
		writeFile(b, filepath.Join(dir, "keys", "bench.pub"), pem)
		writeFile(b, filepath.Join(dir, "stowage.yaml"), []byte(s.String()))
	}
	for _, verify := range []bool{false, true} {
		b.Run(fmt.Sprintf("lock/verify=%v", verify), func(b *testing.B) {
			dir := b.TempDir()
			config(dir, verify)
			for range b.N {
				b.StopTimer()
				os.Remove(filepath.Join(dir, "stowage.lock.yaml"))
				b.StartTimer()
				if _, stderr, code := runCLI(b, nil, "lock", dir, "--insecure-registry", d.Host, "-q"); code != 0 {
					b.Fatalf("lock exit %d:\n%s", code, stderr)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/image")
		})
	}
	b.Run("cosign-verify", func(b *testing.B) {
		for range b.N {
			for _, r := range refs[:n] {
				cs.Must("verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--allow-insecure-registry", r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/image")
	})
}
