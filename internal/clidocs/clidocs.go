// Package clidocs is the reference of stowage's command line generated
// from its sources: the man pages and shell completions of the command
// tree (cobra/doc and cobra) and the config field table of docs/config.md
// from the CUE schema. The commands' Examples sections are
// internal/cliexamples.
package clidocs

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Man writes a man page per command of root's tree into dir (cobra/doc,
// section 1), dated date, so that the same source and date give the same
// files. It turns off cobra's auto-generated tag on root.
func Man(root *cobra.Command, dir string, date time.Time) error {
	root.DisableAutoGenTag = true
	hdr := &doc.GenManHeader{Title: "STOWAGE", Section: "1", Source: "stowage", Manual: "stowage manual", Date: &date}
	return doc.GenManTree(root, hdr, dir)
}

// Completions writes root's completion scripts into dir: stowage.bash,
// _stowage (zsh), stowage.fish and stowage.ps1, each with descriptions.
func Completions(root *cobra.Command, dir string) error {
	for name, gen := range map[string]func(f *os.File) error{
		"stowage.bash": func(f *os.File) error { return root.GenBashCompletionV2(f, true) },
		"_stowage":     func(f *os.File) error { return root.GenZshCompletion(f) },
		"stowage.fish": func(f *os.File) error { return root.GenFishCompletion(f, true) },
		"stowage.ps1":  func(f *os.File) error { return root.GenPowerShellCompletionWithDesc(f) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
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
}

// Release writes what the release archives carry into dir: the man
// pages into dir/man (Man, dated date) and the completion scripts into
// dir/completions (Completions), creating both.
func Release(root *cobra.Command, dir string, date time.Time) error {
	man, comp := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := Man(root, man, date); err != nil {
		return err
	}
	return Completions(root, comp)
}
