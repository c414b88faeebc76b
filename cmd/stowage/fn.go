package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/schema"
)

// DefaultMaxFnInput bounds the ResourceList fn reads from stdin
// (fn.DefaultMaxInput).
const DefaultMaxFnInput = fn.DefaultMaxInput

// errFnReported is fn's failure when its error results are written to
// stderr already: main prints nothing more and exits 1.
var errFnReported = fmt.Errorf("the function's results have errors: %w", errCheckFailed)

// newFn is `stowage fn`: the KRM function, ResourceList on stdin and
// stdout, for kustomize's exec functions (fn.NewCommand), with the
// command line's config limits.
func newFn(getenv env) *cobra.Command {
	// The options are read when c runs, from its context: the run's
	// (configRun).
	var c *cobra.Command
	c = fn.NewCommand(fn.WithGetenv(getenv), fn.WithConfigOptions(func() []schema.Option { return schemaOptions(c.Context()) }))
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		if errors.Is(err, fn.ErrReported) {
			return errFnReported
		}
		return err
	}
	return c
}
