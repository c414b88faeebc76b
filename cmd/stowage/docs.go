package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/stowage/stowage/internal/fluxartifact"
)

// newDocs is the hidden command the release runs before archiving
// (.goreleaser.yaml's before hook): man pages and shell completions of
// the whole command tree, from cobra itself.
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
			root := cmd.Root()
			root.DisableAutoGenTag = true
			man, comp := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
			for _, d := range []string{man, comp} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			hdr := &doc.GenManHeader{Title: "STOWAGE", Section: "1", Source: "stowage", Manual: "stowage manual", Date: &date}
			if err := doc.GenManTree(root, hdr, man); err != nil {
				return err
			}
			for name, gen := range map[string]func(f *os.File) error{
				"stowage.bash": func(f *os.File) error { return root.GenBashCompletionV2(f, true) },
				"_stowage":     func(f *os.File) error { return root.GenZshCompletion(f) },
				"stowage.fish": func(f *os.File) error { return root.GenFishCompletion(f, true) },
				"stowage.ps1":  func(f *os.File) error { return root.GenPowerShellCompletionWithDesc(f) },
			} {
				f, err := os.Create(filepath.Join(comp, name))
				if err != nil {
					return err
				}
				if err := gen(f); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
