// Package creds reads registry password sources ("env:NAME", "file:path")
// for the CLI and the KRM function. It never prints, logs or returns a
// password in an error.
package creds

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stowage/stowage/internal/confined"
)

// Source is a password source with the config items that need it, for
// error messages.
type Source struct {
	Source string   // "env:NAME", "file:path" or, when allowed, a literal
	UsedBy []string // e.g. `environment "jupyter-gpu"`
	// At are where the source is written, sorted, e.g.
	// "config.yaml:6:17: environments.jupyter.auth.password"; the first
	// leads each error about the source. Empty when unknown.
	At []string
}

// Env looks up an environment variable: the value and whether it is set.
// os.LookupEnv is one.
type Env = func(name string) (string, bool)

// Read returns the bytes behind each source, keyed by the source string.
//
//   - "env:NAME" reads the variable through getenv;
//   - "file:path" reads path relative to dir through internal/confined:
//     inside dir after every symbolic link, a regular file of at most
//     confined.Password.Max bytes (64 KiB);
//   - any other value is taken literally (the schema has already refused
//     literals unless the user allowed them).
//
// One rule trims both env: and file: values: a single trailing line ending
// ("\n" or "\r\n") is removed, as `docker login --password-stdin` does;
// nothing else. A value that is empty after that is refused, whichever
// source it came from. All failures are reported together, each naming the
// variable or file and what needs it, never a value.
func Read(dir string, sources []Source, getenv Env) (map[string][]byte, error) {
	return read(dir, sources, getenv, true)
}

// Check refuses what Read refuses, without reading a password file's
// content (vet needs no secrets): an env: variable that is unset or empty
// after Trim; a file: path outside dir, missing, not a regular file, of
// /proc, larger than confined.Password.Max or of zero bytes
// (confined.CheckFile opens and stats it). A file holding only a line
// ending passes Check and is refused by Read. Errors are worded as Read's.
func Check(dir string, sources []Source, getenv Env) error {
	_, err := read(dir, sources, getenv, false)
	return err
}

// read is Read, or Check when contents is false (the map is then nil).
func read(dir string, sources []Source, getenv Env, contents bool) (map[string][]byte, error) {
	out := make(map[string][]byte, len(sources))
	var problems []string
	for _, s := range sources {
		users := strings.Join(s.UsedBy, ", ")
		// Each problem is led by where the source is written.
		fail := func(msg string) {
			if len(s.At) > 0 {
				msg = s.At[0] + ": " + msg
			}
			problems = append(problems, msg)
		}
		switch {
		case strings.HasPrefix(s.Source, "env:"):
			name := strings.TrimPrefix(s.Source, "env:")
			v, ok := getenv(name)
			if !ok {
				fail(fmt.Sprintf("environment variable %s is not set (needed by %s)", name, users))
				continue
			}
			v = Trim(v)
			if v == "" {
				fail(fmt.Sprintf("environment variable %s is empty (needed by %s)", name, users))
				continue
			}
			out[s.Source] = []byte(v)
		case strings.HasPrefix(s.Source, "file:"):
			rel := strings.TrimPrefix(s.Source, "file:")
			var (
				b   []byte
				err error
			)
			if contents {
				b, err = confined.ReadFile(dir, rel, confined.Password)
			} else {
				var size int64
				size, err = confined.CheckFile(dir, rel, confined.Password)
				b = []byte(strings.Repeat("x", int(min(size, 1))))
			}
			var ce *confined.Error
			switch {
			case errors.As(err, &ce) && errors.Is(err, fs.ErrNotExist):
				fail(fmt.Sprintf("password file %s cannot be read (needed by %s): it does not exist", ce.Path, users))
				continue
			case errors.As(err, &ce) && !filepath.IsLocal(rel):
				fail(fmt.Sprintf("password file %s is outside the config directory (needed by %s); give a path inside it", rel, users))
				continue
			case err != nil:
				fail(fmt.Sprintf("%v (needed by %s)", err, users))
				continue
			}
			v := Trim(string(b))
			if v == "" {
				fail(fmt.Sprintf("password file %s is empty (needed by %s)", filepath.Join(dir, rel), users))
				continue
			}
			out[s.Source] = []byte(v)
		default:
			out[s.Source] = []byte(s.Source)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	if !contents {
		return nil, nil
	}
	return out, nil
}

// Trim is the one rule for env: and file: values: one trailing "\n" or
// "\r\n" is removed.
func Trim(v string) string {
	if s, ok := strings.CutSuffix(v, "\n"); ok {
		return strings.TrimSuffix(s, "\r")
	}
	return v
}

// ReadFunction is Read for the KRM function, whose config comes from a
// repository anyone with a merge request can change: FunctionEnv first
// (a variable outside the function's rule is refused, by name, without
// being read), then Read.
func ReadFunction(dir string, sources []Source, getenv Env, allowEnv []string) (map[string][]byte, error) {
	if err := FunctionEnv(sources, allowEnv); err != nil {
		return nil, err
	}
	return Read(dir, sources, getenv)
}

// CheckFunction is Check under the KRM function's rule: FunctionEnv, then
// Check (stowage vet on a kustomization).
func CheckFunction(dir string, sources []Source, getenv Env, allowEnv []string) error {
	if err := FunctionEnv(sources, allowEnv); err != nil {
		return err
	}
	return Check(dir, sources, getenv)
}

// FunctionEnv refuses every "env:" source the KRM function may not read:
// a variable may only be named when it starts with EnvPrefix ("STOWAGE_")
// or is listed in allowEnv (the function's --allow-env flag, set in the
// exec declaration's args); the functionConfig's own fields cannot widen
// this. Nothing is read. The error names each variable, what needs it and
// the two ways to allow it, all problems at once, each led by where the
// source is written (Source.At) when known.
func FunctionEnv(sources []Source, allowEnv []string) error {
	var problems []string
	for _, s := range sources {
		name, ok := strings.CutPrefix(s.Source, "env:")
		if ok && !strings.HasPrefix(name, EnvPrefix) && !slices.Contains(allowEnv, name) {
			msg := fmt.Sprintf("environment variable %s may not be read by the KRM function (needed by %s): name a variable starting with %s, or add --allow-env %s to the exec declaration's args", name, strings.Join(s.UsedBy, ", "), EnvPrefix, name)
			// Led by where the source is written, as Read's problems are.
			if len(s.At) > 0 {
				msg = s.At[0] + ": " + msg
			}
			problems = append(problems, msg)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// EnvPrefix is the prefix of the variables the KRM function may read
// without --allow-env.
const EnvPrefix = "STOWAGE_"
