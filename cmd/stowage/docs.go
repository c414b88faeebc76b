//go:build !stowagefront

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/clidocs"
	"github.com/stowage/stowage/internal/fluxartifact"
)

// newDocs is the hidden command the release runs before archiving
// (.goreleaser.yaml's before hook): man pages and shell completions of
// the whole command tree (internal/clidocs).
func newDocs(getenv env) *cobra.Command {
	return &cobra.Command{
		Use:    "docs DIR",
		Hidden: true,
		Short:  "Write the man pages (DIR/man/*.1) and shell completions (DIR/completions) that the release archives carry",
		Long: `Write a man page per command into DIR/man (cobra/doc, section 1) and the
completion scripts for bash, zsh, fish and PowerShell into DIR/completions.
DIR must not exist yet. The pages' date is $SOURCE_DATE_EPOCH, else the Unix
epoch, so the same source gives the same files.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if _, err := os.Lstat(dir); err == nil {
				return fmt.Errorf("%s already exists; give a new directory", dir)
			}
			date, err := fluxartifact.Created("", getenv)
			if err != nil {
				return err
			}
			return clidocs.Release(cmd.Root(), dir, date)
		},
	}
}
