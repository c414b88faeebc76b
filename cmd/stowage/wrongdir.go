package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/stowage/stowage/internal/render"
)

// configDirCommands are the commands whose DIR argument is a config
// directory.
var configDirCommands = []string{
	"stowage render", "stowage vet", "stowage lock", "stowage bump", "stowage mirror",
	"stowage status", "stowage openpai services", "stowage openpai package-cache",
}

// checkConfigDir recognises a directory that is not a config directory but
// is easily taken for one, before CUE reports its files as conflicts: the
// output of `stowage render --output-dir` (its kustomization.yaml starts with
// render.GeneratedHeader), or any other kustomization. A config directory
// never holds a kustomization file: every YAML file there is config.
func checkConfigDir(dir string, kustomizationOK bool) error {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		path := filepath.Join(dir, n)
		// Only a regular file (or a link to one) is opened: a FIFO would
		// block the open.
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		head := make([]byte, len(render.GeneratedHeader))
		k, _ := io.ReadFull(f, head)
		f.Close()
		if bytes.Equal(head[:k], []byte(render.GeneratedHeader)) {
			return fmt.Errorf("%s is the output of `stowage render --output-dir` (%s says so), not a config directory: run stowage on the config directory that rendered it, the one holding the config (.cue, .yaml) and stowage.lock.yaml", dir, n)
		}
		if kustomizationOK {
			return nil // loadSource reads it, or says why it cannot
		}
		return fmt.Errorf("%s is a kustomization (%s), not a stowage config directory: a config directory holds only stowage's config (.cue, .yaml, .yml, .json) and stowage.lock.yaml; inside a kustomization, run stowage as a KRM function (README: \"stowage as a kustomize KRM function\"); stowage lock, bump, vet, mirror and status take such a kustomization itself", dir, n)
	}
	return nil
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

// checkDirArg runs checkConfigDir on the DIR argument of the commands
// that take a config directory; those that also take a kustomization
// (kustomizationCommands) refuse only render's output.
func checkDirArg(cmd *cobra.Command, args []string) error {
	if !slices.Contains(configDirCommands, cmd.CommandPath()) {
		return nil
	}
	return checkConfigDir(dirArg(args), slices.Contains(kustomizationCommands, cmd.CommandPath()))
}
