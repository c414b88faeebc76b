package lock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/configgen"
)

// benchLock returns the bytes of internal/testing/configgen's lock of n images (about
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

// scaleLock is a lock file of n manifest entries written in a scrambled
// order (a fixed permutation), as a hand-edited or merged lock may be:
// Parse sorts what it reads.
func scaleLock(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\nspec:\n  images:\n")
	for k := range n {
		i := (k * 7919) % n // 7919 is prime: a permutation for every n not a multiple of it
		ref := fmt.Sprintf("registry.example.com/team/image-%07d:v1", i)
		fmt.Fprintf(&b, "  - name: %s\n    reference: %s\n    digest: sha256:%064x\n    kind: manifest\n    size: %d\n", ref, ref, i, 1000+i)
	}
	return []byte(b.String())
}

// BenchmarkParseScale is Parse of a lock of n entries in scrambled order,
// for the growth of the cost with the lock's size (it should be about
// linear: 20× the entries, about 20× the time).
func BenchmarkParseScale(b *testing.B) {
	for _, n := range []int{10_000, 50_000, 200_000} {
		data := scaleLock(n)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				l, err := lock.Parse(data, lock.FileName)
				if err != nil {
					b.Fatal(err)
				}
				if len(l.Entries) != n {
					b.Fatalf("%d entries, want %d", len(l.Entries), n)
				}
			}
		})
	}
}
