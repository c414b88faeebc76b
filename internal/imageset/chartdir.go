package imageset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"

	"github.com/stowage/stowage/internal/confined"
)

// loadChart loads the chart at p: a .tgz through Helm's loader (which
// reads the archive's entries only, bounded), a directory through
// loadChartDir.
func loadChart(p string) (*chart.Chart, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if err := checkFileSize(p, MaxChartBytes, "a chart archive"); err != nil {
			return nil, err
		}
		return loader.LoadFile(p)
	}
	return loadChartDir(p)
}

// loadChartDir reads the chart directory dir as Helm's loader.LoadDir does
// (its .helmignore and Helm's default ignore rules applied, a UTF-8 byte
// order mark dropped, the files handed to loader.LoadFiles), but every
// read goes through an os.Root at dir, and a symbolic link, device, socket
// or FIFO is refused with its path: LoadDir follows links, so a chart in a
// repository anyone can change could read any file of the repo server
// (a link to /etc/passwd rendered into a template's output) or walk out
// of the checkout. The files together are bounded by MaxChartBytes and
// MaxChartFiles, each by Helm's loader.MaxDecompressedFileSize.
func loadChartDir(dir string) (*chart.Chart, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rules, err := helmIgnore(root)
	if err != nil {
		return nil, err
	}
	var files []*loader.BufferedFile
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rules.Ignore(name, fi) {
				return fs.SkipDir
			}
			return nil
		}
		if rules.Ignore(name, fi) {
			return nil
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: %s; a chart directory is read for its regular files only (copy the file into the chart, or give the chart as the .tgz helm package makes)", name, confined.TypeName(fi.Mode()))
		}
		if len(files) == MaxChartFiles {
			return fmt.Errorf("more than %d files, the limit of a chart", MaxChartFiles)
		}
		if fi.Size() > loader.MaxDecompressedFileSize {
			return fmt.Errorf("%s: larger than %d bytes, Helm's limit of a chart file", name, loader.MaxDecompressedFileSize)
		}
		if total+fi.Size() > MaxChartBytes {
			return fmt.Errorf("larger than %d bytes, the limit of a chart", MaxChartBytes)
		}
		data, err := readBounded(root, name, fi.Size())
		if err != nil {
			return err
		}
		total += int64(len(data))
		files = append(files, &loader.BufferedFile{Name: name, Data: bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}

// helmIgnore reads root's .helmignore (bounded by MaxValuesBytes) and adds
// Helm's default rules, as loader.LoadDir does.
func helmIgnore(root *os.Root) (*ignore.Rules, error) {
	rules := ignore.Empty()
	fi, err := root.Lstat(ignore.HelmIgnore)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %s; a chart directory is read for its regular files only", ignore.HelmIgnore, confined.TypeName(fi.Mode()))
	default:
		data, err := readBounded(root, ignore.HelmIgnore, MaxValuesBytes)
		if err != nil {
			return nil, err
		}
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// readBounded reads root's regular file name, refusing more than max
// bytes (for a listed file, its size then: it grew since).
func readBounded(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s; a chart directory is read for its regular files only", name, confined.TypeName(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes (it grew while it was read, or is larger than the limit)", name, max)
	}
	return data, nil
}
