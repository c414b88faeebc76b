// Package version says which stowage this is: the module version and VCS
// commit, from the Go build information (runtime/debug.ReadBuildInfo) unless
// a release build sets them with
//
//	go build -ldflags "-X github.com/stowage/stowage/internal/version.version=v0.2.0 -X github.com/stowage/stowage/internal/version.commit=$(git rev-parse HEAD)"
package version

import (
	"runtime/debug"
	"sync"
)

// Set by -ldflags -X in release builds; empty means "ask the build info".
var (
	version string
	commit  string
)

// Info is what stowage version prints.
type Info struct {
	// Version is the module version (v0.2.0), "(devel)" for a build from a
	// work tree without -ldflags.
	Version string
	// Commit is the VCS revision, with "-dirty" when the work tree had
	// changes; "unknown" when the build recorded none (go run, go test).
	Commit string
	// Go is the toolchain that built the binary (go1.26.8).
	Go string
}

// Get returns the running binary's Info: -ldflags values first, then the
// build information.
var Get = sync.OnceValue(func() Info {
	i := Info{Version: version, Commit: commit, Go: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i.Go = bi.GoVersion
		if i.Version == "" {
			i.Version = bi.Main.Version
		}
		if i.Commit == "" {
			var rev, dirty string
			for _, s := range bi.Settings {
				switch {
				case s.Key == "vcs.revision":
					rev = s.Value
				case s.Key == "vcs.modified" && s.Value == "true":
					dirty = "-dirty"
				}
			}
			if rev != "" {
				i.Commit = rev + dirty
			}
		}
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	return i
})

// String formats i as the one line stowage version prints:
// "stowage v0.2.0 (commit 1a2b3c…, go1.26.8)".
func (i Info) String() string {
	return "stowage " + i.Version + " (commit " + i.Commit + ", " + i.Go + ")"
}

// UserAgent is the User-Agent product stowage sends to registries:
// "stowage/v0.2.0" ("stowage/(devel)" becomes "stowage/devel").
func (i Info) UserAgent() string {
	v := i.Version
	if v == "(devel)" {
		v = "devel"
	}
	return "stowage/" + v
}
