package imageset

import (
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// packChart packs the chart directory dir into the archive file, with
// Helm's own chartutil.Save (what helm package does).
func packChart(t *testing.T, dir, file string) error {
	t.Helper()
	c, err := loader.Load(dir)
	if err != nil {
		return err
	}
	tmp := t.TempDir()
	p, err := chartutil.Save(c, tmp)
	if err != nil {
		return err
	}
	return os.Rename(p, filepath.Clean(file))
}
