package main

import (
	"fmt"
	"io"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/source"
)

// fnInputSize is the size of the ResourceList kustomize passes the
// function (source.FunctionInputSize).
var fnInputSize = source.FunctionInputSize

// warnFunctionInput warns on w, for the lock command, when the
// ResourceList kustomize would pass to the function for src's
// kustomization is over the exec declaration's --max-input-bytes (its
// default without one): the lock is written, but kustomize build would
// fail, which vet reports as an error. Nothing is written when the size
// cannot be computed (vet says why).
func warnFunctionInput(w io.Writer, src *source.Source) {
	b := src.Kustomization
	size, err := fnInputSize(b)
	if err != nil || size <= src.MaxInput {
		return
	}
	fmt.Fprintf(w, "stowage: warning: kustomization %s: the ResourceList kustomize would pass to the function holds %d bytes, more than the %d the function reads, so kustomize build would fail: %s, or split the kustomization\n",
		escape.Text(b.Dir), size, src.MaxInput, escape.Text(src.InputBound()))
}
