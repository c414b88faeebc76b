package main

import (
	"github.com/spf13/cobra"

	"github.com/stowage/stowage/schema"
)

func newSchema() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the CUE schema that every config directory is unified with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(schema.Source)
			return err
		},
	}
}
