package main

import (
	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/version"
)

// newVersion is `stowage version`: the module version, commit and Go
// toolchain of the binary, one line on stdout (the same as --version), or
// a v1alpha1.VersionReport with -o json or yaml.
func newVersion() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print stowage's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Check("-o", format); err != nil {
				return usageError{err}
			}
			v := version.Get()
			return printer.Print(cmd.OutOrStdout(), format, v1alpha1.VersionReport{Version: v.Version, Commit: v.Commit, Go: v.Go, Line: v.String()})
		},
	}
	c.Flags().StringVarP(&format, "output", "o", "text", "text (one line), json or yaml: "+printer.MustKeys(v1alpha1.VersionReport{}))
	return c
}
