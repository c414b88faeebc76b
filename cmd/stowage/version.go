package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/version"
)

// newVersion is `stowage version`: the module version, commit and Go
// toolchain of the binary, one line on stdout (the same as --version).
func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print stowage's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get())
			return err
		},
	}
}
