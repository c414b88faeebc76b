// Package creds reads registry password sources ("env:NAME", "file:path")
// for the CLI. It never prints, logs or returns a password in an error.
package creds

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Source is a password source with the config items that need it, for
// error messages.
type Source struct {
	Source string   // "env:NAME", "file:path" or, when allowed, a literal
	UsedBy []string // e.g. `environment "jupyter-gpu"`
}

// Read returns the bytes behind each source, keyed by the source string.
// "env:NAME" reads the variable through getenv (an unset variable is an
// error; an empty one is too); "file:path" reads path relative to dir — it
// must stay inside dir (filepath.IsLocal: not absolute, no "..") — and
// drops one trailing newline, as `docker login --password-stdin` does; any
// other value is taken literally (the schema has already refused literals
// unless the user allowed them). All failures are reported together, each
// naming the variable or file and what needs it, never a value.
func Read(dir string, sources []Source, getenv func(string) (string, bool)) (map[string][]byte, error) {
	out := make(map[string][]byte, len(sources))
	var problems []string
	for _, s := range sources {
		users := strings.Join(s.UsedBy, ", ")
		switch {
		case strings.HasPrefix(s.Source, "env:"):
			name := strings.TrimPrefix(s.Source, "env:")
			v, ok := getenv(name)
			if !ok || v == "" {
				problems = append(problems, fmt.Sprintf("environment variable %s is not set (needed by %s)", name, users))
				continue
			}
			out[s.Source] = []byte(v)
		case strings.HasPrefix(s.Source, "file:"):
			rel := strings.TrimPrefix(s.Source, "file:")
			// Only files inside the config directory: under a KRM function
			// on an Argo CD repo server, any other path would let a config
			// copy a file of the build host into a cluster Secret.
			if !filepath.IsLocal(rel) {
				problems = append(problems, fmt.Sprintf("password file %s is outside the config directory (needed by %s); give a path inside it", rel, users))
				continue
			}
			p := filepath.Join(dir, rel)
			b, err := os.ReadFile(p)
			if err != nil {
				problems = append(problems, fmt.Sprintf("password file %s cannot be read (needed by %s): %v", p, users, pathErr(err)))
				continue
			}
			b = bytes.TrimSuffix(b, []byte("\n"))
			b = bytes.TrimSuffix(b, []byte("\r"))
			out[s.Source] = b
		default:
			out[s.Source] = []byte(s.Source)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return out, nil
}

// pathErr keeps only the cause of a *PathError (the path is already named).
func pathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
