package main

import (
	"io"

	"github.com/stowage/stowage/internal/escape"
)

// writeReport prints a JSON report through escape.WriteJSON, the one
// writer of JSON that holds untrusted text.
func writeReport(w io.Writer, report any) error { return escape.WriteJSON(w, report) }
