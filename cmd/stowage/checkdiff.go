package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
)

// renderCheck is `render --check`: it compares files, the rendering of
// objs, with the directory out, and when they differ prints on stderr the
// files, a bounded diff (output.WriteDiff) and advice that works, records
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
	for _, d := range diff {
		fmt.Fprintf(stderr, "  %s\n", d)
	}
	var text strings.Builder
	output.WriteDiff(&text, out, diff, files, output.SecretFiles(objs))
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
	OK      bool                   `json:"ok"`
	Dir     string                 `json:"dir"`
	Changed []output.FileDiff      `json:"changed"`
	Foreign []string               `json:"foreign"`
	Diff    string                 `json:"diff"`
	Errors  []v1alpha1.ReportError `json:"errors"`
}

// newCheckReport is the report of a check of dir, before anything is
// known.
func newCheckReport(dir string) *checkReport {
	return &checkReport{Dir: dir, Changed: []output.FileDiff{}, Foreign: []string{}, Errors: []v1alpha1.ReportError{}}
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
		r.Errors = source.ReportErrors(err)
	}
	if werr := writeReport(w, r); werr != nil && err == nil {
		return werr
	}
	return err
}
