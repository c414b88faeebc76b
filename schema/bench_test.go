package schema

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stowage/stowage/internal/testing/configgen"
)

// BenchmarkLoad is Load of each example and of internal/testing/configgen's configs:
// reading the files, unifying them with the schema, validating and
// decoding. Compare with benchstat (docs/benchmarks.md).
func BenchmarkLoad(b *testing.B) {
	dirs := map[string]string{
		"openpai-offline":     filepath.Join("..", "examples", "openpai-offline"),
		"submarine-notebooks": filepath.Join("..", "examples", "submarine-notebooks"),
	}
	for _, n := range []int{100, 2000} {
		dir := filepath.Join(b.TempDir(), "scale")
		if err := configgen.Generate(n, 40, dir); err != nil {
			b.Fatal(err)
		}
		dirs[fmt.Sprintf("images=%d", n)] = dir
	}
	for _, name := range []string{"openpai-offline", "submarine-notebooks", "images=100", "images=2000"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(dirs[name], Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
