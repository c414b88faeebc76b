package render

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/testing/configgen"
	"github.com/stowage/stowage/schema"
)

// The benchmarks of the render hot path, per function, for benchstat:
//
//	go test -run '^$' -bench . -count 10 ./render > new.txt
//	benchstat old.txt new.txt
//
// (docs/benchmarks.md). The inputs are internal/testing/configgen's configs: N
// catalogue images over N/40 pullers, with their stand-in lock.

// benchInput loads a synthetic config of n images and its lock.
func benchInput(b *testing.B, n int) Input {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "scale")
	if err := configgen.Generate(n, 40, dir); err != nil {
		b.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		b.Fatal(err)
	}
	return Input{Config: cfg, Lock: l}
}

var benchSizes = []int{100, 2000}

// BenchmarkRender is Render alone: typed objects from a loaded config and
// lock, no encoding.
func BenchmarkRender(b *testing.B) {
	for _, n := range benchSizes {
		in := benchInput(b, n)
		b.Run(fmt.Sprintf("images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode is Encode of everything Render gives: the YAML stream
// `stowage render` writes.
func BenchmarkEncode(b *testing.B) {
	for _, n := range benchSizes {
		objs, err := Render(benchInput(b, n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				out, err := Encode(objs)
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.SetBytes(int64(size))
		})
	}
}

// BenchmarkMarshal is Marshal of one DaemonSet of MaxImagesPerDaemonSet
// images, the object most of the output is made of.
func BenchmarkMarshal(b *testing.B) {
	objs, err := Render(benchInput(b, MaxImagesPerDaemonSet))
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		if o.Kind != "DaemonSet" {
			continue
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(o); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.Fatal("no DaemonSet rendered")
}

// BenchmarkContainerNames names the init containers of one DaemonSet of
// MaxImagesPerDaemonSet images, some of whose names collide.
func BenchmarkContainerNames(b *testing.B) {
	var items []*item
	for i := range MaxImagesPerDaemonSet {
		s := fmt.Sprintf("registry.bench.internal:5000/team-%02d/app-%05d:v1", i%4, i/2)
		ref, err := imageref.Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, &item{name: fmt.Sprintf("appImage%d", i/2), use: &plan.Use{Ref: ref}})
	}
	b.ReportAllocs()
	for b.Loop() {
		containerNames(items)
	}
}
