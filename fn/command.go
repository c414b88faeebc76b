package fn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/framework/command"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/isolate"
	"github.com/stowage/stowage/schema"
)

// DefaultMaxInput bounds the ResourceList fn reads from stdin: 4 MiB,
// thousands of workloads. kyaml holds every node in memory: a 4 MB
// ResourceList of small ConfigMaps peaked at 1.1 GB RSS, so the bound keeps
// the function near 1 GiB (docs/reliability.md).
const DefaultMaxInput = 4 << 20

// The operator's variables bounding the function (the environment of the
// CI job or repository server that runs kustomize, or kustomize build
// --env); a function declaration's envs may not set them (DeclaredEnv).
const (
	// MaxInputVariable caps the ResourceList's bytes: --max-input-bytes
	// in the exec declaration's args may lower the cap, never raise it.
	// Unset, the cap is DefaultMaxInput.
	MaxInputVariable = "STOWAGE_MAX_INPUT_BYTES"
	// MaxMemoryVariable bounds the function's heap and stacks in bytes,
	// whatever the input's size; unset, DefaultMaxMemory.
	MaxMemoryVariable = "STOWAGE_MAX_MEMORY"
)

// DefaultMaxMemory is the memory bound without MaxMemoryVariable: 2 GiB,
// twice what a DefaultMaxInput ResourceList of small objects peaks at.
const DefaultMaxMemory = 2 << 30

// operatorBytes reads the byte count of the operator's variable name
// through getenv, def when it is unset; a value that is not a positive
// integer is an error naming the variable.
func operatorBytes(getenv func(string) (string, bool), name string, def int64) (int64, error) {
	v, ok := getenv(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of bytes", name, escape.Line(v))
	}
	return n, nil
}

// OperatorMaxInput is the operator's cap on the ResourceList, in bytes:
// MaxInputVariable read through getenv (os.LookupEnv when nil), or
// DefaultMaxInput when it is unset. An exec declaration's
// --max-input-bytes may lower it, never raise it. The error names the
// variable when its value is not a positive integer.
func OperatorMaxInput(getenv func(string) (string, bool)) (int64, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return operatorBytes(getenv, MaxInputVariable, DefaultMaxInput)
}

// cappedReader fails a read past max bytes with a message naming the
// limit, the program (prog: "stowage fn") and the flag that raises it.
type cappedReader struct {
	r         io.Reader
	left, max int64
	prog      string
	// operator is set when max is the operator's cap (MaxInputVariable
	// or its default), lower than the declaration's --max-input-bytes.
	operator bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.err()
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, c.err()
	}
	return n, err
}

func (c *cappedReader) err() error {
	if c.operator {
		return fmt.Errorf("the ResourceList on stdin is larger than %d bytes, the operator's limit of %s (%s, default %d); the exec declaration's --max-input-bytes may lower it, never raise it", c.max, c.prog, MaxInputVariable, DefaultMaxInput)
	}
	return fmt.Errorf("the ResourceList on stdin is larger than %d bytes, the limit of %s; raise it with --max-input-bytes in the exec declaration's args", c.max, c.prog)
}

// badMetadata names the first object of a ResourceList whose
// metadata.annotations or metadata.labels is not a mapping (kyaml's
// reader fails on it with "wrong node kind" and no place), with its line:
// `items[1] (Pod p) metadata.annotations, line 19: want a map of strings,
// got a sequence`; "" when there is none or data does not parse.
func badMetadata(data []byte) string {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return ""
	}
	get := func(n *yamlv3.Node, key string) *yamlv3.Node {
		if n == nil || n.Kind != yamlv3.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
		return nil
	}
	check := func(name string, obj *yamlv3.Node) string {
		meta := get(obj, "metadata")
		for _, f := range []string{"annotations", "labels"} {
			if v := get(meta, f); v != nil && v.Kind != yamlv3.MappingNode && v.Tag != "!!null" {
				id := ""
				if k, n := get(obj, "kind"), get(meta, "name"); k != nil && n != nil {
					id = fmt.Sprintf(" (%s %s)", k.Value, n.Value)
				}
				kind := map[yamlv3.Kind]string{yamlv3.SequenceNode: "a sequence", yamlv3.ScalarNode: "a scalar", yamlv3.AliasNode: "an alias"}[v.Kind]
				return fmt.Sprintf("%s%s metadata.%s, line %d: want a map of strings, got %s", name, id, f, v.Line, kind)
			}
		}
		return ""
	}
	root := doc.Content[0]
	if w := check("functionConfig", get(root, "functionConfig")); w != "" {
		return w
	}
	if items := get(root, "items"); items != nil && items.Kind == yamlv3.SequenceNode {
		for i, it := range items.Content {
			if w := check(fmt.Sprintf("items[%d]", i), it); w != "" {
				return w
			}
		}
	}
	return ""
}

// ErrReported is the error of NewCommand's command when the function's
// results hold an error: each result was written to stderr already, one
// line each, so a caller prints nothing more and exits 1.
var ErrReported = errors.New("the function's results have errors")

// CommandOption configures NewCommand.
type CommandOption func(*commandConfig)

type commandConfig struct {
	getenv        func(string) (string, bool)
	configOptions func() []schema.Option
	// path and args are the exec declaration the help shows; declared
	// is false until WithProgram sets them (stowage, [fn]).
	path     string
	args     []string
	declared bool
	// child and limits are Main's: the executable configs are evaluated
	// in (schema.WithChild) and the limits its flags set.
	child  string
	limits *schema.Limits
}

// WithGetenv reads the "env:" password sources through getenv instead of
// os.LookupEnv.
func WithGetenv(getenv func(string) (string, bool)) CommandOption {
	return func(c *commandConfig) { c.getenv = getenv }
}

// WithConfigOptions adds the schema options opts returns, called when the
// command runs (after its flags are parsed), to every config load
// (schema.WithLimits, schema.WithChild).
func WithConfigOptions(opts func() []schema.Option) CommandOption {
	return func(c *commandConfig) { c.configOptions = opts }
}

// WithProgram names the binary (path, as the exec declaration's path
// names it) and the arguments before the function's flags (args) that
// run the command: its help shows them as the exec declaration, and the
// message of an input over --max-input-bytes names them. Without it they
// are stowage and [fn], stowage's own `stowage fn`; Main passes the base
// name of os.Args[0] and no args.
func WithProgram(path string, args ...string) CommandOption {
	return func(c *commandConfig) { c.path, c.args, c.declared = path, args, true }
}

// NewCommand returns the KRM function as a command: a ResourceList on
// stdin, the ResourceList with its results on stdout, each warning and
// error result also written to stderr as a file:line: field: message line.
// Its flags: --max-input-bytes (default DefaultMaxInput; a larger input is
// refused with a message naming the flag) and --allow-env (repeatable;
// narrows Processor.AllowEnv). It takes no positional argument. When a
// result is an error the command's error is ErrReported (wrapped).
//
// A program of its own is Main, which does what a caller of NewCommand
// must do itself: the command prints no error of its own (cobra's
// SilenceErrors), so the caller prints every error but ErrReported and
// exits 1 (or 2 for a flag error); and configs are evaluated in this
// process, without the kill of the memory and time limits, unless the
// caller passes WithConfigOptions returning schema.WithChild(its
// executable) and dispatches schema.ServeChild first thing in main when
// os.Args[1] is schema.ChildArg (schema.WithChild says why). The command
// has none of the config-limit flags: the limits are schema.WithLimits
// through WithConfigOptions (DefaultLimits without). Its help declares
// the function as `stowage` with args [fn] unless WithProgram says
// otherwise.
func NewCommand(opts ...CommandOption) *cobra.Command {
	cfg := commandConfig{path: "stowage", args: []string{"fn"}}
	for _, o := range opts {
		o(&cfg)
	}
	prog := strings.Join(append([]string{cfg.path}, cfg.args...), " ")
	p := &Processor{Getenv: cfg.getenv}
	c := command.Build(p, command.StandaloneDisabled, true)
	maxInput := int64(DefaultMaxInput)
	c.Flags().Int64Var(&maxInput, "max-input-bytes", DefaultMaxInput, "refuse a ResourceList on stdin larger than this many bytes (memory peaks at up to 300 times the input); lowers, never raises, the operator's $STOWAGE_MAX_INPUT_BYTES (default 4 MiB)")
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		// The input is kept (kyaml holds all of it anyway) to say where a
		// ResourceList kyaml refuses is wrong.
		getenv := cfg.getenv
		if getenv == nil {
			getenv = os.LookupEnv
		}
		capInput, err := operatorBytes(getenv, MaxInputVariable, DefaultMaxInput)
		if err != nil {
			return err
		}
		maxMemory, err := operatorBytes(getenv, MaxMemoryVariable, DefaultMaxMemory)
		if err != nil {
			return err
		}
		// The memory bound holds whatever the input: past it the process
		// ends with exit 1 (a heap cannot be taken back from kyaml).
		stop := isolate.WatchMemory(maxMemory, func() {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: the function took more than %d bytes of memory, the operator's limit (%s, default %d); give the function less input, or raise %s where kustomize runs\n", prog, maxMemory, MaxMemoryVariable, DefaultMaxMemory, MaxMemoryVariable)
			os.Exit(1)
		})
		defer stop()
		limit := min(maxInput, capInput)
		var in bytes.Buffer
		cmd.SetIn(io.TeeReader(&cappedReader{r: cmd.InOrStdin(), left: limit, max: limit, prog: prog, operator: capInput <= maxInput}, &in))
		p.Stderr = cmd.ErrOrStderr()
		var co []schema.Option
		if cfg.limits != nil {
			co = append(co, schema.WithLimits(*cfg.limits))
		}
		if cfg.child != "" {
			co = append(co, schema.WithChild(cfg.child))
		}
		if cfg.configOptions != nil {
			co = append(co, cfg.configOptions()...)
		}
		if co != nil {
			p.ConfigOptions = co
		}
		err = run(cmd, args)
		// The results were written to stderr already, one line each
		// (Processor.Stderr): the framework's "[error] …" block of the
		// same results would say each a second time.
		var rs framework.Results
		if errors.As(err, &rs) {
			return ErrReported
		}
		if err != nil {
			if where := badMetadata(in.Bytes()); where != "" {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
		return err
	}
	c.Flags().StringArrayVar(&p.AllowEnv, "allow-env", nil, "keep only this one of the variables the operator's STOWAGE_ALLOW_ENV lets env: password sources read besides STOWAGE_* ones (repeatable; narrows, never widens)")
	// kyaml's command takes no positional argument but does not say so;
	// its --stack (print a stack trace on error) is for debugging and
	// hidden.
	c.Args = cobra.NoArgs
	if f := c.Flags().Lookup("stack"); f != nil {
		f.Hidden = true
	}
	c.Use = "fn"
	c.Short = "Run as a kustomize KRM function (ResourceList on stdin, ResourceList with results on stdout)"
	c.Long = longHelp(cfg.path, cfg.args)
	return c
}

// longHelp is the command's help, its exec declaration naming path and
// args (no args line without args).
func longHelp(path string, args []string) string {
	decl := "      path: " + path + "      # looked up in $PATH; ./" + path + " is relative to the kustomization\n"
	if len(args) > 0 {
		decl += "      args: [" + strings.Join(args, ", ") + "]\n"
	}
	return `Run as a KRM function. Declare it in a kustomization's transformers or
generators with the annotation

  config.kubernetes.io/function: |
    exec:
` + decl + `
and build with: kustomize build --enable-alpha-plugins --enable-exec
With --enable-alpha-plugins alone kustomize skips the function silently
(exit 0, images unpinned); without it the build fails with "external
plugins disabled". 'kubectl kustomize' has no --enable-exec: it fails, or
skips silently with --enable-alpha-plugins.

Warnings and errors are written to stderr as file:line: field: message
lines as well as into the results; the annotation stowage.dev/strict: "true"
on the functionConfig makes warnings errors.

functionConfig kinds: stowage.dev/v1alpha1 Stowage (spec: the config, plus
spec.profile) and org.apache.submarine/v1 JupyterImagePuller. Digests come from
the ImageLock item (stowage.lock.yaml listed in resources). Every other workload
in the input gets its images pinned from the lock.

Password sources: env: may read only variables starting with STOWAGE_ and
those the operator names in STOWAGE_ALLOW_ENV (comma- or space-separated,
set in the environment of the CI job or repository server that runs
kustomize, or with kustomize build --env); the repository cannot widen
that: --allow-env in the exec declaration's args only keeps some of the
operator's names, and a declaration whose envs set STOWAGE_ALLOW_ENV is
refused. file: only regular files inside the kustomization's directory.

Bounds: the operator's STOWAGE_MAX_INPUT_BYTES caps the ResourceList (default
4 MiB; --max-input-bytes may only lower it) and STOWAGE_MAX_MEMORY bounds the
function's memory whatever the input (bytes, default 2 GiB; past it, exit 1). A
declaration whose envs set either is refused.`
}

// DeclaredFlags parses args, the arguments an exec declaration gives the
// fn command c (NewCommand's, alone or under a CLI whose persistent flags
// it also accepts, as cobra's Command.Find returns it with the args left
// for it), with c's own flags, and returns what the declaration sets: the
// --allow-env names (nil when it gives none, so that it narrows nothing)
// and --max-input-bytes (DefaultMaxInput when it gives none). Errors: a
// flag or an argument c refuses. It parses into c, so c must be a fresh
// command, not the one that runs.
func DeclaredFlags(c *cobra.Command, args []string) (allowEnv []string, maxInput int64, err error) {
	if err := c.ParseFlags(args); err != nil {
		return nil, 0, err
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return nil, 0, err
	}
	if c.Flags().Changed("allow-env") {
		if allowEnv, err = c.Flags().GetStringArray("allow-env"); err != nil {
			return nil, 0, err
		}
	}
	if maxInput, err = c.Flags().GetInt64("max-input-bytes"); err != nil {
		return nil, 0, err
	}
	return allowEnv, maxInput, nil
}
