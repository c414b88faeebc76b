package main

import (
	"github.com/spf13/cobra"

	"github.com/stowage/stowage/schema"
)

func newSchema() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "schema",
		Short: "Print the schema every config directory is unified with: CUE, or JSON Schema for YAML editors",
		Long: `Print the CUE schema every config directory is unified with (--format cue, the
default), or, with --format jsonschema, a JSON Schema (draft 2020-12) generated
from it by CUE's encoding/jsonschema for YAML editors: one document that
describes a config file (any part of the config: the files of a directory are
unified), the KRM function's Stowage functionConfig and the Submarine
design's JupyterImagePuller. The repository keeps it as
docs/stowage.schema.json; a YAML file names it on its first line for the
YAML language server (VS Code's YAML extension):

  # yaml-language-server: $schema=<path or URL of stowage.schema.json>

Keep the printed file outside the config directory: every .cue and .json
file there is part of the config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat("--format", format, "cue", "jsonschema"); err != nil {
				return err
			}
			if format == "cue" {
				_, err := cmd.OutOrStdout().Write(schema.Source)
				return err
			}
			b, err := schema.JSONSchema()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	c.Flags().StringVar(&format, "format", "cue", "cue, or jsonschema (JSON Schema draft 2020-12, generated from the CUE schema)")
	return c
}
