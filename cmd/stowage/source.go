package main

import (
	"context"
	"fmt"
	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/workload"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

// kustomizationCommands are the commands whose DIR may also be a
// kustomization that declares stowage as a KRM function.
var kustomizationCommands = []string{"stowage vet", "stowage lock", "stowage bump", "stowage mirror", "stowage status"}

// kustomizationHelp ends the long help of kustomizationCommands.
const kustomizationHelp = `

DIR may also be a kustomization whose transformers: hold the stowage
functionConfig (a Stowage or JupyterImagePuller with the exec declaration
config.kubernetes.io/function): the functionConfig is then the config and
names the profile (the one the function renders; --profile is refused); the
lock is the stowage.lock.yaml its resources list (lock and bump write it
only inside the kustomization's own directory); the images the function
pins in the other resources count too. Passwords are read as the function
reads them: env: only STOWAGE_* variables and those the operator names in
STOWAGE_ALLOW_ENV, of which the exec declaration's --allow-env may only
keep some. The kustomization is built with kustomize's API up to the
stowage transformer, from files beneath --root only (default DIR; --root .
lets an overlay reach ../base).`

// dirSource is what a command's DIR holds: a config directory, or a
// kustomization whose transformers run stowage as a KRM function.
type dirSource struct {
	// dir is DIR; file: password sources are relative to it.
	dir string
	// cfg is the config: the directory's, or the functionConfig's with
	// only the profile the function renders (renderedProfile).
	cfg *v1alpha1.Config
	// lockPath is the lock file: DIR/stowage.lock.yaml, or the file of
	// the kustomization's ImageLock ("" when its resources list none).
	lockPath string
	// kust and fn are set for a kustomization: the build up to the
	// function, and what its functionConfig says.
	kust *kustomization.Build
	fn   fn.Config
	// workloads are the images the function pins in the kustomization's
	// other resources (none for a config directory).
	workloads []plan.Workload
	// fnAllowEnv are the --allow-env names of the exec declaration, and
	// fnMaxInput its --max-input-bytes (a kustomization only;
	// execDeclaration).
	fnAllowEnv []string
	fnMaxInput int64
}

// passwords is how a command reads the password sources of its config:
// from dir, under the CLI's rule (creds.Read) for a config directory, or
// under the KRM function's (creds.ReadFunction with allowEnv) for a
// kustomization, so that no command reads a variable the function itself
// may not.
type passwords struct {
	dir      string
	function bool
	allowEnv []string
}

// passwords returns the rule of s's password reads.
func (s *dirSource) passwords() passwords {
	return passwords{dir: s.dir, function: s.kust != nil, allowEnv: s.fnAllowEnv}
}

// read reads sources under the rule.
func (p passwords) read(sources []creds.Source, getenv env) (map[string][]byte, error) {
	if p.function {
		return creds.ReadFunction(p.dir, sources, getenv, p.allowEnv)
	}
	return creds.Read(p.dir, sources, getenv)
}

// allowed refuses every env: source of images the rule does not let
// stowage read (creds.Allowed: the operator's STOWAGE_ALLOW_ENV through
// getenv, narrowed by the exec declaration's --allow-env for a
// kustomization), before a registry is contacted.
func (p passwords) allowed(images []*plan.Image, getenv env) error {
	var declared []string
	if p.function {
		declared = p.allowEnv
	}
	return creds.Allowed(authSources(images), getenv, declared)
}

// authSources are the password sources of images' auth, sorted, each with
// the images that use it.
func authSources(images []*plan.Image) []creds.Source {
	users := map[string][]string{}
	for _, img := range images {
		if img.Auth != nil && img.Auth.Password != "" && !slices.Contains(users[img.Auth.Password], img.Ref.Written) {
			users[img.Auth.Password] = append(users[img.Auth.Password], img.Ref.Written)
		}
	}
	out := make([]creds.Source, 0, len(users))
	for src, us := range users {
		slices.Sort(us)
		out = append(out, creds.Source{Source: src, UsedBy: us})
	}
	slices.SortFunc(out, func(a, b creds.Source) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// addRootFlag adds --root, the directory a kustomization's reads stay
// beneath.
func (o *loadOptions) addRootFlag(fs *pflag.FlagSet) {
	fs.StringVar(&o.root, "root", "", "when DIR is a kustomization: the directory its files (bases, components) may come from; default DIR")
}

// loadSource reads dir: a kustomization with a stowage transformer when
// dir holds a kustomization file, else a config directory. The warnings of
// a functionConfig are written to stderr as `stowage: file:line: warning:
// field: message` lines, as the function writes them; its errors are
// returned as a *fnConfigError.
func loadSource(stderr io.Writer, dir string, o loadOptions) (*dirSource, error) {
	if kustomization.Find(dir) == "" {
		if o.root != "" {
			return nil, usageError{fmt.Errorf("--root is for a kustomization; %s holds none", dir)}
		}
		cfg, err := schema.Load(dir, schemaOptions(schema.Options{AllowLiteralPasswords: o.allowLiteralPasswords})...)
		if err != nil {
			return nil, err
		}
		return &dirSource{dir: dir, cfg: cfg, lockPath: filepath.Join(dir, lock.FileName)}, nil
	}
	if o.allowLiteralPasswords {
		return nil, usageError{fmt.Errorf("--allow-literal-passwords is for a config directory; in a kustomization the functionConfig decides (%s on a %s)", fn.AllowInlinePasswordsAnnotation, fn.SubmarineKind)}
	}
	ctx := context.Background()
	if o.deadline != nil && *o.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, *o.deadline, fmt.Errorf("it ran past --deadline %v; raise it for a kustomization this large", *o.deadline))
		defer cancel()
	}
	b, err := kustomization.LoadContext(ctx, dir, o.root, fn.IsFunctionConfig)
	if err != nil {
		return nil, err
	}
	allowEnv, maxInput, err := execDeclaration(b)
	if err != nil {
		return nil, err
	}
	p := &fn.Processor{Dir: dir, ConfigOptions: schemaOptions()}
	c, rs, ok := p.ReadConfig(b.FunctionConfig)
	for _, l := range p.Locate(b.FunctionConfig, rs) {
		if l.Severity != framework.Error {
			fmt.Fprintf(stderr, "stowage: %s\n", escape.Text(l.String()))
		}
	}
	if !ok {
		return nil, newFnConfigError(p, b, rs)
	}
	cfg, err := renderedProfile(c)
	if err != nil {
		return nil, err
	}
	src := &dirSource{dir: dir, cfg: cfg, lockPath: b.LockFile, kust: b, fn: c, workloads: workload.Pinned(b.Items), fnAllowEnv: allowEnv, fnMaxInput: maxInput}
	return src, nil
}

// renderedProfile is c's config restricted to what the function renders:
// the profile c.Profile names (cfg.Profile's rule: "" is the only one),
// or no profile when c.PinOnly. So lock, bump, vet --remote, mirror and
// status cover exactly the images the function uses, and never those of
// a profile it does not render.
func renderedProfile(c fn.Config) (*v1alpha1.Config, error) {
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

// needLock refuses a kustomization whose resources list no lock: the
// function reads the digests from there.
func (s *dirSource) needLock() error {
	if s.lockPath != "" {
		return nil
	}
	return fmt.Errorf("%s lists no %s in its resources, so the function has no digests and stowage lock nowhere to write: add `- %s` to resources (the file may not exist yet) and run stowage lock again",
		s.kust.File, lock.FileName, lock.FileName)
}

// ownLock refuses, for lock and bump, a kustomization whose lock file is
// not inside its own directory (a base's, shared by overlays): each
// overlay would write it with its own images and prune the other's
// entries, so the lock would flip with every run. vet, mirror and status
// may still read such a lock. It also refuses a lock listed in a
// directory that does not exist (resources: [locks/stowage.lock.yaml]
// before locks/ is made), naming the directory.
func (s *dirSource) ownLock() error {
	if s.kust == nil {
		return nil
	}
	dir, err := filepath.Abs(s.dir)
	if err != nil {
		return err
	}
	file, err := filepath.Abs(s.lockPath)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(dir, file); err == nil && filepath.IsLocal(rel) {
		// The build had a placeholder for a lock not written yet; the
		// file goes where it is listed, in a directory that must exist.
		parent := filepath.Dir(s.lockPath)
		if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s lists the lock %s, whose directory %s does not exist: create it (mkdir -p %s) and run the command again",
				s.kust.File, s.lockPath, parent, parent)
		}
		return nil
	}
	return fmt.Errorf("%s is not inside the kustomization's directory %s (it comes from a base), so stowage does not write it: every overlay locking a shared lock prunes the others' entries. List a lock in each overlay's own resources (`- %s` in %s) and remove it from the base's",
		s.lockPath, s.dir, lock.FileName, s.kust.File)
}

// profiles are the profiles a command covers: the function's one for a
// kustomization (none when it only pins), else only, or every profile.
func (s *dirSource) profiles(only string) ([]string, error) {
	if s.kust == nil {
		if only != "" {
			return []string{only}, nil
		}
		return s.cfg.ProfileNames(), nil
	}
	if only != "" {
		return nil, usageError{fmt.Errorf("--profile is for a config directory; in a kustomization the functionConfig names the profile")}
	}
	if s.fn.PinOnly {
		return nil, nil
	}
	name, _, err := s.cfg.Profile(s.fn.Profile)
	if err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// execDeclaration reads the functionConfig's config.kubernetes.io/function
// annotation as kustomize does (runtimeutil.GetFunctionSpec) and, when it
// runs `stowage fn`, its args with the fn command's own flags: the names
// --allow-env gives the function besides STOWAGE_*, and the input bound
// (--max-input-bytes, default DefaultMaxFnInput). Errors, naming the file:
// metadata.annotations or labels not a mapping (kustomize panics on it),
// an annotation that does not parse, none at all (kustomize would look
// for a plugin and fail), args the fn command refuses.
func execDeclaration(b *kustomization.Build) (allowEnv []string, maxInput int64, err error) {
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
	maxInput = DefaultMaxFnInput
	cmd, rest, err := newRoot(nil).Find(spec.Exec.Args)
	if err != nil || cmd.Name() != "fn" {
		// Not `stowage fn …` (a container, a wrapper): its flags are not
		// known here.
		return nil, maxInput, nil
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return nil, 0, fmt.Errorf("%s: the exec declaration's args %q: %w", b.FunctionFile, spec.Exec.Args, err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return nil, 0, fmt.Errorf("%s: the exec declaration's args %q: %w", b.FunctionFile, spec.Exec.Args, err)
	}
	// Without --allow-env the declaration narrows nothing (nil).
	if cmd.Flags().Changed("allow-env") {
		if allowEnv, err = cmd.Flags().GetStringArray("allow-env"); err != nil {
			return nil, 0, err
		}
	}
	if maxInput, err = cmd.Flags().GetInt64("max-input-bytes"); err != nil {
		return nil, 0, err
	}
	return allowEnv, maxInput, nil
}

// fnConfigError is a kustomization the function would fail on: its error
// results, placed in files (fn.Located).
type fnConfigError struct {
	dir    string
	errors []fn.Located
}

// newFnConfigError collects the error results of rs (the warnings are
// the caller's to print, once).
func newFnConfigError(p *fn.Processor, b *kustomization.Build, rs framework.Results) error {
	e := &fnConfigError{dir: b.Dir}
	for _, l := range p.Locate(b.FunctionConfig, rs) {
		if l.Severity == framework.Error {
			e.errors = append(e.errors, l)
		}
	}
	return e
}

// Error lists every error, one a line.
func (e *fnConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kustomization %s: the stowage function would fail with %d error(s):", e.dir, len(e.errors))
	for _, l := range e.errors {
		b.WriteString("\n  " + l.String())
	}
	return b.String()
}
