// Command stowage renders pinned image pre-pull DaemonSets, pull Secrets,
// records ConfigMaps and the reduced OpenPAI service list from a CUE config
// directory, for Argo CD or Flux to apply.
//
// Exit codes: 0 success; 1 invalid input, a failed check or a failed run;
// 2 usage (unknown command or flag, wrong arguments).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/cliexamples"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/guard"
	"github.com/stowage/stowage/internal/limitflags"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/registryflags"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/version"
	"github.com/stowage/stowage/schema"
)

// Exit codes of every stowage command.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks a command-line mistake (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// isUsage reports whether err is a command-line mistake: a usageError, or
// a flag source.Load or Source.Profiles found not to apply to DIR, or a
// registry flag's value the client refuses (registryflags.Connect).
func isUsage(err error) bool {
	return errors.As(err, new(usageError)) || errors.As(err, new(*source.UsageError)) || errors.As(err, new(*registryflags.UsageError))
}

// partialError is a failure of a command that writes in steps (mirror):
// stopped says what a stopped run leaves behind, in place of "nothing
// written".
type partialError interface {
	error
	stopped() string
}

// checkFailed marks a --check that found differences: the command already
// said what differs, so main prints nothing more and exits 1.
var errCheckFailed = errors.New("check failed")

// setLogLabel labels the standard log's lines from now on with the
// library that writes them (guard.SetLogLabel).
var setLogLabel = guard.SetLogLabel

// interruptGrace is how long stowage, after SIGTERM or SIGINT, lets the
// command stop and remove what it staged before it exits anyway (a command
// blocked on input, such as fn reading stdin, never sees the signal).
const interruptGrace = 2 * time.Second

func main() {
	// A config whose CUE computes is evaluated in a child process of
	// this binary, which the limits of --config-timeout and
	// --max-config-memory can kill; a config of data in this process
	// (schema.WithChild says why).
	if len(os.Args) == 2 && os.Args[1] == schema.ChildArg {
		os.Exit(schema.ServeChild(os.Stdin, os.Stdout))
	}
	// What this build does before the command line: serve a Helm
	// chart's rendering or check the front that ran it (full.go), or run
	// stowage-full for the commands the front binary does not link
	// (front.go).
	if code, done := beforeCLI(os.Args[1:]); done {
		os.Exit(code)
	}
	var cr configRun
	if exe, err := os.Executable(); err == nil {
		cr.child = exe
	}
	guard.RefuseDefaultHTTP()
	guard.RouteLog(os.Stderr)
	// SIGTERM and SIGINT cancel the command's context instead of killing
	// the process: writes stop before their final rename and remove their
	// temporary files, registry requests are abandoned, and the exit code
	// is 1 with every file as it was. A second signal kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	go func() {
		<-ctx.Done()
		stop()
		time.Sleep(interruptGrace)
		fmt.Fprintf(os.Stderr, "stowage: %v; not stopped after %v, exiting\n", context.Cause(ctx), interruptGrace)
		os.Exit(exitFailure)
	}()
	os.Exit(runContext(withConfigRun(ctx, cr), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
}

// env reads an environment variable; tests pass their own.
type env func(string) (string, bool)

// runContext is run with a context that a signal cancels; commands stop
// when it is done, leaving every file as it was.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) (code int) {
	// A panic is a bug, not a usage error: exit 1 with the message rather
	// than the runtime's exit 2 and trace.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "stowage: internal error (please report it): %s\n", escape.Text(fmt.Sprint(p)))
			code = exitFailure
		}
	}()
	root := newRoot(getenv)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		what := "nothing written"
		var pe partialError
		if errors.As(err, &pe) {
			what = pe.stopped()
		}
		fmt.Fprintf(stderr, "stowage: %v; stopped, %s: %s\n", context.Cause(ctx), what, escape.Text(err.Error()))
		return exitFailure
	case errors.Is(err, errCheckFailed):
		return exitFailure
	case isUsage(err):
		fmt.Fprintf(stderr, "stowage: %s\nRun 'stowage --help' for usage.\n", escape.Text(err.Error()))
		return exitUsage
	default:
		// Errors carry registry and API server answers, file names and
		// config values: nothing untrusted reaches the terminal raw.
		fmt.Fprintf(stderr, "stowage: %s\n", escape.Text(err.Error()))
		return exitFailure
	}
}

func newRoot(getenv env) *cobra.Command {
	root := &cobra.Command{
		Use:   "stowage",
		Short: "Render pinned image pre-pullers and a reduced OpenPAI service list for GitOps",
		Long: `stowage renders plain Kubernetes YAML from a CUE (or YAML/JSON) config directory:
image pre-pull DaemonSets with every image pinned to its digest, pull Secrets,
records ConfigMaps and the reduced OpenPAI service list, for Argo CD or Flux to
apply. Digests come from DIR/stowage.lock.yaml, which lock fills and bump keeps
current; render never contacts a registry.

Conventions: -o is the output format of every command (text or table, json;
yaml for render's manifests and most reports: each command's -o says which);
destinations have flags of their own (render --output-dir, bump --pr-body and
--render, openpai package-cache --output-file, where - is stdout). Every
command that prints a report prints it as JSON with -o json.

Registry settings, set once for lock, bump, vet --remote/--site, mirror and
push: $STOWAGE_INSECURE_REGISTRY, $STOWAGE_MIRROR (comma-separated, as the
repeated --insecure-registry and --mirror), $STOWAGE_CA_FILE and
$STOWAGE_TRUST_TOKEN_REALM; a flag on the command line replaces its variable.
Credentials: the config's auth, then the Docker config ($DOCKER_CONFIG) and
its credential helpers, then anonymous.

Exit codes: 0 success; 1 invalid input, a failed check or a failed run; 2
usage. The flags that bound a config's evaluation: stowage help limits.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.Version = version.Get().String()
	root.SetVersionTemplate("{{.Version}}\n")
	var verbose bool
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log every registry request (method, URL, status; never credentials) to stderr")
	var lim schema.Limits
	limitflags.Add(root.PersistentFlags(), &lim)
	limits := limitflags.Topic(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		// The limits come from the command line only: a config cannot
		// raise them. They are this run's (configRun), kept in its
		// context beside the child process main put there.
		cr := configRunOf(cmd.Context())
		cr.limits = lim
		cr.getenv = getenv
		cmd.SetContext(withConfigRun(cmd.Context(), cr))
		if verbose {
			cmd.SetContext(registry.WithWireLog(cmd.Context(), cmd.ErrOrStderr()))
		}
		return preRunConfigDir(cmd, args)
	}
	root.AddCommand(newInit(), newRender(getenv), newSchema(), newOpenPAI(), newFn(getenv), newVersion(), newCMP(getenv), newPush(getenv), limits)
	root.AddCommand(fullCommands(getenv)...)
	registerCompletions(root)
	cliexamples.SetExamples(root)
	// Unknown subcommands and bad argument counts are usage errors too.
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		wrapArgs(c)
	}
	return root
}

// wrapArgs turns cobra's argument validation errors into usage errors.
//
// A command that only groups subcommands (stowage, stowage openpai) is made
// runnable, printing its help: cobra validates the arguments of runnable
// commands only, and would otherwise print the help for "stowage rendr"
// and exit 0.
func wrapArgs(c *cobra.Command) {
	inner := c.Args
	if inner == nil {
		inner = cobra.ArbitraryArgs
		if c.HasSubCommands() {
			inner = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
					if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
						msg += fmt.Sprintf("; did you mean %q?", s[0])
					}
					return errors.New(msg)
				}
				return nil
			}
		}
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		c.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if err := inner(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// dirArg returns the config directory argument, "." by default.
func dirArg(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return args[0]
}
