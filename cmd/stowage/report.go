package main

import (
	"errors"
	"io"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/schema"
)

// reportErrors is err as the errors of a JSON report (lock -o json,
// render --check --format json), in vet -o json's shape: one per place of
// a located config error (schema.Errors), else one holding the message.
func reportErrors(err error) []vetError {
	var located schema.Errors
	if !errors.As(err, &located) {
		return []vetError{{Message: err.Error()}}
	}
	out := make([]vetError, 0, len(located))
	for _, e := range located {
		out = append(out, vetError{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path, Message: e.Msg})
	}
	return out
}

// writeReport prints a JSON report through escape.WriteJSON, the one
// writer of JSON that holds untrusted text.
func writeReport(w io.Writer, report any) error { return escape.WriteJSON(w, report) }
