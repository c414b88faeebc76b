package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stowage/stowage/internal/limitflags"
)

// limitFlags are the root's flags that bound a config's evaluation. Every
// command takes them, and a config cannot raise them; they are left out
// of every command's help and described by `stowage help limits`.
var limitFlags = limitflags.Names

// newLimitsTopic hides the limit flags of fs from the commands' help and
// returns the help topic that lists them (a command without a Run, which
// cobra shows under "Additional help topics").
func newLimitsTopic(fs *pflag.FlagSet) *cobra.Command {
	shown := pflag.NewFlagSet("limits", pflag.ContinueOnError)
	for _, name := range limitFlags {
		f := fs.Lookup(name)
		c := *f
		shown.AddFlag(&c)
		f.Hidden = true
	}
	return &cobra.Command{
		Use:   "limits",
		Short: "The flags that bound a config's evaluation (size, syntax nodes, time, memory)",
		Long: `These limits bound a config's evaluation: in this process for a config of data
(YAML, JSON, CUE fields and literals), in a child process the limits can kill
for CUE that computes (references, expressions, comprehensions, imports). A
config over one is refused with an error naming the limit. Every command takes them, they
come from the command line only (a config cannot raise them), and the defaults
suit configs of thousands of images:

` + shown.FlagUsages(),
	}
}
