//go:build !stowagefront

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/imageset"
	"github.com/stowage/stowage/internal/version"
)

// fullCommands are the commands of fullOnly, built in full.
func fullCommands(getenv env) []*cobra.Command {
	return []*cobra.Command{newVet(getenv), newLock(getenv), newBump(getenv), newMirror(getenv), newStatus(getenv), newDocs(getenv), newImages()}
}

// beforeCLI serves a Helm chart's rendering in a child process (images
// from-chart, bounded by --chart-timeout and --max-chart-memory:
// imageset.ChartOptions), and refuses to run for a front binary of another
// build ($STOWAGE_FRONT_VERSION). done reports that the process is to exit
// with code.
func beforeCLI(args []string) (code int, done bool) {
	if len(args) == 1 && args[0] == imageset.ChartChildArg {
		return imageset.ServeChartChild(os.Stdin, os.Stdout), true
	}
	if front, ok := os.LookupEnv(frontVersionEnv); ok {
		if own := version.Get().String(); front != own {
			fmt.Fprintf(os.Stderr, "stowage: this %s is %s but the stowage that ran it is %s; install both binaries from one release archive\n",
				fullBinary, escape.Text(own), escape.Text(front))
			return exitFailure, true
		}
		// Not for this process's children (a chart's or a config's
		// evaluation, a credential plugin).
		os.Unsetenv(frontVersionEnv)
	}
	return 0, false
}
