// Package strictyaml decodes one YAML document into a Go value strictly,
// from the tree yaml.v3 parses (its Node API), never from the words of
// yaml.v3's decoding errors: every field the Go type does not have, every
// key a mapping repeats and every value of the wrong type is a problem at
// its file, line and column with the path of the field
// ("spec.images[0].digest"), all of them reported at once; an unknown
// field's message names the allowed fields and the nearest one
// (internal/spelling). The walk is bounded by the caller's Limits (nesting
// depth, nodes decoded, nodes reached through aliases), so a few bytes of
// aliases that expand to billions of nodes are refused after the first
// Limits.Aliases nodes.
//
// It is the engine of the documents stowage reads into Go types without
// CUE: the lock (internal/lock) and the kustomization file
// (internal/kustomization). The config is CUE's to decode (schema), which
// words its problems the same way.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/yamlpos"
)

// Default bounds, used where a Limits field is 0.
const (
	// DefaultDepth is the most nesting of mappings and lists, aliases
	// followed.
	DefaultDepth = 100
	// DefaultNodes is the most nodes decoded in all: more than a 32 MiB
	// file (the lock's bound) can hold without aliases.
	DefaultNodes = 1 << 24
	// DefaultAliases is the most nodes decoded through aliases, the bound
	// CUE's YAML decoder keeps for the config.
	DefaultAliases = 50_000
)

// Limits bound one Decode. A field of 0 takes its default; the caller
// (the operator's flags, never the document) may raise any of them.
type Limits struct {
	// Depth is the most nesting of mappings and lists.
	Depth int
	// Nodes is the most nodes decoded, every alias counted with the nodes
	// it stands for.
	Nodes int
	// Aliases is the most nodes decoded through aliases.
	Aliases int
}

func (l Limits) withDefaults() Limits {
	if l.Depth <= 0 {
		l.Depth = DefaultDepth
	}
	if l.Nodes <= 0 {
		l.Nodes = DefaultNodes
	}
	if l.Aliases <= 0 {
		l.Aliases = DefaultAliases
	}
	return l
}

var (
	// ErrLimit is wrapped by the error of a document past a bound of
	// Limits; decoding stops there.
	ErrLimit = errors.New("limit")
	// ErrEmpty is wrapped by Parse's error for data that holds no
	// document.
	ErrEmpty = errors.New("no YAML document")
	// ErrDocuments is wrapped by Parse's error for data that holds more
	// than one document.
	ErrDocuments = errors.New("more than one YAML document")
)

// Error is one problem of a document. Use errors.As to get at its fields.
type Error struct {
	// File is the file name given in Options; may be empty.
	File string
	// Line and Column are 1-based (Column in characters); 0 when unknown.
	Line, Column int
	// Path is the field at fault from the document's root
	// ("spec.images[0].digest"); "" for the document itself.
	Path string
	// Err is the problem, in words that name no Go type and quote no
	// value.
	Err error
}

// Error formats the problem as "file:line:column: path: problem", leaving
// out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the problem.
func (e *Error) Unwrap() error { return e.Err }

// Errors are the problems of one document, in document order.
type Errors []*Error

// Error is the problems, one to a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Parse parses data (already read under its caller's byte bound) as
// exactly one YAML document and returns its tree. Errors are *Error
// values naming file: no document (wrapping ErrEmpty), a second document
// (wrapping ErrDocuments, at its line), or a syntax error at the line of
// the token at fault (yamlpos.Line) and a character YAML does not allow
// at its line and column (yamlpos.Control). Parsing never expands an
// alias; Decode bounds that.
func Parse(data []byte, file string) (*yaml.Node, error) {
	var doc, extra yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Err: ErrEmpty}
		}
		return nil, syntaxError(err, data, file)
	}
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(err, data, file)
	default:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, &Error{File: file, Line: line, Err: ErrDocuments}
	}
	return &doc, nil
}

// syntaxError is the *Error of a yaml.v3 syntax error. yaml.v3 has no
// error type for syntax: it says "yaml: line N: PROBLEM", N the line where
// the enclosing block starts. The error is put at the line of the token
// at fault (yamlpos.Line) when that is later, else at N, with PROBLEM as
// its words, so that the line is said once; a character YAML does not
// allow is named with its line and column (yaml.v3 names no line). An
// error of another form keeps its words, without a line.
func syntaxError(err error, data []byte, file string) *Error {
	e := &Error{File: file, Err: err}
	if strings.HasSuffix(err.Error(), yamlpos.ControlProblem) {
		if line, col, r, ok := yamlpos.Control(data); ok {
			e.Line, e.Column = line, col
			e.Err = fmt.Errorf("%U is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)", r)
		}
		return e
	}
	rest, ok := strings.CutPrefix(err.Error(), "yaml: line ")
	if !ok {
		return e
	}
	num, problem, ok := strings.Cut(rest, ": ")
	n, convErr := strconv.Atoi(num)
	if !ok || convErr != nil || n < 1 {
		return e
	}
	e.Line, e.Err = n, errors.New(problem)
	if line, ok := yamlpos.Line(data); ok && line > n {
		e.Line = line
	}
	return e
}
