// Package schema owns stowage's configuration: the CUE schema embedded in the
// binary, the loader that unifies a config directory with it, the typed
// configuration that the rest of stowage consumes, and located validation
// errors (file:line:col: field.path: message).
package schema

import _ "embed"

// Source is the CUE schema every config directory is unified with; `stowage
// schema` prints it.
//
//go:embed stowage.cue
var Source []byte

// SchemaFile is the file name CUE positions use for the embedded schema.
const SchemaFile = "schema/stowage.cue"
