package output

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/render"
)

// ErrStale is CheckRender's verdict on a directory that does not hold
// what render writes.
var ErrStale = errors.New("the output directory is stale")

// CheckRender is `render --check`: it compares files, the rendering of
// objs (render.Files), with the directory out, records each file that
// differs, the entries stowage did not write and the diff in rep, and,
// when a file differs, prints on stderr the files, a bounded diff
// (WriteDiff) and advice that works, and returns ErrStale. configDir is
// the config directory rendered, for the advice. Errors: out cannot be
// read.
func CheckRender(stderr io.Writer, rep *v1alpha1.RenderCheckReport, configDir, out string, objs []render.Object, files map[string][]byte) error {
	diff, err := DiffFiles(out, files)
	if err != nil {
		return err
	}
	foreign, err := Foreign(out)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	rep.Foreign = append(rep.Foreign, foreign...)
	if len(diff) == 0 {
		return nil
	}
	rep.Changed = diff
	fmt.Fprintf(stderr, "stowage: %s is stale:\n", out)
	for _, d := range diff {
		fmt.Fprintf(stderr, "  %s\n", d)
	}
	var text strings.Builder
	WriteDiff(&text, out, diff, files, SecretFiles(objs))
	rep.Diff = text.String()
	io.WriteString(stderr, rep.Diff)
	// Advice that works: render --output-dir refuses a directory holding
	// files stowage did not write.
	if err := CheckDir(out, "--output-dir"); err != nil {
		fmt.Fprintf(stderr, "%v.\nMove those files out of %s (or render into a directory of its own), then run `stowage render %s --output-dir %s` and commit the result.\n", err, out, configDir, out)
	} else {
		fmt.Fprintf(stderr, "Run `stowage render %s --output-dir %s` and commit the result.\n", configDir, out)
	}
	return ErrStale
}

// Bounds of the diff `render --check` prints (WriteDiff): lines per file
// and in all, and the largest committed file compared line by line, in
// bytes.
const (
	DiffFileLines  = 60
	DiffTotalLines = 300
	diffReadLimit  = 4 << 20
)

// WriteDiff prints a unified diff (3 lines of context) of each
// file diff says "changed", the committed file in dir against the rendered
// one, at most DiffFileLines lines per file and DiffTotalLines in
// all; what is cut is counted. Files it cannot read are named. The files
// named in secrets (rendered Secrets) are never shown: their lines hold
// credentials.
func WriteDiff(w io.Writer, dir string, diff []FileDiff, files map[string][]byte, secrets map[string]bool) {
	total := 0
	for _, d := range diff {
		name := d.File
		if d.Status != "changed" {
			continue
		}
		if secrets[name] {
			fmt.Fprintf(w, "  (%s is a Secret: its diff is not shown)\n", name)
			continue
		}
		have, err := readDiffSide(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintf(w, "  (%s: %v)\n", name, err)
			continue
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A:        difflib.SplitLines(string(have)),
			B:        difflib.SplitLines(string(files[name])),
			FromFile: filepath.Join(dir, name) + " (committed)",
			ToFile:   filepath.Join(dir, name) + " (rendered now)",
			Context:  3,
		})
		if err != nil {
			fmt.Fprintf(w, "  (%s: %v)\n", name, err)
			continue
		}
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		limit := min(DiffFileLines, DiffTotalLines-total)
		if limit <= 0 {
			fmt.Fprintf(w, "  (diff of %s not shown: %d lines already)\n", name, total)
			continue
		}
		shown := lines[:min(len(lines), limit)]
		for _, l := range shown {
			if !strings.HasSuffix(l, "\n") {
				l += "\n\\ No newline at end of file\n"
			}
			io.WriteString(w, l)
		}
		total += len(shown)
		if cut := len(lines) - len(shown); cut > 0 {
			fmt.Fprintf(w, "  (%d more diff lines of %s not shown)\n", cut, name)
		}
	}
}

// readDiffSide reads a file of at most diffReadLimit bytes.
func readDiffSide(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, diffReadLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > diffReadLimit {
		return nil, fmt.Errorf("larger than %d bytes, not compared line by line", diffReadLimit)
	}
	return b, nil
}

// SecretFiles are the file names (render.Object.FileName) of the Secrets
// among objs: the files WriteDiff never shows.
func SecretFiles(objs []render.Object) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "Secret" {
			out[o.FileName()] = true
		}
	}
	return out
}
