// Package configgen generates synthetic stowage config directories, with their
// locks, for benchmarks and large-input tests.
package configgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// Generate writes a synthetic config directory for benchmarks and
// large-input tests: DIR/config.yaml with n catalogue images spread over
// max(1, n/per) pullers in up to 20 namespaces, and DIR/stowage.lock.yaml
// from the deterministic stand-in images. The same arguments always give
// the same bytes.
func Generate(n, per int, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pullers := max(1, n/per)
	var b strings.Builder
	b.WriteString("images:\n")
	l := &lock.Lock{}
	for i := range n {
		ref := fmt.Sprintf("registry.bench.internal:5000/team-%02d/app-%05d:v%d", i%20, i, i%7)
		fmt.Fprintf(&b, "  img-%05d: {reference: %q}\n", i, ref)
		e, err := offlineimage.Entry(ref)
		if err != nil {
			return err
		}
		l.Put(e)
	}
	for _, ref := range []string{"ghcr.io/stowage/stowage-helper:v0.1.0", "registry.k8s.io/pause:3.10"} {
		e, err := offlineimage.Entry(ref)
		if err != nil {
			return err
		}
		l.Put(e)
	}
	b.WriteString("profiles:\n  scale:\n    pullers:\n")
	for p := range pullers {
		fmt.Fprintf(&b, "    - name: puller-%03d\n      namespace: tenant-%02d\n      images: [", p, p%20)
		first := true
		for i := p; i < n; i += pullers {
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, "img-%05d", i)
		}
		b.WriteString("]\n")
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "config.yaml"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, lock.FileName), l.Marshal(), 0o644)
}
