package fn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/limitflags"
	"github.com/stowage/stowage/schema"
)

// Exit codes of Main.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Main is the whole program of a KRM function binary built on this
// package, in another module:
//
//	func main() { os.Exit(fn.Main()) }
//
// It returns the exit code: 0 success; 1 when a result is an error (each
// written to stderr already) or the input cannot be processed; 2 for a
// usage mistake (an unknown flag, a bad flag value, an argument other
// than fn). Every error but the results is written to stderr as one
// escaped line prefixed with the program's name (the base of
// os.Args[0]).
//
// When os.Args is exactly [prog, schema.ChildArg] the process is the
// child a config is evaluated in and Main serves it (schema.ServeChild);
// otherwise the command of NewCommand(opts...) runs with configs that
// compute evaluated in a child process of os.Executable()
// (schema.WithChild), so that the memory and time limits kill a hostile
// config instead of this process (in this process when os.Executable
// fails; a functionConfig is YAML, data, always in this process). Besides
// NewCommand's flags it takes stowage's config-limit flags
// (--max-config-bytes, --max-config-nodes, --config-timeout,
// --max-config-memory), and it accepts one positional argument "fn",
// anywhere, and ignores it: an exec declaration written for stowage
// (args: [fn, ...]) runs the embedded function unchanged. Its help
// declares the function with its own name and no args. opts come after
// Main's own options: WithProgram replaces the name, and the schema
// options of WithConfigOptions follow (so win over) the child and the
// flags' limits.
func Main(opts ...CommandOption) int {
	if len(os.Args) == 2 && os.Args[1] == schema.ChildArg {
		return schema.ServeChild(os.Stdin, os.Stdout)
	}
	name := "fn"
	if len(os.Args) > 0 {
		name = escape.Line(filepath.Base(os.Args[0]))
	}
	var args []string
	if len(os.Args) > 1 {
		args = os.Args[1:]
	}
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return run(name, exe, args, os.Stdin, os.Stdout, os.Stderr, opts)
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// run is Main after the child dispatch: the program called name, its
// configs evaluated in a child process of child ("" in this process),
// run with args.
func run(name, child string, args []string, stdin io.Reader, stdout, stderr io.Writer, opts []CommandOption) (code int) {
	// A panic is a bug, not a usage error: exit 1 with the message rather
	// than the runtime's exit 2 and trace.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "%s: internal error (please report it): %s\n", name, escape.Text(fmt.Sprint(p)))
			code = exitFailure
		}
	}()
	var lim schema.Limits
	c := NewCommand(append([]CommandOption{WithProgram(name), func(cfg *commandConfig) {
		cfg.child, cfg.limits = child, &lim
	}}, opts...)...)
	limitflags.Add(c.Flags(), &lim)
	c.Use = name
	c.Args = func(_ *cobra.Command, args []string) error {
		for i, a := range args {
			if a != "fn" || i > 0 {
				return usageError{fmt.Errorf("unexpected argument %q: %s takes flags and at most one argument, fn (as in a declaration written for stowage, args: [fn])", a, name)}
			}
		}
		return nil
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	c.SetArgs(args)
	c.SetIn(stdin)
	c.SetOut(stdout)
	c.SetErr(stderr)
	err := c.ExecuteContext(context.Background())
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, ErrReported):
		return exitFailure
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", name, escape.Text(err.Error()), name)
		return exitUsage
	default:
		// Errors carry the input's and the config's text: nothing
		// untrusted reaches the terminal raw.
		fmt.Fprintf(stderr, "%s: %s\n", name, escape.Text(err.Error()))
		return exitFailure
	}
}
