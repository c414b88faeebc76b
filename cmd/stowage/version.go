package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/version"
)

// newVersion is `stowage version`: the module version, commit and Go
// toolchain of the binary, one line on stdout (the same as --version).
//
// -o json prints {version, commit, go} instead.
func newVersion() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print stowage's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat("-o", format, "text", "json"); err != nil {
				return err
			}
			v := version.Get()
			if format == "json" {
				return writeReport(cmd.OutOrStdout(), versionReport{Version: v.Version, Commit: v.Commit, Go: v.Go})
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), v)
			return err
		},
	}
	c.Flags().StringVarP(&format, "output", "o", "text", "text (one line), or json: {version, commit, go}")
	return c
}

// versionReport is version -o json: the fields of version.Info.
type versionReport struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}
