package source

import (
	"errors"
	"path/filepath"
	"strconv"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/schema"
)

// ReportErrors is err as the errors of a report (vet, lock, render
// --check), one per place: the function's results of a kustomization
// (FunctionError), the places of a located config error (schema.Errors),
// the password sources that cannot be read (creds.Problems, at where each
// is written), the problems of a lock file (lock.Error, joined or alone);
// else one holding the message. Message is the text of the place as
// stderr says it.
func ReportErrors(err error) []v1alpha1.ReportError {
	var fnErr *FunctionError
	var located schema.Errors
	var passwords creds.Problems
	switch {
	case errors.As(err, &fnErr):
		out := make([]v1alpha1.ReportError, 0, len(fnErr.Errors))
		for _, e := range fnErr.Errors {
			// The results name files as kustomize does, relative to the
			// kustomization; the report names them as the config's
			// errors are, from where stowage runs.
			file := e.File
			if file != "" && !filepath.IsAbs(file) {
				file = filepath.Join(fnErr.Dir, file)
			}
			out = append(out, v1alpha1.ReportError{File: file, Line: e.Line, Field: e.Field, Message: e.Message})
		}
		return out
	case errors.As(err, &located):
		out := make([]v1alpha1.ReportError, 0, len(located))
		for _, e := range located {
			out = append(out, v1alpha1.ReportError{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path, Message: e.Msg})
		}
		return out
	case errors.As(err, &passwords):
		out := make([]v1alpha1.ReportError, 0, len(passwords))
		for _, p := range passwords {
			out = append(out, v1alpha1.ReportError{File: p.At.File, Line: p.At.Line, Column: p.At.Column, Field: p.At.Path, Message: p.Msg})
		}
		return out
	}
	if les := lockErrors(err); len(les) > 0 {
		out := make([]v1alpha1.ReportError, 0, len(les))
		for _, e := range les {
			out = append(out, v1alpha1.ReportError{File: e.File, Line: e.Line, Column: e.Column, Field: lockField(e), Message: e.Error()})
		}
		return out
	}
	return []v1alpha1.ReportError{{Message: err.Error()}}
}

// lockErrors are the *lock.Error in err's tree (lock.Parse joins them),
// in order; none when err holds none.
func lockErrors(err error) []*lock.Error {
	if le, ok := err.(*lock.Error); ok {
		return []*lock.Error{le}
	}
	var out []*lock.Error
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, lockErrors(e)...)
		}
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			out = lockErrors(inner)
		}
	}
	return out
}

// lockField is e's field from the document root: spec.images[i].field
// for an entry's problem, else e.Field.
func lockField(e *lock.Error) string {
	if e.Index < 0 {
		return e.Field
	}
	f := "spec.images[" + strconv.Itoa(e.Index) + "]"
	if e.Field != "" {
		f += "." + e.Field
	}
	return f
}
