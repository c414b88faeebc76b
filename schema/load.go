package schema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
)

// LockFile is the name of the lock beside the config; the loader skips it.
const LockFile = "stowage.lock.yaml"

// Option changes how Load, LoadFiles and LoadEmbedded read a config: an
// Options value, WithLimits or WithChild. Later options win.
type Option interface{ apply(*settings) }

// Options is the Option of the two rules a caller may relax.
type Options struct {
	// AllowLiteralPasswords accepts auth.password values that are not an
	// "env:" or "file:" source. Off by default: a GitOps repo must not hold
	// passwords.
	AllowLiteralPasswords bool
	// AllowNoProfiles accepts a config without profiles (the KRM function
	// in pin-only mode).
	AllowNoProfiles bool
}

func (o Options) apply(s *settings) { s.Options = o }

// WithLimits bounds what the load may cost; zero fields keep
// DefaultLimits'. A config cannot raise them, only its caller can.
func WithLimits(l Limits) Option { return limitsOption(l) }

type limitsOption Limits

func (l limitsOption) apply(s *settings) { s.Limits = Limits(l).orDefault() }

// settings are the options of one load.
type settings struct {
	Options
	Limits Limits
	// child is the executable WithChild named; "" evaluates in this
	// process.
	child string
}

func newSettings(opts []Option) settings {
	s := settings{Limits: DefaultLimits}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	return s
}

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

// Limits bound what one config may cost to load; a config cannot raise
// them, only the command line can (--max-config-bytes, --max-config-nodes,
// --config-timeout, --max-config-memory).
type Limits struct {
	// Bytes bounds the bytes of all the files of one config together.
	Bytes int64
	// Nodes bounds the syntax nodes of all the files together (a field,
	// a value, a list element each count).
	Nodes int
	// Time bounds the evaluation of the config with the schema.
	Time time.Duration
	// Memory bounds the heap bytes the evaluation may add, read from
	// runtime/metrics every 10 ms (so it may overshoot by what 10 ms of
	// evaluation allocates).
	Memory int64
}

// DefaultLimits are the limits of a load without WithLimits: 4 MiB, a
// million syntax nodes, 30 s and 1 GiB of heap, each far above a large real
// config (the 2,000-image test config is about 200 KB and loads in 70 MB)
// and below what exhausts a CI runner (a 10 MB YAML config took 42 s; a
// comprehension bomb reached 5.6 GB within 30 s). WithLimits changes them
// for one load.
var DefaultLimits = Limits{Bytes: 4 << 20, Nodes: 1_000_000, Time: 30 * time.Second, Memory: 1 << 30}

// orDefault is l with its zero fields DefaultLimits'.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	if l.Bytes > 0 {
		d.Bytes = l.Bytes
	}
	if l.Nodes > 0 {
		d.Nodes = l.Nodes
	}
	if l.Time > 0 {
		d.Time = l.Time
	}
	if l.Memory > 0 {
		d.Memory = l.Memory
	}
	return d
}

// timed runs load under the time and memory limits. On a hit it returns an
// error at file naming the limit and its flag; the evaluation, which CUE
// cannot cancel, is abandoned and ends with the process.
func timed(file string, lims Limits, load func() (*v1alpha1.Config, error)) (*v1alpha1.Config, error) {
	type result struct {
		cfg *v1alpha1.Config
		err error
	}
	lim := lims.Time
	base := heapBytes()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		defer recoverCUE(file, &r.cfg, &r.err)
		r.cfg, r.err = load()
	}()
	timer := time.NewTimer(lim)
	defer timer.Stop()
	for {
		select {
		case r := <-done:
			return r.cfg, r.err
		case <-timer.C:
			return nil, Errors{{File: file, Msg: fmt.Sprintf("evaluating the config took more than %v, the limit of a config; raise it with --config-timeout", lim)}}
		case <-tick.C:
			// The heap may shrink below base after a collection: compare,
			// never subtract into an underflow.
			if heapBytes() > base+uint64(lims.Memory) {
				return nil, Errors{{File: file, Msg: fmt.Sprintf("evaluating the config took more than %d bytes of memory, the limit of a config; raise it with --max-config-memory", lims.Memory)}}
			}
		}
	}
}

// heapBytes is the bytes of live and not yet swept heap objects
// (runtime/metrics, no stop-the-world).
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
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
// not depend on it. The evaluation runs in a child process with WithChild,
// else in this process under the watch of timed.
func LoadFiles(dir string, files []File, opts ...Option) (cfg *v1alpha1.Config, err error) {
	set := newSettings(opts)
	if len(files) == 0 {
		return nil, Errors{{File: dir, Msg: "no config files"}}
	}
	files = slices.SortedStableFunc(slices.Values(files), func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	defer func() { err = redactErrors(err, files) }()
	if set.child != "" {
		return runChild(set.child, childRequest{Limits: set.Limits, Dir: dir, Files: files, Opts: set.Options})
	}
	return timed(files[0].Name, set.Limits, func() (*v1alpha1.Config, error) {
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
// The evaluation has the same limits as LoadFiles, in a child process
// with WithChild.
func LoadEmbedded(dir, file string, data []byte, field string, drop []string, opts ...Option) (*v1alpha1.Config, error) {
	set := newSettings(opts)
	if set.child != "" {
		return runChild(set.child, childRequest{Limits: set.Limits, Dir: dir, Files: []File{{Name: file, Data: data}}, Embedded: &embeddedRequest{Field: field, Drop: drop}, Opts: set.Options})
	}
	return timed(file, set.Limits, func() (*v1alpha1.Config, error) { return loadEmbedded(dir, file, data, field, drop, set.Options) })
}

func loadEmbedded(dir, file string, data []byte, field string, drop []string, opts Options) (cfg *v1alpha1.Config, err error) {
	defer func() { err = redactErrors(err, []File{{Name: file, Data: data}}) }()
	defer recoverCUE(file, &cfg, &err)
	f, err := extractYAML(file, data)
	if err != nil {
		return nil, yamlProblem(decodeErrors(err, file), data).sorted()
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
	v := sch.LookupPath(cue.ParsePath("#Config")).Unify(user)
	loc := &locator{user: user, config: v, first: first}
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
			msg := loc.missingHint(f.path, messageOf(f.err))
			if isPassword(f.path) {
				msg = redactPassword(msg)
			}
			errs = append(errs, loc.at(f.path, "%s", msg))
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
	cfg.PasswordPositions = map[string]string{}
	at := func(kind, name string, a *v1alpha1.Auth) {
		if a == nil || a.Password == "" {
			return
		}
		e := loc.at(cue.MakePath(cue.Str(kind), cue.Str(name), cue.Str("auth"), cue.Str("password")), "")
		cfg.PasswordPositions[kind+"."+name+".auth.password"] = strings.TrimSuffix(e.Error(), ": ")
	}
	for n, env := range cfg.Environments {
		at("environments", n, env.Auth)
	}
	for n, im := range cfg.Images {
		at("images", n, im.Auth)
	}
	return &cfg, nil
}

// panicError is a panic of CUE's decoders or evaluator, as an error.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprint(e.v) }

// extractYAML is cueyaml.Extract, with a panic of CUE's YAML decoder (it
// indexes out of range on some inputs, such as lines ended by a lone "\r")
// returned as a panicError.
func extractYAML(file string, data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, panicError{r}
		}
	}()
	return cueyaml.Extract(file, data)
}

// decodeErrors locates a decoder's error in file.
func decodeErrors(err error, file string) Errors {
	var pe panicError
	if errors.As(err, &pe) {
		return Errors{{File: file, Msg: fmt.Sprintf("the YAML decoder cannot read this file (%v); check its syntax and line endings", pe.v)}}
	}
	return fromCUEList(err, file)
}

// recoverCUE turns a panic inside CUE during a load into Errors at file,
// so that a load never panics whatever the files hold.
func recoverCUE(file string, cfg **v1alpha1.Config, err *error) {
	if r := recover(); r != nil {
		*cfg = nil
		*err = Errors{{File: file, Msg: fmt.Sprintf("CUE failed while loading the config (%v); please report this with the file", r)}}
	}
}

// buildUser compiles every file and unifies them in one build: the .cue
// files, and the YAML and JSON files as data files, are the syntax of one
// build.Instance, so CUE unifies them in one evaluation (unifying file by
// file made n files cost n evaluations of a growing value: 2,000 small
// files took 51 s). CUE files may refer to each other's fields and import
// CUE's builtin packages ("strings", "list", ...); every .cue file must
// declare the same package (or none). Positions keep the file names as the
// caller gave them. Only syntax errors and the limits are returned here:
// conflicts between files and with the schema are left in the value for
// finish to report, all at once and located.
//
// Why not cue/load with an overlay: load looks for a module root
// (cue.mod) by walking up the parent directories and reads what it finds
// there, which is a read outside the config directory that
// internal/confined exists to prevent; it takes .yaml and .json files only
// as explicit file arguments, not as the files of a package directory; and
// the files here are already read, bounded and confined. A build.Instance
// given the parsed syntax is what load itself hands to the evaluator.
func buildUser(ctx *cue.Context, files []File, maxNodes int) (cue.Value, Errors) {
	var errs Errors
	inst := build.NewContext().NewInstance("", nil)
	first := ""
	nodes := 0
	for _, f := range files {
		// One rule for every kind of file: a leading UTF-8 byte order
		// mark is dropped, and bytes that are not UTF-8 are an error at
		// their line, the file named once.
		f.Data = bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))
		if e := checkUTF8(f); e != nil {
			errs = append(errs, e)
			continue
		}
		var af *ast.File
		var err error
		switch filepath.Ext(f.Name) {
		case ".cue":
			af, err = parser.ParseFile(f.Name, f.Data, parser.ParseComments)
			if err != nil {
				errs = append(errs, fromCUEList(err, f.Name)...)
				continue
			}
			pkg := af.PackageName()
			if first == "" {
				first = f.Name
				inst.PkgName = pkg
			} else if pkg != inst.PkgName {
				e := &Error{File: f.Name, Msg: fmt.Sprintf("package %q differs from package %q of %s; the CUE files of a config directory form one package", pkg, inst.PkgName, first)}
				for _, d := range af.Decls {
					if pc, ok := d.(*ast.Package); ok && pc.Pos().IsValid() {
						e.Line, e.Column = pc.Pos().Line(), pc.Pos().Column()
					}
				}
				errs = append(errs, e)
				continue
			}
		case ".yaml", ".yml":
			af, err = extractYAML(f.Name, f.Data)
			if err != nil {
				errs = append(errs, yamlProblem(decodeErrors(err, f.Name), f.Data)...)
				continue
			}
		case ".json":
			expr, err := cuejson.Extract(f.Name, f.Data)
			if err != nil {
				errs = append(errs, fromCUEList(err, f.Name)...)
				continue
			}
			af = &ast.File{Filename: f.Name, Decls: []ast.Decl{&ast.EmbedDecl{Expr: expr}}}
		default:
			errs = append(errs, &Error{File: f.Name, Msg: "not a .cue, .yaml or .json file"})
			continue
		}
		if ext := filepath.Ext(f.Name); ext != ".cue" {
			if e := notConfig(af, f.Name); e != nil {
				errs = append(errs, e)
				continue
			}
		}
		nodes += countNodes(af)
		if lim := maxNodes; nodes > lim {
			return cue.Value{}, append(errs, &Error{File: f.Name, Msg: fmt.Sprintf("the config holds more than %d syntax nodes by this file, the limit of a config; raise it with --max-config-nodes", lim)})
		}
		if err := inst.AddSyntax(af); err != nil {
			errs = append(errs, fromCUEList(err, f.Name)...)
		}
	}
	if len(errs) > 0 {
		return cue.Value{}, errs
	}
	return ctx.BuildInstance(inst), nil
}

// notConfig is an error when a YAML or JSON file is plainly not stowage
// config: Kubernetes objects (top-level apiVersion and kind, as rendered
// output or a manifest has) or several documents or a list. Such a file is
// refused by name before unification, whose conflict message would quote
// its values (a rendered Secret's data among them).
func notConfig(af *ast.File, file string) *Error {
	at := func(p token.Pos, msg string) *Error {
		e := &Error{File: file, Msg: msg}
		if p.IsValid() {
			setPos(e, p)
		}
		return e
	}
	decls := af.Decls
	seen := map[string]token.Pos{}
	for i := 0; i < len(decls); i++ {
		switch d := decls[i].(type) {
		case *ast.Field:
			if name, _, err := ast.LabelName(d.Label); err == nil && (name == "apiVersion" || name == "kind") {
				seen[name] = d.Pos()
			}
		case *ast.EmbedDecl:
			switch x := d.Expr.(type) {
			case *ast.ListLit:
				p := x.Pos()
				for _, el := range x.Elts {
					if q := firstPos(el); !p.IsValid() && q.IsValid() {
						p = q
					}
				}
				return at(p, "holds several YAML documents or a list, not stowage config (one mapping of images, environments, profiles); is it rendered output or a manifest? keep those outside the config directory")
			case *ast.StructLit: // a JSON file's one object
				decls = append(decls, x.Elts...)
			}
		}
	}
	if len(seen) == 2 {
		return at(seen["apiVersion"], "holds a Kubernetes object (apiVersion and kind), not stowage config; is it rendered output or a manifest? keep those outside the config directory")
	}
	return nil
}

// firstPos is the first valid position in n (its own, or its first
// field's), or an invalid one.
func firstPos(n ast.Node) token.Pos {
	if p := n.Pos(); p.IsValid() {
		return p
	}
	if st, ok := n.(*ast.StructLit); ok {
		for _, el := range st.Elts {
			if p := el.Pos(); p.IsValid() {
				return p
			}
		}
	}
	return token.NoPos
}

// checkUTF8 is an error at the first byte of f that is not UTF-8, or nil.
func checkUTF8(f File) *Error {
	if utf8.Valid(f.Data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(f.Data); {
		r, size := utf8.DecodeRune(f.Data[i:])
		if r == utf8.RuneError && size <= 1 {
			return &Error{File: f.Name, Line: line, Column: col, Msg: "not valid UTF-8 (a config file must be UTF-8 text)"}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}

// countNodes counts the syntax nodes of f.
func countNodes(f *ast.File) int {
	n := 0
	ast.Walk(f, func(ast.Node) bool { n++; return true }, nil)
	return n
}

// locator turns CUE paths into file positions, looking them up in the user's
// own values so that positions never point into the embedded schema when
// the user's file has the field.
type locator struct {
	user cue.Value
	// config is user unified with #Config: what the schema allows where.
	config cue.Value
	// first is the file named when nothing in the files is closer.
	first string
}

// at returns a located error for path; when path is not in the user's
// files it climbs to the nearest parent that is.
func (l *locator) at(path cue.Path, format string, args ...any) *Error {
	e := &Error{Path: pathString(path), Msg: fmt.Sprintf(format, args...)}
	sels := l.hidden(path.Selectors())
	for n := len(sels); n >= 1; n-- { // the root is every file at once: no place of its own
		v := l.user.LookupPath(cue.MakePath(sels[:n]...))
		if !v.Exists() {
			continue
		}
		if p := userPos(v); p.IsValid() {
			e.File, e.Line, e.Column = p.Filename(), p.Line(), p.Column()
			break
		}
	}
	if e.File == "" {
		e.File = l.first
	}
	return e
}

// hidden replaces each string selector that names a hidden field ("_x",
// as CUE's error paths spell it) by the hidden field's own selector, which
// carries the config's package, so that LookupPath finds it (a structural
// cycle through a hidden field is reported at that field).
func (l *locator) hidden(sels []cue.Selector) []cue.Selector {
	out := slices.Clone(sels)
	for i, sel := range out {
		name, err := strconv.Unquote(sel.String())
		if err != nil {
			name = sel.String()
		}
		if sel.LabelType() != cue.StringLabel || !strings.HasPrefix(name, "_") || strings.HasPrefix(name, "_#") {
			continue
		}
		it, err := l.user.LookupPath(cue.MakePath(out[:i]...)).Fields(cue.Hidden(true))
		if err != nil {
			break
		}
		for it.Next() {
			if it.Selector().String() == name {
				out[i] = it.Selector()
				break
			}
		}
	}
	return out
}

// userPos is the first position of v that is in a user file.
func userPos(v cue.Value) token.Pos {
	if p := v.Pos(); inUserFile(p) {
		return p
	}
	if src := v.Source(); src != nil {
		if p := src.Pos(); inUserFile(p) {
			return p
		}
	}
	_, conjuncts := v.Expr()
	for _, c := range conjuncts {
		if p := c.Pos(); inUserFile(p) {
			return p
		}
	}
	return token.NoPos
}

// inUserFile reports whether p is in a config file: not in the embedded
// schema, and not in a value the loader made itself (those have no file
// name, such as the empty struct the files are unified into).
func inUserFile(p token.Pos) bool {
	return p.IsValid() && p.Filename() != SchemaFile && p.Filename() != ""
}

// fromCUE converts CUE's error list. Each error keeps CUE's own message;
// its path is printed as users read it (profiles.lab.pullers[0].name,
// without the schema's #Config); its position is the first one in a user
// file, never the embedded schema, climbing to the nearest parent the user
// wrote when CUE names none; and the other user positions CUE names (the
// other side of a conflict) are appended as "(see also file:line:col)".
// A conflict between two user files inside an entry of environments,
// images or profiles says that the entry is defined more than once.
func (l *locator) fromCUE(err error) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		p := cuePath(e.Path())
		le := &Error{Path: pathString(p), Msg: fmt.Sprintf(format, args...)}
		positions := userPositions(e)
		conflict := strings.HasPrefix(le.Msg, "conflicting values")
		if isPassword(p) {
			le.Msg = redactPassword(le.Msg)
		}
		if len(positions) >= 2 && conflict {
			le.Msg = definedTwice(p) + le.Msg
		}
		if le.Msg == "field not allowed" {
			le.Msg += l.allowedFields(p)
		}
		le.Msg = l.missingHint(p, le.Msg)
		if len(positions) > 0 {
			setPos(le, positions[0])
		} else {
			at := l.at(p, "%s", le.Msg)
			le.File, le.Line, le.Column = at.File, at.Line, at.Column
		}
		le.Msg += seeAlso(positions)
		out = append(out, le)
	}
	if len(out) == 0 {
		out = append(out, &Error{Msg: err.Error()})
	}
	return mergeDisjunctions(out)
}

// disjunctionHeader is compiled on first use (an error report), not at
// start-up.
var disjunctionHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+ errors in empty disjunction:?$`) })

// mergeDisjunctions replaces CUE's report of a value that matches none of
// the alternatives of a disjunction — a header ("2 errors in empty
// disjunction:") and one conflict per alternative, all at one path — by
// one error at the value: `"Sometimes" is not allowed here; want one of
// "Equal", "Exists"`. Reports it cannot read that way keep the conflicts
// and lose only the header.
func mergeDisjunctions(errs Errors) Errors {
	byPath := map[string][]*Error{}
	for _, e := range errs {
		byPath[e.Path] = append(byPath[e.Path], e)
	}
	var out Errors
	done := map[string]bool{}
	for _, e := range errs {
		group := byPath[e.Path]
		header := slices.IndexFunc(group, func(e *Error) bool { return disjunctionHeader().MatchString(e.Msg) })
		if header < 0 {
			out = append(out, e)
			continue
		}
		if done[e.Path] {
			continue
		}
		done[e.Path] = true
		alts := slices.Delete(slices.Clone(group), header, header+1)
		if merged := mergeConflicts(alts); merged != nil {
			out = append(out, merged)
		} else if len(alts) > 0 {
			out = append(out, alts...)
		} else {
			out = append(out, group[header])
		}
	}
	return out
}

// mergeConflicts reads errs as "conflicting values A and B" with one value
// common to all (the user's) and returns one error naming it and the
// others, or nil.
func mergeConflicts(errs Errors) *Error {
	var pairs [][2]string
	for _, e := range errs {
		a, b, ok := conflictValues(e.Msg)
		if !ok {
			return nil
		}
		pairs = append(pairs, [2]string{a, b})
	}
	if len(pairs) < 2 {
		return nil
	}
	for _, value := range pairs[0] {
		var alts []string
		for _, p := range pairs {
			switch value {
			case p[0]:
				alts = append(alts, p[1])
			case p[1]:
				alts = append(alts, p[0])
			}
		}
		if len(alts) == len(pairs) {
			sort.Strings(alts)
			merged := *errs[0]
			merged.Msg = fmt.Sprintf("%s is not allowed here; want one of %s", value, strings.Join(alts, ", "))
			return &merged
		}
	}
	return nil
}

// conflictValues splits CUE's `conflicting values A and B[ (mismatched
// types …)]` into A and B; quoted values may contain " and ".
func conflictValues(msg string) (a, b string, ok bool) {
	rest, ok := strings.CutPrefix(msg, "conflicting values ")
	if !ok {
		return "", "", false
	}
	if i := strings.LastIndex(rest, " (mismatched types"); i >= 0 {
		rest = rest[:i]
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		a, rest = q, rest[len(q):]
		rest, ok = strings.CutPrefix(rest, " and ")
		return a, rest, ok && rest != ""
	}
	a, b, ok = strings.Cut(rest, " and ")
	return a, b, ok && a != "" && b != ""
}

// allowedFields returns, for a field the closed schema refuses at p, the
// nearest allowed name and the fields allowed beside it:
// `; did you mean "nodeSelector"? (allowed here: auth, image, ...)`.
func (l *locator) allowedFields(p cue.Path) string {
	sels := p.Selectors()
	if len(sels) == 0 || !l.config.Exists() {
		return ""
	}
	parent := l.config.LookupPath(cue.MakePath(sels[:len(sels)-1]...))
	iter, err := parent.Fields(cue.Optional(true))
	if err != nil {
		return ""
	}
	var allowed []string
	for iter.Next() {
		if declared(iter.Value()) {
			allowed = append(allowed, strings.TrimSuffix(iter.Selector().String(), "?"))
		}
	}
	if len(allowed) == 0 {
		return ""
	}
	sort.Strings(allowed)
	return suggest(sels[len(sels)-1].Unquoted(), allowed) + " (allowed here: " + strings.Join(allowed, ", ") + ")"
}

// messageOf is err's message without the path CUE puts in front of it.
func messageOf(err error) string {
	var msgs []string
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		if m := fmt.Sprintf(format, args...); m != "" {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		return err.Error()
	}
	return strings.Join(msgs, "; ")
}

// isPassword reports whether p is a field whose value must never reach an
// error message: an auth.password field, anything inside one, or an auth
// field itself (a password written in place of the auth struct, such as
// auth: "hunter2"), of an environment or a catalogue image.
func isPassword(p cue.Path) bool {
	sels := p.Selectors()
	for i := 2; i < len(sels); i++ {
		if sels[i].String() != "auth" {
			continue
		}
		if owner := sels[i-2].String(); owner != "environments" && owner != "images" {
			continue
		}
		if i == len(sels)-1 || sels[i+1].String() == "password" {
			return true
		}
	}
	return false
}

// redactPassword replaces CUE's message about a password field (or an
// auth field that is not a struct), which quotes the values, by one that
// does not.
func redactPassword(msg string) string {
	if strings.HasPrefix(msg, "conflicting values") && !strings.Contains(msg, "mismatched types") {
		return "conflicting values (not shown: this is a password field)"
	}
	return `invalid value (not shown: it may be a password); auth is {secret: NAME} or {username: USER, password: SOURCE}, and a password source is "env:VARIABLE" or "file:path"`
}

// declared reports whether the schema contributes to v: whether v's field
// is one the schema declares rather than one only a user file has.
func declared(v cue.Value) bool {
	if p := v.Pos(); p.IsValid() && p.Filename() == SchemaFile {
		return true
	}
	_, conjuncts := v.Expr()
	for _, c := range conjuncts {
		if p := c.Pos(); p.IsValid() && p.Filename() == SchemaFile {
			return true
		}
	}
	return false
}

// fromCUEList converts errors that are not tied to a unified value (syntax
// errors); file is used when CUE gives no position.
func fromCUEList(err error, file string) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		le := &Error{Path: pathString(cuePath(e.Path())), Msg: fmt.Sprintf(format, args...), File: file}
		if le.Msg == "" {
			// A plain error wrapped by CUE, such as the YAML decoder's
			// "file:line: message".
			le.Msg = e.Error()
			if rest, ok := strings.CutPrefix(le.Msg, file+":"); ok && file != "" {
				if line, msg, ok := strings.Cut(rest, ": "); ok {
					if n, err := strconv.Atoi(line); err == nil {
						le.Line, le.Msg = n, msg
					}
				}
			}
		}
		positions := userPositions(e)
		if len(positions) > 0 {
			setPos(le, positions[0])
		}
		le.Msg += seeAlso(positions)
		out = append(out, le)
	}
	if len(out) == 0 {
		out = append(out, &Error{File: file, Msg: err.Error()})
	}
	return out
}

// userPositions returns the positions of e that are in user files: its
// own position first when it is one, then the others sorted by file, line
// and column, without repeats.
func userPositions(e cueerrors.Error) []token.Pos {
	user := inUserFile
	var first []token.Pos
	if user(e.Position()) {
		first = append(first, e.Position())
	}
	var rest []token.Pos
	for _, p := range e.InputPositions() {
		if user(p) {
			rest = append(rest, p)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return posLess(rest[i], rest[j]) })
	var out []token.Pos
	seen := map[string]bool{}
	for _, p := range append(first, rest...) {
		if k := posString(p); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

func posLess(a, b token.Pos) bool {
	if a.Filename() != b.Filename() {
		return a.Filename() < b.Filename()
	}
	if a.Line() != b.Line() {
		return a.Line() < b.Line()
	}
	return a.Column() < b.Column()
}

func posString(p token.Pos) string {
	return fmt.Sprintf("%s:%d:%d", p.Filename(), p.Line(), p.Column())
}

func setPos(e *Error, p token.Pos) {
	e.File, e.Line, e.Column = p.Filename(), p.Line(), p.Column()
}

// seeAlso lists the positions after the first: " (see also a:1:2, b:3:4)".
func seeAlso(positions []token.Pos) string {
	if len(positions) < 2 {
		return ""
	}
	var ss []string
	for _, p := range positions[1:] {
		ss = append(ss, posString(p))
	}
	return " (see also " + strings.Join(ss, ", ") + ")"
}

// definedTwice prefixes a conflict inside a named entry, e.g.
// `environment "jupyter" is defined more than once, with different values
// for image: `; "" when p is not inside one.
func definedTwice(p cue.Path) string {
	sels := p.Selectors()
	nouns := map[string]string{"environments": "environment", "images": "image", "profiles": "profile"}
	if len(sels) < 2 || nouns[sels[0].String()] == "" {
		return ""
	}
	msg := fmt.Sprintf("%s %q is defined more than once", nouns[sels[0].String()], sels[1].Unquoted())
	if len(sels) > 2 {
		msg += ", with different values for " + pathString(cue.MakePath(sels[2:]...))
	}
	return msg + ": "
}

// cuePath turns the path elements of a CUE error into a path relative to
// the config: a leading #Config is dropped, list indexes ("0") become index
// selectors and quoted labels ("\"jupyter-gpu\"") are unquoted.
func cuePath(elems []string) cue.Path {
	var sels []cue.Selector
	for i, e := range elems {
		switch {
		case i == 0 && e == "#Config":
		case e != "" && strings.Trim(e, "0123456789") == "":
			n, _ := strconv.Atoi(e)
			sels = append(sels, cue.Index(n))
		case strings.HasPrefix(e, `"`):
			if u, err := strconv.Unquote(e); err == nil {
				e = u
			}
			sels = append(sels, cue.Str(e))
		case strings.HasPrefix(e, "#"):
			sels = append(sels, cue.Def(e))
		default:
			sels = append(sels, cue.Str(e))
		}
	}
	return cue.MakePath(sels...)
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
