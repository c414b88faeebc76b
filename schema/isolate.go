package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/isolate"
)

// ChildArg is the first argument of a process that evaluates one config
// for its parent (WithChild): a binary that loads WithChild must, before
// anything else in main, run ServeChild when os.Args[1] is ChildArg.
const ChildArg = "__stowage-evaluate-config"

// WithChild makes the load evaluate its config in a child process: exe
// (normally os.Executable()) run with the one argument ChildArg and an
// empty environment, the files on its stdin and the result on its stdout.
// The parent kills the child when Limits.Time passes, and the child bounds
// its own address space (RLIMIT_AS, on Unix) at Limits.Memory plus
// isolate.Overhead, besides watching its heap as an in-process load does.
// So a config that asks for one block larger than the memory left (a CUE
// string doubled thirty times) or that keeps a non-preemptible copy
// running past the time limit ends with the child, and the load returns
// the limit's error at the config's first file, within a second of the
// limit. "" evaluates in this process.
//
// Why a child and not only the in-process watch: the watch reads the heap
// every 10 ms, after an allocation has happened, so it cannot stop one
// allocation of gigabytes, and the evaluation it abandons runs on until
// the process exits (a 30 s limit took 50 s to be reported while a large
// copy held the runtime).
func WithChild(exe string) Option { return childOption(exe) }

type childOption string

func (c childOption) apply(s *settings) { s.child = string(c) }

// childRequest is one load, as the parent sends it to the child.
type childRequest struct {
	Limits Limits
	Dir    string
	Files  []File
	// Embedded is set for LoadEmbedded: Files holds its one file.
	Embedded *embeddedRequest `json:",omitempty"`
	Opts     Options
}

type embeddedRequest struct {
	Field string
	Drop  []string
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

// runChild evaluates req in a child process of exe.
func runChild(exe string, req childRequest) (*v1alpha1.Config, error) {
	first := req.Files[0].Name
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var stdout bytes.Buffer
	switch err := isolate.Run(exe, ChildArg, in, &stdout, isolate.Limits{Time: req.Limits.Time, Memory: req.Limits.Memory}); {
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
	var cfg *v1alpha1.Config
	if e := req.Embedded; e != nil {
		f := req.Files[0]
		cfg, err = LoadEmbedded(req.Dir, f.Name, f.Data, e.Field, e.Drop, req.Opts, WithLimits(lims))
	} else {
		cfg, err = LoadFiles(req.Dir, req.Files, req.Opts, WithLimits(lims))
	}
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
