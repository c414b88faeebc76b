package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/testing/configgen"
	"github.com/stowage/stowage/internal/testing/kubecheck"
)

// TestApplyLargeConfigs applies generated configs (internal/testing/configgen, stand-in
// lock) to a real API server: 2,000 images across 50 pullers in 20
// namespaces, and a single puller of 60 images, which stowage splits into
// DaemonSets of at most render.MaxImagesPerDaemonSet images. The rendered
// stream passes the strict checks, every object is accepted by server-side
// apply and reads back as rendered.
func TestApplyLargeConfigs(t *testing.T) {
	c := startAPIServer(t)
	for _, tc := range []struct {
		name              string
		images, per       int
		namespace         string // replaces synth's tenant-NN namespaces, to keep the cases apart
		daemonSets, lists int
	}{
		{name: "2000-images", images: 2000, per: 40, daemonSets: 100, lists: 50},
		{name: "one-puller-60-images", images: 60, per: 60, namespace: "single-", daemonSets: 2, lists: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "config")
			if err := configgen.Generate(tc.images, tc.per, dir); err != nil {
				t.Fatal(err)
			}
			if tc.namespace != "" {
				path := filepath.Join(dir, "config.yaml")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b = []byte(strings.ReplaceAll(string(b), "namespace: tenant-", "namespace: "+tc.namespace))
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, l := loadExample(t, dir)
			start := time.Now()
			objs := renderProfile(t, cfg, dir, "", l, nil)
			stream, err := render.Encode(objs)
			if err != nil {
				t.Fatal(err)
			}
			if err := kubecheck.CheckAll(stream); err != nil {
				t.Fatalf("the rendered stream fails the strict checks: %v", err)
			}
			t.Logf("rendered and checked %d objects (%d bytes) in %v", len(objs), len(stream), time.Since(start).Round(time.Millisecond))

			count := map[string]int{}
			for _, o := range objs {
				count[o.Kind]++
			}
			if count["DaemonSet"] != tc.daemonSets || count["ConfigMap"] != tc.lists {
				t.Errorf("%d DaemonSets and %d ConfigMaps, want %d and %d", count["DaemonSet"], count["ConfigMap"], tc.daemonSets, tc.lists)
			}

			want := manifests(t, objs)
			start = time.Now()
			c.createNamespaces(t, want)
			c.apply(t, want)
			c.readBack(t, want)
			t.Logf("applied and read back %d objects in %v", len(want), time.Since(start).Round(time.Millisecond))
		})
	}
}
