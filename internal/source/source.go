package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/words"
	"github.com/stowage/stowage/internal/workload"
	"github.com/stowage/stowage/schema"
)

// Source is what a command's DIR holds: a config directory, or a
// kustomization whose transformers run stowage as a KRM function.
type Source struct {
	// Dir is DIR; file: password sources are relative to it.
	Dir string
	// Config is the config: the directory's, or the functionConfig's with
	// only the profile the function renders (RenderedProfile).
	Config *v1alpha1.Config
	// LockPath is the lock file: DIR/stowage.lock.yaml, or the file of
	// the kustomization's ImageLock ("" when its resources list none).
	LockPath string
	// LockRoot is the directory the lock is read and written beneath, and
	// LockRel the lock relative to it: DIR and stowage.lock.yaml, or the
	// kustomization's root and the lock beneath it. Every read and write
	// of the lock goes through an os.Root on LockRoot, so that no link
	// leads it out; "" (a Source built by hand) confines it to the
	// directory of LockPath.
	LockRoot, LockRel string
	// Kustomization and Function are set for a kustomization: the build
	// up to the function, and what its functionConfig says.
	Kustomization *kustomization.Build
	Function      fn.Config
	// Workloads are the images the function pins in the kustomization's
	// other resources (none for a config directory).
	Workloads []plan.Workload
	// AllowEnv are the --allow-env names of the exec declaration (nil
	// when it gives none), and MaxInput its --max-input-bytes (a
	// kustomization only; ExecDeclaration).
	AllowEnv []string
	MaxInput int64
	// MaxInputOperator is set when MaxInput is the operator's cap
	// (fn.MaxInputVariable, or its default) rather than the declaration's
	// lower --max-input-bytes: the repository cannot raise it.
	MaxInputOperator bool
}

// InputBound says how MaxInput is raised, by whoever sets it, for a
// message about a ResourceList over it.
func (s *Source) InputBound() string {
	if s.MaxInputOperator {
		return fmt.Sprintf("the operator raises %s in the environment kustomize runs in (an exec declaration's --max-input-bytes may only lower it)", fn.MaxInputVariable)
	}
	return "raise --max-input-bytes in the exec declaration's args in " + s.Kustomization.FunctionFile
}

// LoadOptions say how Load reads a DIR.
type LoadOptions struct {
	// Getenv reads the operator's environment (fn.OperatorMaxInput's cap
	// on the function's input); nil is os.LookupEnv.
	Getenv func(string) (string, bool)
	// AllowLiteralPasswords accepts auth.password values that are not
	// env: or file: sources (a config directory only).
	AllowLiteralPasswords bool
	// Root is the directory a kustomization's reads stay beneath ("" is
	// DIR; a usage error for a config directory).
	Root string
	// Deadline, when above zero, stops a kustomization's build.
	Deadline time.Duration
	// Schema are the options of every config load (limits, child).
	Schema []schema.Option
	// Warnings receives the functionConfig's warnings, one
	// `stowage: file:line: warning: field: message` line each.
	Warnings io.Writer
	// Declared reads an exec declaration's args as the CLI would run
	// them (the CLI parses them with its own fn command's flags,
	// fn.DeclaredFlags): ok is false when they do not run `stowage fn` (a
	// container, a wrapper, whose flags are not known here), err a flag
	// or argument the fn command refuses. nil reads no flags of the
	// declaration.
	Declared func(args []string) (d Declaration, ok bool, err error)
}

// Declaration is what an exec declaration's args give `stowage fn`.
type Declaration struct {
	// AllowEnv are its --allow-env names; nil when it gives none (the
	// declaration narrows nothing).
	AllowEnv []string
	// MaxInput is its --max-input-bytes.
	MaxInput int64
}

// UsageError marks a command-line mistake Load or Profiles found (a flag
// that does not apply to the kind of DIR).
type UsageError struct{ Err error }

// Error is the mistake's message.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake.
func (e *UsageError) Unwrap() error { return e.Err }

// Load reads dir: a kustomization with a stowage transformer when dir
// holds a kustomization file, else a config directory (schema.Load). The
// kustomization's build stops when ctx is done (a signal, the run's
// deadline) or o.Deadline passes, with an error wrapping
// kustomization.ErrDeadline and the cause. The warnings of a
// functionConfig are written to o.Warnings as the function writes them;
// its errors are returned as a *FunctionError. A flag that does not
// apply to the kind of dir is a *UsageError.
func Load(ctx context.Context, dir string, o LoadOptions) (*Source, error) {
	if kustomization.Find(dir) == "" {
		if o.Root != "" {
			return nil, &UsageError{fmt.Errorf("--root is for a kustomization; %s holds none", dir)}
		}
		return LoadDir(dir, o)
	}
	if o.AllowLiteralPasswords {
		return nil, &UsageError{fmt.Errorf("--allow-literal-passwords is for a config directory; in a kustomization the functionConfig decides (%s on a %s)", fn.AllowInlinePasswordsAnnotation, fn.SubmarineKind)}
	}
	if o.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Deadline, fmt.Errorf("it ran past --deadline %v; raise it for a kustomization this large", o.Deadline))
		defer cancel()
	}
	b, err := kustomization.LoadContext(ctx, dir, o.Root, fn.IsFunctionConfig)
	if err != nil {
		return nil, err
	}
	allowEnv, maxInput, err := ExecDeclaration(b, o.Declared)
	if err != nil {
		return nil, err
	}
	capInput, err := fn.OperatorMaxInput(o.Getenv)
	if err != nil {
		return nil, err
	}
	operatorCap := capInput <= maxInput
	maxInput = min(maxInput, capInput)
	// The functionConfig's evaluation stops with the build's context
	// too (its --deadline), as later options win.
	p := &fn.Processor{Dir: dir, ConfigOptions: append(slices.Clip(o.Schema), schema.WithContext(ctx))}
	c, rs, ok := p.ReadConfig(b.FunctionConfig)
	if o.Warnings != nil {
		for _, l := range p.Locate(b.FunctionConfig, rs) {
			if l.Severity != framework.Error {
				fmt.Fprintf(o.Warnings, "stowage: %s\n", escape.Text(l.String()))
			}
		}
	}
	if !ok {
		return nil, NewFunctionError(p, b, rs)
	}
	cfg, err := RenderedProfile(c)
	if err != nil {
		return nil, err
	}
	return &Source{Dir: dir, Config: cfg, LockPath: b.LockFile, LockRoot: b.Root, LockRel: b.LockRel, Kustomization: b, Function: c,
		Workloads: workload.Pinned(b.Items, c.Config.ImagePlaces), AllowEnv: allowEnv, MaxInput: maxInput, MaxInputOperator: operatorCap}, nil
}

// LoadDir reads dir as a config directory (schema.Load with o.Schema and
// o.AllowLiteralPasswords), whose lock is dir/stowage.lock.yaml, for the
// commands that take no kustomization (render, push, openpai, diff).
func LoadDir(dir string, o LoadOptions) (*Source, error) {
	cfg, err := schema.Load(dir, append(slices.Clip(o.Schema), schema.Options{AllowLiteralPasswords: o.AllowLiteralPasswords})...)
	if err != nil {
		return nil, err
	}
	return &Source{Dir: dir, Config: cfg, LockPath: filepath.Join(dir, lock.FileName), LockRoot: dir, LockRel: lock.FileName}, nil
}

// RenderedProfile is c's config restricted to what the function renders:
// the profile c.Profile names (cfg.Profile's rule: "" is the only one),
// or no profile when c.PinOnly. So lock, bump, vet --remote, mirror and
// status cover exactly the images the function uses, and never those of
// a profile it does not render.
func RenderedProfile(c fn.Config) (*v1alpha1.Config, error) {
	cfg := *c.Config
	if c.PinOnly {
		cfg.Profiles = nil
		return &cfg, nil
	}
	name, prof, err := c.Config.Profile(c.Profile)
	if err != nil {
		return nil, err
	}
	cfg.Profiles = map[string]v1alpha1.Profile{name: *prof}
	return &cfg, nil
}

// Passwords returns the rule of s's password reads: the CLI's for a
// config directory, the KRM function's with the exec declaration's
// --allow-env names for a kustomization.
func (s *Source) Passwords() creds.Rule {
	return creds.Rule{Dir: s.Dir, Function: s.Kustomization != nil, AllowEnv: s.AllowEnv}
}

// NeedLock refuses a kustomization whose resources list no lock: the
// function reads the digests from there.
func (s *Source) NeedLock() error {
	if s.LockPath != "" {
		return nil
	}
	return fmt.Errorf("%s lists no %s in its resources, so the function has no digests and stowage lock nowhere to write: add `- %s` to resources (the file may not exist yet) and run stowage lock again",
		s.Kustomization.File, lock.FileName, lock.FileName)
}

// LockFile is a source's lock as read.
type LockFile struct {
	// Path is the file (Source.LockPath).
	Path string
	// Lock is the parsed lock; empty when the file does not exist.
	Lock *lock.Lock
	// Data are the file's bytes; nil when it does not exist.
	Data []byte
	// Exists says whether the file exists.
	Exists bool
}

// ReadLock reads s's lock file, confined and bounded (lock.ReadBytes), and
// parses it strictly (lock.Parse): the one way a command reads a source's
// lock. A file that does not exist is an empty lock, so that render names
// every image that needs an entry. With repair set, the entries that do
// not validate are dropped instead (lock.ParseRepair), each passed to
// repair. Errors: NeedLock's, the read's and every problem of the parse.
func (s *Source) ReadLock(repair func(dropped error)) (*LockFile, error) {
	if err := s.NeedLock(); err != nil {
		return nil, err
	}
	data, err := lock.ReadBytesIn(s.lockIn())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &LockFile{Path: s.LockPath, Lock: &lock.Lock{}}, nil
	case err != nil:
		return nil, err
	}
	f := &LockFile{Path: s.LockPath, Data: data, Exists: true}
	if repair == nil {
		f.Lock, err = lock.Parse(data, s.LockPath)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	l, dropped, err := lock.ParseRepair(data, s.LockPath)
	if err != nil {
		return nil, err
	}
	for _, d := range dropped {
		repair(d)
	}
	f.Lock = l
	return f, nil
}

// lockIn is the directory the lock is confined to, its path relative to
// it, and its path as messages name it (LockPath).
func (s *Source) lockIn() (root, rel, shown string) {
	if s.LockRoot == "" || s.LockRel == "" {
		return filepath.Dir(s.LockPath), filepath.Base(s.LockPath), s.LockPath
	}
	return s.LockRoot, s.LockRel, s.LockPath
}

// WriteLock replaces the lock file with data (mode 0644), atomically and
// confined to LockRoot (atomicfile.WriteFileIn): a link that leads out of
// it is refused, also one swapped in after the lock was read.
func (s *Source) WriteLock(ctx context.Context, data []byte) error {
	root, rel, _ := s.lockIn()
	return atomicfile.WriteFileIn(ctx, root, rel, data, 0o644)
}

// LockIn returns the directory the lock is confined to and the lock's
// path relative to it, for a writer that batches the lock with other
// files (output.Set.FileIn).
func (s *Source) LockIn() (root, rel string) {
	root, rel, _ = s.lockIn()
	return root, rel
}

// OwnLock refuses, for lock and bump, a kustomization whose lock file is
// not inside its own directory (a base's, shared by overlays): each
// overlay would write it with its own images and prune the other's
// entries, so the lock would flip with every run. vet, mirror and status
// may still read such a lock. It also refuses a lock listed in a
// directory that does not exist (resources: [locks/stowage.lock.yaml]
// before locks/ is made), naming the directory.
func (s *Source) OwnLock() error {
	if s.Kustomization == nil {
		return nil
	}
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return err
	}
	file, err := filepath.Abs(s.LockPath)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(dir, file); err == nil && filepath.IsLocal(rel) {
		// The build had a placeholder for a lock not written yet; the
		// file goes where it is listed, in a directory that must exist.
		parent := filepath.Dir(s.LockPath)
		if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s lists the lock %s, whose directory %s does not exist: create it (mkdir -p %s) and run the command again",
				s.Kustomization.File, s.LockPath, parent, parent)
		}
		return nil
	}
	return fmt.Errorf("%s is not inside the kustomization's directory %s (it comes from a base), so stowage does not write it: every overlay locking a shared lock prunes the others' entries. List a lock in each overlay's own resources (`- %s` in %s) and remove it from the base's",
		s.LockPath, s.Dir, lock.FileName, s.Kustomization.File)
}

// Profiles are the profiles a command covers: the function's one for a
// kustomization (none when it only pins), else only, or every profile.
// Errors: only given for a kustomization (a *UsageError), and the
// functionConfig's profile rule.
func (s *Source) Profiles(only string) ([]string, error) {
	if s.Kustomization == nil {
		if only != "" {
			return []string{only}, nil
		}
		return s.Config.ProfileNames(), nil
	}
	if only != "" {
		return nil, &UsageError{fmt.Errorf("--profile is for a config directory; in a kustomization the functionConfig names the profile")}
	}
	if s.Function.PinOnly {
		return nil, nil
	}
	name, _, err := s.Config.Profile(s.Function.Profile)
	if err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// ExecDeclaration reads the functionConfig's config.kubernetes.io/function
// annotation as kustomize does (runtimeutil.GetFunctionSpec) and, when it
// runs `stowage fn` (as declared, the CLI's, says), its args: the names
// --allow-env gives the function besides STOWAGE_*, and the input bound
// (--max-input-bytes, default fn.DefaultMaxInput). Errors, naming the
// file: metadata.annotations or labels not a mapping (kustomize panics on
// it), an annotation that does not parse, none at all (kustomize would
// look for a plugin and fail), args the fn command refuses.
func ExecDeclaration(b *kustomization.Build, declared func([]string) (Declaration, bool, error)) (allowEnv []string, maxInput int64, err error) {
	fc := b.FunctionConfig
	for _, f := range []string{"annotations", "labels"} {
		n, err := fc.Pipe(yaml.Lookup("metadata", f))
		if err != nil || n == nil {
			continue
		}
		if y := n.YNode(); y.Kind != yaml.MappingNode && y.Tag != yaml.NodeTagNull {
			kind := map[yaml.Kind]string{yaml.SequenceNode: "a sequence", yaml.ScalarNode: "a scalar", yaml.AliasNode: "an alias"}[y.Kind]
			return nil, 0, fmt.Errorf("%s:%d: metadata.%s: want a map of strings, got %s (kustomize cannot read the functionConfig's %s)", b.FunctionFile, y.Line, f, kind, f)
		}
	}
	spec, err := runtimeutil.GetFunctionSpec(fc)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: metadata.annotations.%s: %w", b.FunctionFile, runtimeutil.FunctionAnnotationKey, err)
	}
	if spec == nil {
		return nil, 0, fmt.Errorf("%s: no %s annotation: kustomize would not run stowage as a KRM function (see `stowage fn --help` for the exec declaration)", b.FunctionFile, runtimeutil.FunctionAnnotationKey)
	}
	if err := fn.DeclaredEnv(fc); err != nil {
		return nil, 0, fmt.Errorf("%s: metadata.annotations.%s: %w", b.FunctionFile, runtimeutil.FunctionAnnotationKey, err)
	}
	if declared == nil {
		return nil, fn.DefaultMaxInput, nil
	}
	d, ok, err := declared(spec.Exec.Args)
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("%s: the exec declaration's args %q: %w", b.FunctionFile, spec.Exec.Args, err)
	case !ok:
		return nil, fn.DefaultMaxInput, nil
	}
	return d.AllowEnv, d.MaxInput, nil
}

// FunctionError is a kustomization the function would fail on: its error
// results, placed in files (fn.Located).
type FunctionError struct {
	// Dir is the kustomization's directory.
	Dir string
	// Errors are the error results, in the function's order.
	Errors []fn.Located
}

// NewFunctionError collects the error results of rs, which p returned for
// b's functionConfig (the warnings are the caller's to print, once).
func NewFunctionError(p *fn.Processor, b *kustomization.Build, rs framework.Results) error {
	e := &FunctionError{Dir: b.Dir}
	for _, l := range p.Locate(b.FunctionConfig, rs) {
		if l.Severity == framework.Error {
			e.Errors = append(e.Errors, l)
		}
	}
	return e
}

// Error lists every error, one a line.
func (e *FunctionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kustomization %s: the stowage function would fail with %s:", e.Dir, words.Count(len(e.Errors), "error"))
	for _, l := range e.Errors {
		b.WriteString("\n  " + l.String())
	}
	return b.String()
}
