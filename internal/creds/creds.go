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

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
)

// Source is a password source with the config items that need it, for
// error messages.
type Source struct {
	Source string   // "env:NAME", "file:path" or, when allowed, a literal
	UsedBy []string // e.g. `environment "jupyter-gpu"`
	// At are where the source is written, sorted (Position.Compare), e.g.
	// config.yaml:6:17 environments.jupyter.auth.password; the first
	// is each problem's place. Empty when unknown.
	At []v1alpha1.Position
}

// Problem is one password source that cannot be read: where it is written
// (the zero Position when unknown) and what is wrong, naming the variable
// or file and what needs it, never a value.
type Problem struct {
	At  v1alpha1.Position
	Msg string
}

// Error is the problem led by its place: "FILE:LINE:COL: PATH: message".
func (p Problem) Error() string {
	if p.At.IsZero() {
		return p.Msg
	}
	return p.At.String() + ": " + p.Msg
}

// Problems is every problem of one Read, Check or Allowed, in the order of
// the sources; it prints one problem a line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// problem is s's Problem msg, at the first place s is written.
func (s Source) problem(msg string) Problem {
	p := Problem{Msg: msg}
	if len(s.At) > 0 {
		p.At = s.At[0]
	}
	return p
}

// Env looks up an environment variable: the value and whether it is set.
// os.LookupEnv is one.
type Env = func(name string) (string, bool)

// Read returns the bytes behind each source, keyed by the source string.
//
//   - "env:NAME" reads the variable through getenv, when Allowed (with no
//     exec declaration) lets it: NAME starts with EnvPrefix or the operator
//     lists it in AllowVariable; otherwise nothing is read;
//   - "file:path" reads path relative to dir through internal/confined:
//     inside dir after every symbolic link, a regular file of at most
//     confined.Password.Max bytes (64 KiB);
//   - any other value is taken literally (the schema has already refused
//     literals unless the user allowed them).
//
// One rule trims both env: and file: values: a single trailing line ending
// ("\n" or "\r\n") is removed, as `docker login --password-stdin` does;
// nothing else. A value that is empty after that is refused, whichever
// source it came from. All failures are reported together, as Problems,
// each naming the variable or file and what needs it, never a value.
func Read(dir string, sources []Source, getenv Env) (map[string][]byte, error) {
	if err := Allowed(sources, getenv, nil); err != nil {
		return nil, err
	}
	return read(dir, sources, getenv, true)
}

// Check refuses what Read refuses, without reading a password file's
// content (vet needs no secrets): an env: variable that is unset or empty
// after Trim; a file: path outside dir, missing, not a regular file, of
// /proc, larger than confined.Password.Max or of zero bytes
// (confined.CheckFile opens and stats it). A file holding only a line
// ending passes Check and is refused by Read. Errors are worded as Read's.
func Check(dir string, sources []Source, getenv Env) error {
	if err := Allowed(sources, getenv, nil); err != nil {
		return err
	}
	_, err := read(dir, sources, getenv, false)
	return err
}

// read is Read, or Check when contents is false (the map is then nil).
func read(dir string, sources []Source, getenv Env, contents bool) (map[string][]byte, error) {
	out := make(map[string][]byte, len(sources))
	var problems Problems
	for _, s := range sources {
		users := strings.Join(s.UsedBy, ", ")
		fail := func(msg string) { problems = append(problems, s.problem(msg)) }
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
		return nil, problems
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

// ReadFunction is Read for the KRM function and for a kustomization the
// CLI reads, whose config comes from a repository anyone with a merge
// request can change: Allowed with declared, the exec declaration's
// --allow-env names (nil when it gives none), then Read.
func ReadFunction(dir string, sources []Source, getenv Env, declared []string) (map[string][]byte, error) {
	if err := Allowed(sources, getenv, declared); err != nil {
		return nil, err
	}
	return Read(dir, sources, getenv)
}

// CheckFunction is Check under ReadFunction's rule (stowage vet on a
// kustomization).
func CheckFunction(dir string, sources []Source, getenv Env, declared []string) error {
	if err := Allowed(sources, getenv, declared); err != nil {
		return err
	}
	return Check(dir, sources, getenv)
}

// AllowVariable is the environment variable in which the operator (the CI
// job, the repository server's container, or kustomize's --env flag) names
// the variables env: sources may read besides those starting with
// EnvPrefix: names separated by commas or white space.
const AllowVariable = "STOWAGE_ALLOW_ENV"

// EnvPrefix is the prefix of the variables env: sources may read without
// the operator naming them in AllowVariable.
const EnvPrefix = "STOWAGE_"

// OperatorNames parses AllowVariable through getenv: the names it lists,
// sorted, without duplicates; nil when it is unset or empty, or getenv is
// nil. A name that
// is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*) is an error
// naming AllowVariable and the name.
func OperatorNames(getenv Env) ([]string, error) {
	if getenv == nil {
		return nil, nil
	}
	v, _ := getenv(AllowVariable)
	var names []string
	for _, n := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		if !validName(n) {
			return nil, fmt.Errorf("%s: %q is not an environment variable name (want letters, digits and _, not starting with a digit)", AllowVariable, n)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// validName reports whether n is [A-Za-z_][A-Za-z0-9_]*.
func validName(n string) bool {
	for i, r := range n {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return n != ""
}

// Allowed refuses every "env:" source of sources that may not be read,
// before anything is read. The rule belongs to the operator, never to the
// repository: a variable may be read when it starts with EnvPrefix, or
// when the operator lists it in AllowVariable (read through getenv). A
// kustomization's exec declaration can only narrow that: when declared is
// not nil (its --allow-env names), a variable not starting with EnvPrefix
// must be listed there too. A config file, functionConfig or exec
// declaration cannot widen the rule, and the message says so: it tells the
// operator which variable to set, not the repository what to write. All
// problems at once (Problems), each at where the source is written
// (Source.At) when known, naming the variable and what needs it, never a
// value.
func Allowed(sources []Source, getenv Env, declared []string) error {
	operator, err := OperatorNames(getenv)
	if err != nil {
		return err
	}
	var problems Problems
	for _, s := range sources {
		name, ok := strings.CutPrefix(s.Source, "env:")
		if !ok || strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		var why string
		switch {
		case !slices.Contains(operator, name):
			why = fmt.Sprintf("stowage reads only variables starting with %s and those the operator names in %s (set in the CI job's or the repository server's environment, never by the repository)", EnvPrefix, AllowVariable)
		case declared != nil && !slices.Contains(declared, name):
			why = fmt.Sprintf("the exec declaration's --allow-env narrows %s and does not list it", AllowVariable)
		default:
			continue
		}
		problems = append(problems, s.problem(fmt.Sprintf("environment variable %s may not be read (needed by %s): %s", name, strings.Join(s.UsedBy, ", "), why)))
	}
	if len(problems) > 0 {
		return problems
	}
	return nil
}
