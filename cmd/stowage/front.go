//go:build stowagefront

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/version"
)

// fullAnnotation marks the front's stand-ins for the commands of fullOnly.
const fullAnnotation = "stowage.dev/full"

// fullCommands are stand-ins for the commands of fullOnly: listed in the
// help with their summaries, and each running stowage-full with the
// process's arguments (beforeCLI runs it before cobra parses anything;
// RunE is the same for a command line beforeCLI did not recognise).
func fullCommands(env) []*cobra.Command {
	var cs []*cobra.Command
	for _, f := range fullOnly {
		cs = append(cs, &cobra.Command{
			Use:                f.name,
			Short:              f.short,
			Hidden:             f.hidden,
			Annotations:        map[string]string{fullAnnotation: "true"},
			DisableFlagParsing: true,
			PersistentPreRunE:  func(*cobra.Command, []string) error { return nil },
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runFull(cmd.Name(), os.Args[1:])
			},
		})
	}
	return cs
}

// beforeCLI runs stowage-full when args name one of its commands, its
// help (help CMD, CMD --help) or a shell completion inside it; otherwise
// the front runs the command itself (done false).
func beforeCLI(args []string) (code int, done bool) {
	name, ok := fullCommand(newRoot(os.LookupEnv), args)
	if !ok {
		return 0, false
	}
	err := runFull(name, args)
	fmt.Fprintf(os.Stderr, "stowage: %s\n", escape.Text(err.Error()))
	return exitFailure, true
}

// fullCommand returns the name of the command of fullOnly that args run,
// ask help for or complete within.
func fullCommand(root *cobra.Command, args []string) (string, bool) {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		args = args[1:]
	}
	root.InitDefaultHelpCmd()
	c, rest, err := root.Find(args)
	if err == nil && c.Name() == "help" && c.Parent() == root {
		c, _, err = root.Find(rest)
	}
	if err != nil || c.Annotations[fullAnnotation] == "" {
		return "", false
	}
	return c.Name(), true
}

// runFull runs stowage-full from the front's own directory with args,
// the same standard streams and the environment plus $STOWAGE_FRONT_VERSION.
// It returns only on failure: an error naming the command and the path.
func runFull(name string, args []string) error {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("%s runs in %s beside stowage, and stowage cannot tell where it is: %v", name, fullBinary, err)
	}
	full := filepath.Join(filepath.Dir(exe), fullBinary)
	if runtime.GOOS == "windows" {
		full += ".exe"
	}
	if fi, err := os.Stat(full); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s runs in %s, which is not beside this stowage (%s); install both binaries of the release archive, or one binary holding every command with go install github.com/stowage/stowage/cmd/stowage", name, fullBinary, full)
	}
	env := append(os.Environ(), frontVersionEnv+"="+version.Get().String())
	if err := execFull(full, args, env); err != nil {
		return fmt.Errorf("%s: running %s: %v", name, full, err)
	}
	return nil
}
