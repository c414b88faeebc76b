package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/escape"
)

// LockFile is the name of the lock beside the config; the loader skips it.
const LockFile = "stowage.lock.yaml"

// File is one config source: a name used in error positions (a path) and its
// bytes. The name's extension (.cue, .yaml, .yml, .json) selects the decoder.
type File struct {
	Name string
	Data []byte
}

// ReadDir returns the config files of dir: every .cue, .yaml, .yml and
// .json file directly inside it, except the lock (stowage.lock.yaml) and
// hidden files, sorted by name. Names are dir-joined so positions read as
// paths. It fails when dir holds none.
//
// Each file is read through internal/confined: a symbolic link is followed
// when it stays inside dir and refused with a message when it leads out; a
// config-named entry that is not a regular file (a FIFO, a device, a
// directory) is refused too, never skipped silently. Each file may hold at
// most confined.Config.Max bytes, and all of them together Limits.Bytes
// (WithLimits; the other options do not matter here).
func ReadDir(dir string, opts ...Option) ([]File, error) {
	lim := newSettings(opts).Limits.Bytes
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading config directory: %w", err)
	}
	var files []File
	var total int64
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || n == LockFile || !isConfigFile(n) {
			continue
		}
		p := filepath.Join(dir, n)
		if escape.Line(n) != n {
			return nil, Errors{{File: filepath.Join(dir, escape.Line(n)), Msg: "the file name holds a control, format or non-UTF-8 character (shown escaped); rename the file"}}
		}
		data, err := confined.ReadFile(dir, n, confined.Config)
		if err != nil {
			return nil, err
		}
		total += int64(len(data))
		if total > lim {
			return nil, Errors{{File: p, Msg: fmt.Sprintf("the config files hold more than %d bytes together by this file, the limit of a config; raise it with --max-config-bytes", lim)}}
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
func Load(dir string, opts ...Option) (*v1alpha1.Config, error) {
	files, err := ReadDir(dir, opts...)
	if err != nil {
		return nil, err
	}
	return LoadFiles(dir, files, opts...)
}

// LoadFiles is Load over files already in memory; dir resolves "file:"
// password sources and is recorded in Config.Dir. The files are taken in
// name order whatever order they come in, so the result and the errors do
// not depend on it. The evaluation runs in a child process with WithChild
// when the config computes (Computes), else in this process under the
// watch of timed.
func LoadFiles(dir string, files []File, opts ...Option) (cfg *v1alpha1.Config, err error) {
	set := newSettings(opts)
	if len(files) == 0 {
		return nil, Errors{{File: dir, Msg: "no config files"}}
	}
	files = slices.SortedStableFunc(slices.Values(files), func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	defer func() { err = redactErrors(err, files) }()
	if set.child != "" && Computes(files) != "" {
		return runChild(set.ctx, set.child, childRequest{Limits: set.Limits, Dir: dir, Files: files, Opts: set.Options})
	}
	return timed(set.ctx, files[0].Name, set.Limits, func() (*v1alpha1.Config, error) {
		ctx := cuecontext.New()
		user, errs := buildUser(ctx, files, set.Limits.Nodes)
		if len(errs) > 0 {
			return nil, errs.sorted()
		}
		return finish(ctx, dir, files[0].Name, user, set.Options)
	})
}

// LoadEmbedded validates a config that is one field of a YAML document —
// the spec of the KRM function's functionConfig — with the same schema and
// rules as Load. field names the top-level field holding the config
// ("spec"); the fields in drop are removed from it first (they belong to
// the document, not the config, e.g. "profile"). Positions name file and
// the document's own lines; paths are relative to field.
//
// The evaluation has the same limits as LoadFiles, in this process even
// with WithChild: the document is YAML, which is data (Computes).
func LoadEmbedded(dir, file string, data []byte, field string, drop []string, opts ...Option) (*v1alpha1.Config, error) {
	set := newSettings(opts)
	return timed(set.ctx, file, set.Limits, func() (*v1alpha1.Config, error) { return loadEmbedded(dir, file, data, field, drop, set.Options) })
}

func loadEmbedded(dir, file string, data []byte, field string, drop []string, opts Options) (cfg *v1alpha1.Config, err error) {
	defer func() { err = redactErrors(err, []File{{Name: file, Data: data}}) }()
	defer recoverCUE(file, &cfg, &err)
	if es := checkYAML(file, data); len(es) > 0 {
		return nil, es.sorted()
	}
	f, err := extractYAML(file, data)
	if err != nil {
		return nil, decodeErrors(err, file).sorted()
	}
	var body *ast.StructLit
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		if name, _, _ := ast.LabelName(fd.Label); name == field {
			body, _ = fd.Value.(*ast.StructLit)
		}
	}
	if body == nil {
		return nil, Errors{{File: file, Path: field, Msg: "missing: the config goes under " + field}}
	}
	kept := &ast.StructLit{Lbrace: body.Lbrace, Rbrace: body.Rbrace}
	for _, d := range body.Elts {
		if fd, ok := d.(*ast.Field); ok {
			if name, _, _ := ast.LabelName(fd.Label); slices.Contains(drop, name) {
				continue
			}
		}
		kept.Elts = append(kept.Elts, d)
	}
	ctx := cuecontext.New()
	user := ctx.BuildExpr(kept)
	if err := user.Err(); err != nil {
		return nil, fromCUEList(err, file).sorted()
	}
	return finish(ctx, dir, file, user, opts)
}

// finish unifies user with the schema and checks it. Every problem is
// reported in one go: CUE's own errors (types, closed structs, conflicts,
// missing values), then the Go rules (validate) over every part of the
// config that decodes; a Go rule's error is left out only where a part it
// looks at did not decode, since the rule saw a zero value there.
//
// first is the first config file: problems with no place of their own,
// such as a missing profiles field, are reported against it.
func finish(ctx *cue.Context, dir, first string, user cue.Value, opts Options) (*v1alpha1.Config, error) {
	sch := ctx.CompileBytes(Source, cue.Filename(SchemaFile))
	if err := sch.Err(); err != nil {
		return nil, fmt.Errorf("embedded schema: %w", err)
	}
	schema := sch.LookupPath(cue.ParsePath("#Config"))
	v := schema.Unify(user)
	loc := &locator{user: user, config: v, schema: schema, first: first}
	var errs Errors
	if err := v.Validate(cue.Concrete(true), cue.All()); err != nil {
		errs = append(errs, loc.fromCUE(err)...)
	}
	errs = append(errs, checkRaw(v, loc)...)
	var cfg v1alpha1.Config
	failed := decodePartial(v, reflect.ValueOf(&cfg).Elem(), cue.Path{})
	var failedPaths []string
	for _, f := range failed {
		fp := pathString(f.path)
		failedPaths = append(failedPaths, fp)
		// A part that does not decode without CUE or checkRaw saying why.
		if !slices.ContainsFunc(errs, func(e *Error) bool { return related(e.Path, fp) }) {
			msg, at := messageOf(f.err), f.path
			if m, ok := firstMessage(f.err); ok {
				at, msg = loc.missingHint(f.path, m)
				if isPassword(f.path) {
					at, msg = f.path, redactPassword(m)
				}
			} else if isPassword(f.path) {
				msg = redactPassword(cueMessage{format: "%s", args: []any{msg}})
			}
			errs = append(errs, loc.at(at, "%s", msg))
		}
	}
	cfg.Dir = dir
	cfg.AllowLiteralPasswords = opts.AllowLiteralPasswords
	for _, e := range validate(&cfg, loc, opts.AllowNoProfiles) {
		if !slices.ContainsFunc(failedPaths, func(fp string) bool { return related(e.Path, fp) }) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	applyDefaults(&cfg)
	cfg.PasswordPositions = map[string]v1alpha1.Position{}
	at := func(kind, name string, a *v1alpha1.Auth) {
		if a == nil || a.Password == "" {
			return
		}
		e := loc.at(cue.MakePath(cue.Str(kind), cue.Str(name), cue.Str("auth"), cue.Str("password")), "")
		cfg.PasswordPositions[kind+"."+name+".auth.password"] = e.Position()
	}
	for n, env := range cfg.Environments {
		at("environments", n, env.Auth)
	}
	for n, im := range cfg.Images {
		at("images", n, im.Auth)
	}
	return &cfg, nil
}
