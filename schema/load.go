package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"
)

// LockFile is the name of the lock beside the config; the loader skips it.
const LockFile = "stowage.lock.yaml"

// Options change how a config is loaded.
type Options struct {
	// AllowLiteralPasswords accepts auth.password values that are not an
	// "env:" or "file:" source. Off by default: a GitOps repo must not hold
	// passwords.
	AllowLiteralPasswords bool
}

// File is one config source: a name used in error positions (a path) and its
// bytes. The name's extension (.cue, .yaml, .yml, .json) selects the decoder.
type File struct {
	Name string
	Data []byte
}

// ReadDir returns the config files of dir: every regular .cue, .yaml, .yml
// and .json file directly inside it, except the lock (stowage.lock.yaml) and
// hidden files, sorted by name. Names are dir-joined so positions read as
// paths. It fails when dir holds none.
func ReadDir(dir string) ([]File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading config directory: %w", err)
	}
	var files []File
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || n == LockFile || !isConfigFile(n) {
			continue
		}
		p := filepath.Join(dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading config file: %w", err)
		}
		files = append(files, File{Name: p, Data: data})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .cue, .yaml or .json config files", dir)
	}
	return files, nil
}

func isConfigFile(n string) bool {
	switch filepath.Ext(n) {
	case ".cue", ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Load reads the config directory dir (see ReadDir), unifies it with the
// schema and validates it. It returns the typed config, or Errors listing
// every problem with its file:line:col and field path.
func Load(dir string, opts Options) (*Config, error) {
	files, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return LoadFiles(dir, files, opts)
}

// LoadFiles is Load over files already in memory; dir resolves "file:"
// password sources and is recorded in Config.Dir.
func LoadFiles(dir string, files []File, opts Options) (*Config, error) {
	ctx := cuecontext.New()
	user, errs := buildUser(ctx, files)
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	return finish(ctx, dir, user, opts)
}

// LoadValue validates a config given as a Go value already decoded from
// YAML or JSON (the KRM function's functionConfig), with positions naming
// file. It shares the schema and every rule with Load.
func LoadValue(dir, file string, data []byte, opts Options) (*Config, error) {
	return LoadFiles(dir, []File{{Name: file, Data: data}}, opts)
}

func finish(ctx *cue.Context, dir string, user cue.Value, opts Options) (*Config, error) {
	sch := ctx.CompileBytes(Source, cue.Filename(SchemaFile))
	if err := sch.Err(); err != nil {
		return nil, fmt.Errorf("embedded schema: %w", err)
	}
	v := sch.LookupPath(cue.ParsePath("#Config")).Unify(user)
	loc := &locator{user: user}
	if err := v.Validate(cue.Concrete(true), cue.All()); err != nil {
		return nil, loc.fromCUE(err).sorted()
	}
	var cfg Config
	if errs := checkRaw(v, loc); len(errs) > 0 {
		return nil, errs.sorted()
	}
	if err := v.Decode(&cfg); err != nil {
		return nil, loc.fromCUE(err).sorted()
	}
	cfg.Dir = dir
	cfg.AllowLiteralPasswords = opts.AllowLiteralPasswords
	if errs := validate(&cfg, loc); len(errs) > 0 {
		return nil, errs.sorted()
	}
	return &cfg, nil
}

// buildUser compiles every file and unifies them. CUE files are loaded as
// one instance (so they may refer to each other); YAML and JSON files are
// data unified on top.
func buildUser(ctx *cue.Context, files []File) (cue.Value, Errors) {
	var errs Errors
	var cueFiles []File
	vals := []cue.Value{}
	for _, f := range files {
		switch filepath.Ext(f.Name) {
		case ".cue":
			cueFiles = append(cueFiles, f)
		case ".yaml", ".yml":
			af, err := cueyaml.Extract(f.Name, f.Data)
			if err != nil {
				errs = append(errs, fromCUEList(err, f.Name)...)
				continue
			}
			vals = append(vals, ctx.BuildFile(af))
		case ".json":
			expr, err := cuejson.Extract(f.Name, f.Data)
			if err != nil {
				errs = append(errs, fromCUEList(err, f.Name)...)
				continue
			}
			vals = append(vals, ctx.BuildExpr(expr))
		default:
			errs = append(errs, &Error{File: f.Name, Msg: "not a .cue, .yaml or .json file"})
		}
	}
	if len(cueFiles) > 0 {
		v, err := buildCUE(ctx, cueFiles)
		if err != nil {
			errs = append(errs, fromCUEList(err, "")...)
		} else {
			vals = append([]cue.Value{v}, vals...)
		}
	}
	if len(errs) > 0 {
		return cue.Value{}, errs
	}
	user := ctx.CompileString("{}")
	for _, v := range vals {
		if err := v.Err(); err != nil {
			errs = append(errs, fromCUEList(err, "")...)
			continue
		}
		user = user.Unify(v)
	}
	return user, errs
}

// buildCUE loads the .cue files as one instance through CUE's own loader,
// from memory (an overlay), so the files need no cue.mod.
func buildCUE(ctx *cue.Context, files []File) (cue.Value, error) {
	root, err := filepath.Abs(".")
	if err != nil {
		return cue.Value{}, err
	}
	overlay := map[string]load.Source{}
	args := make([]string, 0, len(files))
	for _, f := range files {
		abs := f.Name
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, f.Name)
		}
		overlay[abs] = load.FromBytes(f.Data)
		args = append(args, abs)
	}
	insts := load.Instances(args, &load.Config{Dir: root, Overlay: overlay})
	if len(insts) != 1 {
		return cue.Value{}, fmt.Errorf("CUE files form %d instances, want 1", len(insts))
	}
	if err := insts[0].Err; err != nil {
		return cue.Value{}, err
	}
	relativise(insts[0], root)
	v := ctx.BuildInstance(insts[0])
	return v, v.Err()
}

// relativise rewrites the absolute overlay file names back to the names the
// caller gave, so positions print as the user typed the directory.
func relativise(inst *build.Instance, root string) {
	for _, f := range inst.Files {
		if rel, err := filepath.Rel(root, f.Filename); err == nil && !strings.HasPrefix(rel, "..") {
			f.Filename = rel
		}
	}
}

// locator turns CUE paths into file positions, looking them up in the user's
// own values so that positions never point into the embedded schema when
// the user's file has the field.
type locator struct {
	user cue.Value
}

// at returns a located error for path; when path is not in the user's
// files it climbs to the nearest parent that is.
func (l *locator) at(path cue.Path, format string, args ...any) *Error {
	e := &Error{Path: pathString(path), Msg: fmt.Sprintf(format, args...)}
	sels := path.Selectors()
	for n := len(sels); n >= 0; n-- {
		v := l.user.LookupPath(cue.MakePath(sels[:n]...))
		if !v.Exists() {
			continue
		}
		if p := userPos(v); p.IsValid() {
			e.File, e.Line, e.Column = p.Filename(), p.Line(), p.Column()
			break
		}
	}
	return e
}

// userPos is the first position of v that is in a user file.
func userPos(v cue.Value) token.Pos {
	if p := v.Pos(); p.IsValid() && p.Filename() != SchemaFile {
		return p
	}
	if src := v.Source(); src != nil {
		if p := src.Pos(); p.IsValid() && p.Filename() != SchemaFile {
			return p
		}
	}
	_, conjuncts := v.Expr()
	for _, c := range conjuncts {
		if p := c.Pos(); p.IsValid() && p.Filename() != SchemaFile {
			return p
		}
	}
	return token.NoPos
}

// fromCUE converts CUE's error list, keeping CUE's own messages and
// preferring positions in user files over positions in the schema.
func (l *locator) fromCUE(err error) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		le := &Error{Path: strings.Join(e.Path(), "."), Msg: fmt.Sprintf(format, args...)}
		pos := token.NoPos
		for _, p := range append([]token.Pos{e.Position()}, e.InputPositions()...) {
			if p.IsValid() && p.Filename() != SchemaFile {
				pos = p
				break
			}
		}
		if pos.IsValid() {
			le.File, le.Line, le.Column = pos.Filename(), pos.Line(), pos.Column()
		} else if len(e.Path()) > 0 {
			if at := l.at(cue.ParsePath(quotePath(e.Path())), "%s", le.Msg); at.File != "" {
				le.File, le.Line, le.Column = at.File, at.Line, at.Column
			}
		}
		out = append(out, le)
	}
	if len(out) == 0 {
		out = append(out, &Error{Msg: err.Error()})
	}
	return out
}

// fromCUEList converts parse errors that are not tied to a unified value.
func fromCUEList(err error, file string) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		le := &Error{Path: strings.Join(e.Path(), "."), Msg: fmt.Sprintf(format, args...), File: file}
		if p := e.Position(); p.IsValid() {
			le.File, le.Line, le.Column = p.Filename(), p.Line(), p.Column()
		}
		out = append(out, le)
	}
	if len(out) == 0 {
		out = append(out, &Error{File: file, Msg: err.Error()})
	}
	return out
}

// quotePath turns CUE error path elements back into a parseable path.
func quotePath(elems []string) string {
	var b strings.Builder
	for i, e := range elems {
		switch {
		case strings.HasPrefix(e, "[") || strings.HasPrefix(e, "\""):
			b.WriteString(e)
		case ast.IsValidIdent(e):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprintf(&b, "%q", e)
		}
	}
	return b.String()
}

// pathString prints a path the way users read it: profiles.lab.pullers[0].name.
func pathString(p cue.Path) string {
	var b strings.Builder
	for i, s := range p.Selectors() {
		if s.Type() == cue.IndexLabel {
			fmt.Fprintf(&b, "[%d]", s.Index())
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// sortedKeys returns the keys of m in byte order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var errNoProfile = errors.New("no such profile")

// ProfileNames returns the profile names of cfg, sorted.
func (c *Config) ProfileNames() []string { return sortedKeys(c.Profiles) }

// Profile returns the named profile. An empty name picks the only profile
// when there is exactly one. The error lists the profiles there are.
func (c *Config) Profile(name string) (string, *Profile, error) {
	if name == "" {
		if len(c.Profiles) == 1 {
			for n := range c.Profiles {
				p := c.Profiles[n]
				return n, &p, nil
			}
		}
		return "", nil, fmt.Errorf("%w: choose one with --profile (%s)", errNoProfile, strings.Join(c.ProfileNames(), ", "))
	}
	p, ok := c.Profiles[name]
	if !ok {
		return "", nil, fmt.Errorf("%w %q; profiles: %s", errNoProfile, name, strings.Join(c.ProfileNames(), ", "))
	}
	return name, &p, nil
}
