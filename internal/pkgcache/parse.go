package pkgcache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ColumnError reports a line of a package_cache_info file that does not
// have exactly three comma-separated columns. Columns is the number found.
type ColumnError struct {
	File    string
	Line    int
	Columns int
	// TrailingComma is set when the extra column is empty, as in the
	// "nfs,ubuntu18.04,nfs-common," rows of the pre-merge examples.
	TrailingComma bool
}

// Error locates the line, counts its columns and states the three-column
// format of v1.5.0.
func (e *ColumnError) Error() string {
	msg := fmt.Sprintf("%s:%d: %d columns; the OpenPAI v1.5.0 package_cache_info format has three columns (group,os,packages)", e.File, e.Line, e.Columns)
	switch {
	case e.Columns < 3:
		return msg
	case e.TrailingComma:
		return msg + `; remove the trailing comma (the 4th "precommands" column of the PR #4222 draft was never merged)`
	default:
		return msg + `; the 4th "precommands" column of the PR #4222 draft was never merged and the runtime ignores it, so run such commands elsewhere and remove the column`
	}
}

// Parse reads a package_cache_info file from r, for import; filename is
// only used in errors. Blank lines and lines whose first non-blank
// character is '#' are skipped (ubuntu_build.sh tests the first character
// after the shell strips leading blanks); a trailing "\r" is dropped. Every
// other line must have exactly three columns, group,os,packages, with the
// packages separated by blanks.
//
// A line with a 4th column is refused with a *ColumnError saying the
// v1.5.0 format has three columns. That includes an empty 4th column, as in
// "nfs,ubuntu18.04,nfs-common," from the examples of the closed PR #4222:
// ubuntu_build.sh would read fields 1-3 with cut and ignore the rest, but a
// non-empty 4th column is a precommand the user expects to run and it
// never does, and stowage writes only the three-column form, so such files
// are fixed at import rather than carried along.
//
// The rows are then checked like Validate; those problems come back as
// *RowError with File and Line set. All problems are returned at once
// (errors.Join); the rows are returned only when there are none.
func Parse(r io.Reader, filename string) ([]Row, error) {
	var (
		rows  []Row
		lines []int
		errs  []error
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		cols := strings.Split(trimmed, ",")
		if len(cols) != 3 {
			errs = append(errs, &ColumnError{File: filename, Line: n, Columns: len(cols),
				TrailingComma: len(cols) == 4 && strings.TrimSpace(cols[3]) == ""})
			continue
		}
		rows = append(rows, Row{Group: cols[0], OS: cols[1], Packages: strings.Fields(cols[2])})
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", filename, n+1, err)
	}
	for _, err := range validate(rows, func(i int) string { return fmt.Sprintf("%s:%d", filename, lines[i]) }) {
		var re *RowError
		if errors.As(err, &re) {
			re.File, re.Line = filename, lines[re.Index]
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b error) int { return lineOf(a) - lineOf(b) })
		return nil, errors.Join(errs...)
	}
	return rows, nil
}

// lineOf returns the line an error of Parse is about.
func lineOf(err error) int {
	var ce *ColumnError
	var re *RowError
	switch {
	case errors.As(err, &ce):
		return ce.Line
	case errors.As(err, &re):
		return re.Line
	}
	return 0
}
