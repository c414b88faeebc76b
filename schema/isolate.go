package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/isolate"
)

// ChildArg is the first argument of a process that evaluates one config
// for its parent (WithChild): a binary that loads WithChild must, before
// anything else in main, run ServeChild when os.Args[1] is ChildArg.
const ChildArg = "__stowage-evaluate-config"

// WithChild makes the load evaluate a config that computes in a child
// process: exe (normally os.Executable()) run with the one argument
// ChildArg and an empty environment, the files on its stdin and the
// result on its stdout. The parent kills the child when Limits.Time
// passes, and the child bounds its own address space (RLIMIT_AS, on Unix)
// at Limits.Memory plus isolate.Overhead, besides watching its heap as an
// in-process load does. So a config that asks for one block larger than
// the memory left (a CUE string doubled thirty times, strings.Repeat of a
// large string) or that keeps a non-preemptible copy running past the
// time limit ends with the child, and the load returns the limit's error
// at the config's first file, within a second of the limit. "" evaluates
// in this process.
//
// A config that only states data (Computes reports none of its files)
// is evaluated in this process even with WithChild, under the same
// limits and with the same messages (the heap watch and the deadline of
// an in-process load): every YAML and JSON file, an embedded
// functionConfig, and CUE files of fields, structs, lists and literals
// nested at most MaxDataDepth deep. Data cannot build a value larger than
// its text (the CUE and YAML parsers bound nesting at 10,000 levels, and
// CUE's YAML decoder bounds what aliases expand to at 50,000 nodes), so
// its evaluation grows the heap in small steps the watch sees, and stays
// preemptible, so the deadline fires on time. That saves the child's
// start-up (about half the CPU of rendering an example).
//
// Why a child for a config that computes, and not only the in-process
// watch: the watch reads the heap every 10 ms, after an allocation has
// happened, so it cannot stop one allocation of gigabytes, and the
// evaluation it abandons runs on until the process exits. Measured
// in-process (2 cores, 256 MiB limit): strings.Repeat of a 16 MB string
// 100 times reached 1.6 GB resident before the watch ended the process,
// 28 s later; 1,000 times reached 15.6 GB over 8 minutes; 1,000,000 times
// crashed the runtime ("fatal error: out of memory", exit 2) instead of
// naming the limit. In the child each is the memory limit's error. (A
// 30 s limit also took 50 s to be reported while a large copy held the
// runtime.)
func WithChild(exe string) Option { return childOption(exe) }

type childOption string

func (c childOption) apply(s *settings) { s.child = string(c) }

// childRequest is one load, as the parent sends it to the child.
type childRequest struct {
	Limits Limits
	Dir    string
	Files  []File
	Opts   Options
}

// childResponse is the child's answer: a config, Errors, or another error.
type childResponse struct {
	Config *wireConfig `json:",omitempty"`
	Errors Errors      `json:",omitempty"`
	Err    string      `json:",omitempty"`
}

// wireConfig carries a Config with the fields its JSON form leaves out.
type wireConfig struct {
	Config                *v1alpha1.Config
	Dir                   string
	AllowLiteralPasswords bool
	PasswordAt            map[string]v1alpha1.Position
}

// runChild evaluates req in a child process of exe, killed when ctx (nil:
// never) is done.
func runChild(ctx context.Context, exe string, req childRequest) (*v1alpha1.Config, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	first := req.Files[0].Name
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var stdout bytes.Buffer
	switch err := isolate.RunContext(ctx, exe, ChildArg, in, &stdout, isolate.Limits{Time: req.Limits.Time, Memory: req.Limits.Memory}); {
	case ctx.Err() != nil:
		return nil, stopped(ctx, first)
	case errors.Is(err, isolate.ErrTime):
		return nil, Errors{{File: first, Msg: fmt.Sprintf("evaluating the config took more than %v, the limit of a config; raise it with --config-timeout", req.Limits.Time)}}
	case errors.Is(err, isolate.ErrMemory):
		return nil, Errors{{File: first, Msg: fmt.Sprintf("evaluating the config took more than %d bytes of memory, the limit of a config; raise it with --max-config-memory", req.Limits.Memory)}}
	case errors.Is(err, isolate.ErrStack):
		return nil, Errors{{File: first, Msg: "evaluating the config recursed too deeply (its stack passed the Go runtime's limit); look for a value defined through itself"}}
	case err != nil:
		return nil, Errors{{File: first, Msg: fmt.Sprintf("evaluating the config failed: %v; please report this with the files", err)}}
	}
	var resp childResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("reading the config's evaluation from its child process: %w", err)
	}
	switch {
	case len(resp.Errors) > 0:
		return nil, resp.Errors
	case resp.Err != "":
		return nil, errors.New(resp.Err)
	case resp.Config == nil || resp.Config.Config == nil:
		return nil, errors.New("the config's child process answered neither a config nor an error")
	}
	c := resp.Config
	cfg := c.Config
	cfg.Dir, cfg.AllowLiteralPasswords, cfg.PasswordPositions = c.Dir, c.AllowLiteralPasswords, c.PasswordAt
	if cfg.PasswordPositions == nil {
		cfg.PasswordPositions = map[string]v1alpha1.Position{}
	}
	return cfg, nil
}

// ServeChild is the child's side of WithChild: it reads one load from stdin,
// bounds its own address space (Unix), evaluates in this process under
// the limits the parent sent, and writes the result to stdout. It returns
// the exit code: 0 when it wrote an answer (a config or the config's
// errors), 1 when it could not.
func ServeChild(stdin io.Reader, stdout io.Writer) int {
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<30))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var req childRequest
	if err := json.Unmarshal(data, &req); err != nil || len(req.Files) == 0 {
		fmt.Fprintln(os.Stderr, "not a config evaluation request", err)
		return 1
	}
	lims := req.Limits.orDefault()
	isolate.LimitAddressSpace(uint64(lims.Memory) + isolate.Overhead)
	cfg, err := LoadFiles(req.Dir, req.Files, req.Opts, WithLimits(lims))
	var resp childResponse
	var es Errors
	switch {
	case errors.As(err, &es):
		resp.Errors = es
	case err != nil:
		resp.Err = err.Error()
	default:
		resp.Config = &wireConfig{Config: cfg, Dir: cfg.Dir, AllowLiteralPasswords: cfg.AllowLiteralPasswords, PasswordAt: cfg.PasswordPositions}
	}
	out, err := json.Marshal(resp)
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// MaxDataDepth is how deep a CUE or JSON config's structs and lists may
// nest and still be evaluated in this process with WithChild (Computes);
// real configs nest under 15 levels.
const MaxDataDepth = 100

// Computes reports the first of files that is more than data, as
// "file:line:col: what" (empty when none is), by parsing each: a CUE file
// with an import, a reference, an expression (operators, defaults,
// disjunctions, interpolations, builtin calls), a comprehension, a let,
// an embedding, an optional or required field, an ellipsis, a pattern
// label other than a string comparison ([!="x"], [=~"re"]), or structs
// and lists nested deeper than MaxDataDepth; a JSON file nested deeper
// than MaxDataDepth. YAML files are data. A file that does not parse is
// data: its evaluation reports the parse error, and the parsers bound
// their own nesting. WithChild evaluates a config in its child only when
// Computes names a file.
func Computes(files []File) string {
	for _, f := range files {
		var node ast.Node
		switch filepath.Ext(f.Name) {
		case ".cue":
			af, err := parser.ParseFile(f.Name, f.Data)
			if err != nil {
				continue
			}
			node = af
		case ".json":
			expr, err := cuejson.Extract(f.Name, f.Data)
			if err != nil {
				continue
			}
			node = expr
		default:
			continue
		}
		if n, what := notData(node, 0); n != nil {
			return fmt.Sprintf("%s: %s", n.Pos(), what)
		}
	}
	return ""
}

// stringPattern reports whether l is the label [OP "string"] with OP one
// of !=, =~ and !~.
func stringPattern(l *ast.ListLit) bool {
	if len(l.Elts) != 1 {
		return false
	}
	u, ok := l.Elts[0].(*ast.UnaryExpr)
	if !ok || (u.Op != token.NEQ && u.Op != token.MAT && u.Op != token.NMAT) {
		return false
	}
	x, ok := u.X.(*ast.BasicLit)
	return ok && x.Kind == token.STRING
}

// notData returns the first node of n, at nesting depth, that is more
// than data, and what it is; nil when n is data.
func notData(n ast.Node, depth int) (ast.Node, string) {
	if depth > MaxDataDepth {
		return n, fmt.Sprintf("nested more than %d levels deep", MaxDataDepth)
	}
	switch n := n.(type) {
	case *ast.File:
		for _, d := range n.Decls {
			switch d.(type) {
			case *ast.Package, *ast.CommentGroup, *ast.Attribute:
				continue
			}
			if bad, what := notData(d, depth); bad != nil {
				return bad, what
			}
		}
		return nil, ""
	case *ast.Field:
		switch l := n.Label.(type) {
		case *ast.Ident:
		case *ast.BasicLit:
			if l.Kind != token.STRING {
				return n, "a label that is not a name or a string"
			}
		case *ast.ListLit:
			// A pattern of fields, [!="x"] or [=~"^re$"]: a string
			// comparison, which builds nothing.
			if !stringPattern(l) {
				return n, "a computed label"
			}
		default:
			return n, "a computed label"
		}
		if n.Constraint != token.ILLEGAL {
			return n, "an optional or required field"
		}
		return notData(n.Value, depth+1)
	case *ast.StructLit:
		for _, e := range n.Elts {
			switch e.(type) {
			case *ast.CommentGroup, *ast.Attribute:
				continue
			case *ast.Field:
			default:
				return e, "an embedding, comprehension, let or ellipsis"
			}
			// The field counts the level: a: {b: 1} is two deep.
			if bad, what := notData(e, depth); bad != nil {
				return bad, what
			}
		}
		return nil, ""
	case *ast.ListLit:
		for _, e := range n.Elts {
			if bad, what := notData(e, depth+1); bad != nil {
				return bad, what
			}
		}
		return nil, ""
	case *ast.BasicLit:
		return nil, ""
	case *ast.UnaryExpr:
		if x, ok := n.X.(*ast.BasicLit); ok && (n.Op == token.SUB || n.Op == token.ADD) && (x.Kind == token.INT || x.Kind == token.FLOAT) {
			return nil, ""
		}
		return n, "an expression"
	case *ast.Ident:
		return n, "a reference"
	case *ast.ImportDecl:
		return n, "an import"
	}
	return n, "an expression"
}
