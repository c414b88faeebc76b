// Package limitflags defines the command-line flags that bound a config's
// evaluation (schema.Limits), one definition for the stowage binary and
// for a KRM function binary built on fn.Main, and those that bound
// rendering a Helm chart (imageset.ChartLimits, for images from-chart).
package limitflags

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stowage/stowage/schema"
)

// Names are the flags Add defines, in the order it defines them.
var Names = []string{"max-config-bytes", "max-config-nodes", "config-timeout", "max-config-memory"}

// Add defines on fs the flags --max-config-bytes, --max-config-nodes,
// --config-timeout and --max-config-memory, each defaulting to
// schema.DefaultLimits and parsed into its field of l.
func Add(fs *pflag.FlagSet, l *schema.Limits) {
	fs.Int64Var(&l.Bytes, "max-config-bytes", schema.DefaultLimits.Bytes, "refuse a config whose files hold more bytes than this together")
	fs.IntVar(&l.Nodes, "max-config-nodes", schema.DefaultLimits.Nodes, "refuse a config whose files hold more syntax nodes than this together")
	fs.DurationVar(&l.Time, "config-timeout", schema.DefaultLimits.Time, "give up evaluating a config after this long")
	fs.Int64Var(&l.Memory, "max-config-memory", schema.DefaultLimits.Memory, "give up evaluating a config once it takes this many more bytes of heap")
}

// Topic hides the flags Add defined on fs (Names) from every command's
// help and returns the help topic that lists them, `stowage help limits`:
// a command without a Run, which cobra shows under "Additional help
// topics". The flags still parse on every command; a config cannot raise
// them.
func Topic(fs *pflag.FlagSet) *cobra.Command {
	shown := pflag.NewFlagSet("limits", pflag.ContinueOnError)
	for _, name := range Names {
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

// ChartNames are the flags AddChart defines, in the order it defines them.
var ChartNames = []string{"chart-timeout", "max-chart-memory", "max-chart-objects"}

// Chart is imageset.ChartLimits' shape (convert between them): the limits
// of rendering a Helm chart. limitflags does not import imageset, which
// would link Helm into every function binary built on fn.Main.
type Chart struct {
	Time    time.Duration
	Memory  int64
	Objects int
}

// AddChart defines on fs the flags --chart-timeout, --max-chart-memory and
// --max-chart-objects that bound rendering a Helm chart, each defaulting
// to its field of def and parsed into its field of l.
func AddChart(fs *pflag.FlagSet, l *Chart, def Chart) {
	fs.DurationVar(&l.Time, "chart-timeout", def.Time, "give up rendering a chart after this long")
	fs.Int64Var(&l.Memory, "max-chart-memory", def.Memory, "give up rendering a chart once it takes this many bytes of heap (its child process's address space: this plus 2 GiB)")
	fs.IntVar(&l.Objects, "max-chart-objects", def.Objects, "refuse a chart whose templates render more objects than this")
}
