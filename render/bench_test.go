package render_test

import (
	"path/filepath"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/testing/configgen"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// BenchmarkPipeline is the pipeline as `stowage render` runs it once the
// config is loaded and the lock parsed: ReadNeeded, then Render (the lock
// checked, the plan built, the objects made), no encoding. Against
// internal/render's BenchmarkRender it shows what the public path adds:
//
//	go test -run '^$' -bench 'Pipeline|Render$' ./render ./internal/render
func BenchmarkPipeline(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "scale")
	if err := configgen.Generate(2000, 40, dir); err != nil {
		b.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := render.ReadLock(filepath.Join(dir, v1alpha1.ImageLockFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("images=2000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pw, trust, err := render.ReadNeeded(dir, cfg, "", nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := render.Render(render.Input{Config: cfg, Lock: l, Passwords: pw, Trust: trust}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
