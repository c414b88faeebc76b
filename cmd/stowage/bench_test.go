package main

import (
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/testing/configgen"
)

// BenchmarkRenderScale renders synthetic configs of 100 to 8,000 images
// through the whole CLI path (load, validate, lock, render, check, encode),
// in-process. The per-op time should grow linearly with the images.
func BenchmarkRenderScale(b *testing.B) {
	for _, n := range []int{100, 500, 2000, 8000} {
		dir := filepath.Join(b.TempDir(), "scale")
		if err := configgen.Generate(n, 40, dir); err != nil {
			b.Fatal(err)
		}
		b.Run("images="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code := run([]string{"render", dir}, strings.NewReader(""), io.Discard, io.Discard, envFrom(nil)); code != 0 {
					b.Fatalf("render exit %d", code)
				}
			}
		})
	}
}

// BenchmarkRenderExamples renders each example in-process.
func BenchmarkRenderExamples(b *testing.B) {
	for _, ex := range []string{"openpai-offline", "submarine-notebooks"} {
		dir := filepath.Join(repoRoot, "examples", ex)
		b.Run(ex, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code := run([]string{"render", dir}, strings.NewReader(""), io.Discard, io.Discard, envFrom(exampleEnv)); code != 0 {
					b.Fatalf("render exit %d", code)
				}
			}
		})
	}
}
