package imageset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// fileNames lists a loaded chart's templates and other files, and its
// values' keys, sorted.
func fileNames(c *chart.Chart) []string {
	var names []string
	for _, f := range c.Templates {
		names = append(names, "template:"+f.Name+":"+string(f.Data))
	}
	for _, f := range c.Files {
		names = append(names, "file:"+f.Name)
	}
	for k := range c.Values {
		names = append(names, "value:"+k)
	}
	slices.Sort(names)
	return names
}

// TestLoadChartDirIsLoadDir: on charts without links, the confined loader
// gives the chart Helm's own loader.LoadDir gives: the same metadata,
// templates (names and bytes), other files and values, .helmignore
// applied.
func TestLoadChartDirIsLoadDir(t *testing.T) {
	ignored := t.TempDir()
	copyTree(t, "testdata/gpu-operator", ignored)
	// An ignored template that does not parse, and an ignored directory.
	writeFile(t, filepath.Join(ignored, ".helmignore"), "*.bak\nscratch/\n")
	writeFile(t, filepath.Join(ignored, "templates", "old.yaml.bak"), "{{ broken")
	writeFile(t, filepath.Join(ignored, "scratch", "notes.txt"), "x")
	writeFile(t, filepath.Join(ignored, "files", "extra.conf"), "kept\n")
	for _, dir := range []string{"testdata/gpu-operator", "testdata/broken-chart", ignored} {
		want, err := loader.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := loadChartDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if got.Metadata.Name != want.Metadata.Name || got.Metadata.Version != want.Metadata.Version {
			t.Errorf("%s: metadata %s %s, LoadDir's %s %s", dir, got.Metadata.Name, got.Metadata.Version, want.Metadata.Name, want.Metadata.Version)
		}
		if g, w := fileNames(got), fileNames(want); !slices.Equal(g, w) || len(g) < 2 {
			t.Errorf("%s: loaded\n%q\nLoadDir loaded\n%q", dir, g, w)
		}
		if dir == ignored {
			names := strings.Join(fileNames(got), "\n")
			if !strings.Contains(names, "file:files/extra.conf") || strings.Contains(names, ".bak") || strings.Contains(names, "scratch") {
				t.Errorf(".helmignore not applied as LoadDir applies it:\n%s", names)
			}
		}
	}
}

// TestLoadChartDirRefusesLinks: a chart directory holding a symbolic link
// (to a file outside the chart, or inside it) or a FIFO is refused with
// the entry's path, and the linked file's content appears nowhere.
func TestLoadChartDirRefusesLinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "image: s3cr3t.example/leak:1\n")
	for _, c := range []struct {
		name string
		make func(dir string) error
		want string
	}{
		{"link out", func(dir string) error { return os.Symlink(secret, filepath.Join(dir, "templates", "leak.yaml")) },
			"templates/leak.yaml: a symbolic link; a chart directory is read for its regular files only"},
		{"link in", func(dir string) error { return os.Symlink("values.yaml", filepath.Join(dir, "values2.yaml")) },
			"values2.yaml: a symbolic link"},
		{"dir link", func(dir string) error { return os.Symlink("/", filepath.Join(dir, "templates", "root")) },
			"templates/root: a symbolic link"},
		{"helmignore link", func(dir string) error { return os.Symlink(secret, filepath.Join(dir, ".helmignore")) },
			".helmignore: a symbolic link"},
		{"fifo", mkfifo, "templates/pipe.yaml: a FIFO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, "testdata/gpu-operator", dir)
			if err := c.make(dir); err != nil {
				t.Skipf("cannot make the entry here: %v", err)
			}
			_, _, err := FromChart(dir, ChartOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("FromChart: %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the linked file's content is in the error: %v", err)
			}
		})
	}
}

// TestLoadChartDirBounds: the files of a chart directory together are
// bounded by MaxChartBytes, and one file by Helm's own per-file limit.
func TestLoadChartDirBounds(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/gpu-operator", dir)
	for i := range 5 {
		writeFile(t, filepath.Join(dir, "files", "blob"+string(rune('a'+i))), strings.Repeat("x", int(loader.MaxDecompressedFileSize)))
	}
	if _, err := loadChartDir(dir); err == nil || !strings.Contains(err.Error(), "larger than 20971520 bytes, the limit of a chart") {
		t.Errorf("20 MiB of files: %v", err)
	}
	one := t.TempDir()
	copyTree(t, "testdata/gpu-operator", one)
	writeFile(t, filepath.Join(one, "files", "big"), strings.Repeat("x", int(loader.MaxDecompressedFileSize)+1))
	if _, err := loadChartDir(one); err == nil || !strings.Contains(err.Error(), "files/big: larger than 5242880 bytes, Helm's limit of a chart file") {
		t.Errorf("one large file: %v", err)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFile(t, filepath.Join(dst, rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
