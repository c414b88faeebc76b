package schema

import (
	"sort"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
)

// Error is one located configuration problem. It prints as
// "file:line:col: field.path: message"; parts that are unknown are left out
// (the column too, when only the line is known).
type Error struct {
	File   string // path of the config file, as given to the loader
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Path   string // CUE field path, e.g. profiles.lab.pullers[0].namespace
	Msg    string

	// cue is the CUE error the message came from, for the merging of
	// fromCUE in the same process; nil for stowage's own errors and after
	// a trip through JSON.
	cue *cueMessage
	// users is how many positions in user files the CUE error named
	// (two for a conflict between two of the user's values).
	users int
}

func (e *Error) Error() string {
	if at := e.Position().String(); at != "" {
		return at + ": " + e.Msg
	}
	return e.Msg
}

// Position is where e is: its file, line, column and path.
func (e *Error) Position() v1alpha1.Position {
	return v1alpha1.Position{File: e.File, Line: e.Line, Column: e.Column, Path: e.Path}
}

// Errors is every problem found in one load, sorted by file, line, column
// and path so that the report is the same on every run.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sorted orders es and removes exact duplicates (CUE may report one
// conflict once per conjunct).
func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Msg < b.Msg
	})
	out := es[:0]
	for i, e := range es {
		if i > 0 && *e == *es[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}
