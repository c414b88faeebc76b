package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/render"
)

// Bounds of the diff `render --check` prints: lines per file and in all.
const (
	checkDiffFileLines  = 60
	checkDiffTotalLines = 300
	checkDiffReadLimit  = 4 << 20
)

// writeCheckDiff prints a unified diff (3 lines of context) of each
// "changed NAME" in diff, the committed file in dir against the rendered
// one, at most checkDiffFileLines lines per file and checkDiffTotalLines in
// all; what is cut is counted. Files it cannot read are named. The files
// named in secrets (rendered Secrets) are never shown: their lines hold
// credentials.
func writeCheckDiff(w io.Writer, dir string, diff []string, files map[string][]byte, secrets map[string]bool) {
	total := 0
	for _, d := range diff {
		name, ok := strings.CutPrefix(d, "changed ")
		if !ok {
			continue
		}
		if secrets[name] {
			fmt.Fprintf(w, "  (%s is a Secret: its diff is not shown)\n", name)
			continue
		}
		have, err := readBounded(filepath.Join(dir, name))
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
		limit := min(checkDiffFileLines, checkDiffTotalLines-total)
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

// readBounded reads a regular file of at most checkDiffReadLimit bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, checkDiffReadLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > checkDiffReadLimit {
		return nil, fmt.Errorf("larger than %d bytes, not compared line by line", checkDiffReadLimit)
	}
	return b, nil
}

// renderCheck is `render --check`: it compares files, the rendering of
// objs, with the directory out, and when they differ prints on stderr the
// files, a bounded diff (writeCheckDiff) and advice that works, records
// the same in rep, and returns errCheckFailed. configDir is the DIR
// argument, for the advice.
func renderCheck(stderr io.Writer, rep *checkReport, configDir, out string, objs []render.Object, files map[string][]byte) error {
	diff, err := output.DiffFiles(out, files)
	if err != nil {
		return err
	}
	foreign, err := output.Foreign(out)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	rep.Foreign = append(rep.Foreign, foreign...)
	if len(diff) == 0 {
		return nil
	}
	rep.Changed = diff
	fmt.Fprintf(stderr, "stowage: %s is stale:\n", out)
	lines := make([]string, len(diff))
	for i, d := range diff {
		lines[i] = d.String()
		fmt.Fprintf(stderr, "  %s\n", d)
	}
	secrets := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "Secret" {
			secrets[o.FileName()] = true
		}
	}
	var text strings.Builder
	writeCheckDiff(&text, out, lines, files, secrets)
	rep.Diff = text.String()
	io.WriteString(stderr, rep.Diff)
	// Advice that works: render -o refuses a directory holding files
	// stowage did not write.
	if err := output.CheckDir(out, "--output-dir"); err != nil {
		fmt.Fprintf(stderr, "%v.\nMove those files out of %s (or render into a directory of its own), then run `stowage render %s --output-dir %s` and commit the result.\n", err, out, configDir, out)
	} else {
		fmt.Fprintf(stderr, "Run `stowage render %s --output-dir %s` and commit the result.\n", configDir, out)
	}
	return errCheckFailed
}

// checkReport is `render --check --format json`'s output, on stdout also
// when render fails: the verdict, the directory compared, each file that
// differs, the entries of the directory stowage did not write (render -o
// refuses it until they are moved), the unified diff printed on stderr
// (empty when no file changed; never a Secret's lines), and every other
// error with its place. Lists are sorted by file name and present, empty
// when there is nothing to list.
type checkReport struct {
	OK      bool              `json:"ok"`
	Dir     string            `json:"dir"`
	Changed []output.FileDiff `json:"changed"`
	Foreign []string          `json:"foreign"`
	Diff    string            `json:"diff"`
	Errors  []vetError        `json:"errors"`
}

// newCheckReport is the report of a check of dir, before anything is
// known.
func newCheckReport(dir string) *checkReport {
	return &checkReport{Dir: dir, Changed: []output.FileDiff{}, Foreign: []string{}, Errors: []vetError{}}
}

// write prints the report as JSON with render's outcome err and returns
// err unchanged (exit code and stderr as they are). A check that found
// differences is not an error (Changed says them); a usage error prints
// no report.
func (r *checkReport) write(w io.Writer, err error) error {
	if isUsage(err) {
		return err
	}
	r.OK = err == nil
	if err != nil && !errors.Is(err, errCheckFailed) {
		r.Errors = reportErrors(err)
	}
	if werr := writeReport(w, r); werr != nil && err == nil {
		return werr
	}
	return err
}
