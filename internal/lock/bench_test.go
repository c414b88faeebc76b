package lock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stowage/stowage/internal/configgen"
	"github.com/stowage/stowage/internal/lock"
)

// benchLock returns the bytes of internal/configgen's lock of n images (about
// half of them multi-arch indexes).
func benchLock(b *testing.B, n int) []byte {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "scale")
	if err := configgen.Generate(n, 40, dir); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, lock.FileName))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkParse is Parse of a lock of n images, validation included.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{100, 2000} {
		data := benchLock(b, n)
		b.Run(fmt.Sprintf("images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := lock.Parse(data, lock.FileName); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshal is Marshal of a lock of n images.
func BenchmarkMarshal(b *testing.B) {
	for _, n := range []int{100, 2000} {
		l, err := lock.Parse(benchLock(b, n), lock.FileName)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.Marshal()
			}
		})
	}
}

// BenchmarkLookup looks up every entry of a lock of 2,000 images, as
// render pins every image.
func BenchmarkLookup(b *testing.B) {
	l, err := lock.Parse(benchLock(b, 2000), lock.FileName)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range l.Entries {
			if _, ok := l.Lookup(e.Name); !ok {
				b.Fatal(e.Name)
			}
		}
	}
}
