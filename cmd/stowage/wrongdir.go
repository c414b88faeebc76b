package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/source"
)

// configDirCommands are the commands whose DIR argument is a config
// directory.
var configDirCommands = []string{
	"stowage render", "stowage vet", "stowage lock", "stowage bump", "stowage mirror",
	"stowage status", "stowage openpai services", "stowage openpai package-cache",
}

// reportCommands are the commands with a JSON report on stdout (vet -o
// json, lock -o json, render --check --format json): they run
// checkDirArg themselves, once the report is set up, so that a wrong
// directory is reported there too.
var reportCommands = []string{"stowage vet", "stowage lock", "stowage render"}

// preRunConfigDir runs checkDirArg for the commands that take a config
// directory, except reportCommands.
func preRunConfigDir(cmd *cobra.Command, args []string) error {
	if slices.Contains(reportCommands, cmd.CommandPath()) {
		return nil
	}
	return checkDirArg(cmd, args)
}

// checkDirArg runs source.CheckConfigDir on the DIR argument of the commands
// that take a config directory; those that also take a kustomization
// (kustomizationCommands) refuse only render's output. A DIR of "-" is a
// usage error (exit 2), as for init: DIR is a directory, never stdin.
func checkDirArg(cmd *cobra.Command, args []string) error {
	if !slices.Contains(configDirCommands, cmd.CommandPath()) {
		return nil
	}
	return source.CheckDirArg(strings.TrimPrefix(cmd.CommandPath(), "stowage "), dirArg(args), slices.Contains(kustomizationCommands, cmd.CommandPath()))
}
