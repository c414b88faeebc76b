//go:build stowagefront

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

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
	own := version.Get().String()
	// A front of this build set the variable and ran this program as
	// stowage-full: it is a front too (a copy or link under that name), and
	// running stowage-full again would never end.
	if v, ok := os.LookupEnv(frontVersionEnv); ok && v == own {
		return fmt.Errorf("%s runs in %s, but %s, run as %s, is the front binary (built with -tags stowagefront); install both binaries of the release archive", name, fullBinary, exe, fullBinary)
	}
	full := filepath.Join(filepath.Dir(exe), fullBinary)
	if runtime.GOOS == "windows" {
		full += ".exe"
	}
	const install = "install both binaries of the release archive, or one binary holding every command with go install github.com/stowage/stowage/cmd/stowage"
	fi, err := os.Stat(full)
	if err != nil {
		return fmt.Errorf("%s runs in %s, which is not beside this stowage (%s); %s", name, fullBinary, full, install)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s runs in %s, and %s is not a regular file; %s", name, fullBinary, full, install)
	}
	// The front's version replaces any the environment holds.
	env := []string{frontVersionEnv + "=" + own}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, frontVersionEnv+"=") {
			env = append(env, kv)
		}
	}
	if err := execFull(full, args, env); err != nil {
		return fmt.Errorf("%s: running %s: %v", name, full, err)
	}
	return nil
}
