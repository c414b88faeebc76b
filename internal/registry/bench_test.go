package registry_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// BenchmarkLock resolves 200 distinct tags (about half of them multi-arch
// indexes) on Debian's docker-registry: a fresh lock (Fill from an empty
// lock: one GET per tag, one more per child of an index) and a steady-state
// bump (Refresh: one HEAD per tag). It is skipped without docker-registry.
// `make bench` measures the whole commands at 1,000 tags against the other
// tools; this is the in-process view, for profiles:
//
//	go test -run '^$' -bench Lock -cpuprofile cpu.out ./internal/registry
func BenchmarkLock(b *testing.B) {
	d := registrytest.Start(b, registrytest.Options{})
	r, err := registry.New(registry.WithInsecure(d.Host))
	if err != nil {
		b.Fatal(err)
	}
	refs := make([]string, 200)
	images := make([]*plan.Image, len(refs))
	for i := range refs {
		refs[i] = fmt.Sprintf("%s/bench/img:t%04d", d.Host, i)
		ref, err := imageref.Parse(refs[i])
		if err != nil {
			b.Fatal(err)
		}
		images[i] = &plan.Image{Key: ref.Key(), Ref: ref}
	}
	if err := registrytest.SeedStandIns(context.Background(), r, nil, refs, 8); err != nil {
		b.Fatal(err)
	}
	var full *lock.Lock
	b.Run("fill", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// A new Resolver per run, as each `stowage lock` has: its own
			// pings and connections.
			r, err := registry.New(registry.WithInsecure(d.Host))
			if err != nil {
				b.Fatal(err)
			}
			if full, err = r.Lock(context.Background(), nil, images, registry.Fill); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("refresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := registry.New(registry.WithInsecure(d.Host))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Lock(context.Background(), full, images, registry.Refresh); err != nil {
				b.Fatal(err)
			}
		}
	})
}
