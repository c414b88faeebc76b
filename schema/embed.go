// Package schema owns stowage's configuration: the CUE schema embedded in the
// binary, the loader that unifies a config directory with it, the typed
// configuration that the rest of stowage consumes, and located validation
// errors (file:line:col: field.path: message).
//
// A config from Load is what package render renders; render's package
// documentation gives the path from a directory to manifests. Load evaluates the config's
// CUE in the calling process, bounded only by the in-process watch of
// Limits, which cannot stop one huge allocation and abandons, not stops,
// an evaluation past its time; for a config you do not trust, load it
// WithChild (and call ServeChild from main), as the stowage binary does.
package schema

import "embed"

// Source is the CUE schema every config directory is unified with; `stowage
// schema` prints it.
//
//go:embed stowage.cue
var Source []byte

// Module is the schema as a CUE module, the directory users import as
// "stowage.dev/schema@v0:stowage": cue.mod/module.cue and stowage.cue. Write
// it to a directory and name that directory in a cue.mod/local-module.cue
// replaceWith (CUE v0.17) to use it offline with cue; TestCUEModuleImport
// shows how. Load resolves the import itself, to this binary's schema.
//
//go:embed cue.mod/module.cue stowage.cue
var Module embed.FS

// ModulePath is the CUE module path of Module, with its major version.
const ModulePath = "stowage.dev/schema@v0"

// SchemaFile is the file name CUE positions use for the embedded schema.
const SchemaFile = "schema/stowage.cue"
