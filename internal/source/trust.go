package source

import "github.com/stowage/stowage/internal/render"

// KeyFile and TrustedRootFile are the bounds under which render reads
// the key and trusted-root files of a config's verify policies
// (render.KeyFile, render.TrustedRootFile), for whatever copies or reads
// a source's trust files.
var (
	KeyFile         = render.KeyFile
	TrustedRootFile = render.TrustedRootFile
)
