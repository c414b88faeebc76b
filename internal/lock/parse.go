package lock

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/yamlpos"
)

// Read reads and parses the lock file at path (see Parse). The file is read
// through internal/confined: inside path's directory after every symbolic
// link, a regular file of at most confined.Lock.Max bytes; a refusal never
// quotes the file. A missing file gives an error wrapping fs.ErrNotExist.
func Read(path string) (*Lock, error) {
	data, err := ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// ReadBytes is the read of Read without the parse.
func ReadBytes(path string) ([]byte, error) {
	return confined.ReadFile(filepath.Dir(path), filepath.Base(path), confined.Lock)
}

// Parse decodes the bytes of a lock file; filename is only used in errors.
// It is strict: the file holds exactly one ImageLock object of APIVersion,
// decoded by yaml.v3 with known fields only (unknown and repeated fields,
// values of the wrong type are errors), every entry must pass
// Validate, and two entries may not share a name. All problems are
// reported at once, as *Error values joined with errors.Join, each naming the
// file, line, entry index and name, and field. The returned lock has its
// entries sorted by name and their platforms sorted by platform.
func Parse(data []byte, filename string) (*Lock, error) {
	l, _, errs, err := parse(data, filename)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// ParseRepair is Parse for `stowage lock`, which may replace the entries
// that do not validate instead of refusing the whole file: when every
// problem lies inside entries of spec.images, it returns the lock of the
// valid entries and the problems of the dropped ones (*Error values, for
// a warning). Any other problem is an error, as in Parse.
func ParseRepair(data []byte, filename string) (*Lock, []error, error) {
	_, images, errs, err := parse(data, filename)
	if err != nil {
		return nil, nil, err
	}
	bad := map[int]bool{}
	for _, e := range errs {
		le, ok := e.(*Error)
		if !ok || le.Index < 0 {
			return nil, nil, errors.Join(errs...)
		}
		bad[le.Index] = true
	}
	l := &Lock{}
	for i, e := range images {
		if !bad[i] {
			l.Put(e)
		}
	}
	return l, errs, nil
}

// parse is Parse's work: the lock of every entry, the entries in file
// order, the problems found (all *Error), or a fatal error that stops the
// parse (not YAML, not one document).
func parse(data []byte, filename string) (*Lock, []Entry, []error, error) {
	var doc, extra yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("empty file; want an %s object", ObjectKind)
		} else {
			err = atFault(err, data)
		}
		return nil, nil, nil, &Error{File: filename, Index: -1, Err: err}
	}
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, nil, nil, &Error{File: filename, Index: -1, Err: err}
	default:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, nil, nil, &Error{File: filename, Line: line, Index: -1, Err: errors.New("more than one YAML document; a lock file holds one")}
	}

	p := &parser{file: filename, lines: map[string]int{}, paths: map[int]string{}, strs: map[string]string{}, bad: map[string]bool{}}
	p.walk(&doc, "")
	if errs := p.otherObject(data); errs != nil {
		return nil, nil, errs, nil
	}
	var f file
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&f); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, nil, nil, &Error{File: filename, Index: -1, Err: err}
		}
		for _, msg := range te.Errors {
			p.yamlError(msg)
		}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		// A null document (~, ---, !!null) or a scalar or list: not a lock,
		// and never an empty one, which would leave every image unpinned.
		line := doc.Line
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return nil, nil, []error{&Error{File: filename, Line: line, Index: -1,
			Err: fmt.Errorf("not an %s object: a lock file holds one YAML mapping (apiVersion, kind, spec)", ObjectKind)}}, nil
	}
	for _, c := range []struct{ path, got, want string }{
		{"apiVersion", f.APIVersion, APIVersion}, {"kind", f.Kind, ObjectKind}, {"spec", "-", "-"},
	} {
		switch _, set := p.lines[c.path]; {
		case !set:
			p.fail(c.path, errors.New("required field missing"))
		case c.got != c.want && !p.bad[c.path]:
			p.fail(c.path, fmt.Errorf("got %q, want %q", c.got, c.want))
		}
	}
	l := &Lock{}
	first := map[string]int{} // name -> index of its first entry
	for i, e := range f.Spec.Images {
		at := fmt.Sprintf("spec.images[%d]", i)
		if p.covered(at) {
			continue
		}
		for _, pr := range problems(e) {
			if !p.covered(at + "." + pr.field) {
				p.fail(at+"."+pr.field, pr.err)
			}
		}
		if j, dup := first[e.Name]; dup && e.Name != "" {
			p.fail(at+".name", fmt.Errorf("duplicate name, first used by spec.images[%d] on line %d", j, p.lineOf(fmt.Sprintf("spec.images[%d]", j))))
		} else {
			first[e.Name] = i
		}
		l.Put(e)
	}
	for _, err := range p.errs {
		if e := err.(*Error); e.Index >= 0 {
			at := fmt.Sprintf("spec.images[%d]", e.Index)
			e.Image = cmp.Or(p.strs[at+".name"], p.strs[at+".reference"])
		}
	}
	return l, f.Spec.Images, p.errs, nil
}

// parser turns paths ("spec.images[0].digest") into file lines and errors.
type parser struct {
	file  string
	errs  []error
	lines map[string]int    // path -> line of its key or list item
	paths map[int]string    // line -> deepest path on it
	strs  map[string]string // path -> its string value, as first written
	bad   map[string]bool   // paths yaml.v3 could not decode
}

// walk records the line of every key, list item and value under n.
func (p *parser) walk(n *yaml.Node, path string) {
	p.mark(n, path)
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			p.walk(c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			child := n.Content[i].Value
			if path != "" {
				child = path + "." + child
			}
			p.mark(n.Content[i], child)
			p.walk(n.Content[i+1], child)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p.walk(c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.ScalarNode:
		if _, ok := p.strs[path]; !ok && n.Tag == "!!str" {
			p.strs[path] = n.Value
		}
	}
}

// mark records the line of the node at path.
func (p *parser) mark(n *yaml.Node, path string) {
	if _, ok := p.lines[path]; !ok {
		p.lines[path] = n.Line
	}
	p.paths[n.Line] = path
}

// yamlError records one of yaml.v3's "line N: message" decoding errors at
// the deepest path on line N.
func (p *parser) yamlError(msg string) {
	num, text, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		p.errs = append(p.errs, &Error{File: p.file, Index: -1, Err: errors.New(msg)})
		return
	}
	path := p.paths[n]
	p.bad[path] = true
	p.errs = append(p.errs, p.at(path, n, errors.New(goTypes.Replace(unquote(text)))))
}

// goTypes gives yaml.v3's messages, which name the Go type a value did not
// decode into, the names the lock's types had before they moved to
// api/v1alpha1, which the messages users read keep.
var goTypes = strings.NewReplacer(
	"v1alpha1.ImageLockEntry", "lock.Entry",
	"v1alpha1.ImageLockPlatform", "lock.Platform",
	"v1alpha1.DigestKind", "lock.Kind",
	"v1alpha1.ImageLockSpec", "lock.spec",
	"v1alpha1.ObjectMeta", "lock.metadata",
	"v1alpha1.ImageLock", "lock.file",
)

// fail records err at path, on the line of path or of its closest parent.
// otherObject returns the apiVersion and kind problems alone when data is
// a mapping that names another kind of object (a Deployment given as the
// lock): its other fields would only bury the one message that matters.
// It returns nil for anything else, which the full parse then reports.
func (p *parser) otherObject(data []byte) []error {
	var h struct {
		APIVersion any `yaml:"apiVersion"`
		Kind       any `yaml:"kind"`
	}
	if yaml.Unmarshal(data, &h) != nil {
		return nil
	}
	other := func(v any, want string) bool { s, ok := v.(string); return ok && s != "" && s != want }
	if !other(h.APIVersion, APIVersion) && !other(h.Kind, ObjectKind) {
		return nil
	}
	for _, c := range []struct {
		path string
		got  any
		want string
	}{{"apiVersion", h.APIVersion, APIVersion}, {"kind", h.Kind, ObjectKind}} {
		if other(c.got, c.want) {
			p.fail(c.path, fmt.Errorf("got %q, want %q", c.got, c.want))
		}
	}
	return p.errs
}

func (p *parser) fail(path string, err error) {
	p.errs = append(p.errs, p.at(path, p.lineOf(path), err))
}

// at is the *Error for path: entries' fields relative to their entry.
func (p *parser) at(path string, line int, err error) *Error {
	e := &Error{File: p.file, Line: line, Index: -1, Field: path, Err: err}
	if rest, ok := strings.CutPrefix(path, "spec.images["); ok {
		num, field, _ := strings.Cut(rest, "]")
		e.Index, _ = strconv.Atoi(num)
		e.Field = strings.TrimPrefix(field, ".")
	}
	return e
}

// lineOf is the line of path, else of its closest parent.
func (p *parser) lineOf(path string) int {
	for {
		if l, ok := p.lines[path]; ok || path == "" {
			return l
		}
		path = parent(path)
	}
}

// covered reports whether path or a parent failed to decode.
func (p *parser) covered(path string) bool {
	for ; path != ""; path = parent(path) {
		if p.bad[path] {
			return true
		}
	}
	return false
}

// parent strips the last ".field" or "[i]" of path.
func parent(path string) string {
	return path[:max(strings.LastIndexAny(path, ".["), 0)]
}

// unquote drops the excerpt of the offending value that yaml.v3 puts
// between backquotes in a type error ("cannot unmarshal !!str `abc` into
// int64"): a lock may be a link to a file that must not be quoted, so
// messages name the value's type and place, never its text.
func unquote(msg string) string {
	before, rest, ok := strings.Cut(msg, "`")
	if !ok {
		return msg
	}
	_, after, ok := strings.Cut(rest, "`")
	if !ok {
		return before + "(value not shown)"
	}
	return before + "(value not shown)" + after
}

// atFault moves a yaml.v3 syntax error ("yaml: line N: PROBLEM", N the
// line where the enclosing block starts) to the line of the token at fault
// (yamlpos.Line), when that is later; the problem's words stay yaml.v3's.
func atFault(err error, data []byte) error {
	if strings.HasSuffix(err.Error(), yamlpos.ControlProblem) {
		if line, col, r, ok := yamlpos.Control(data); ok {
			return fmt.Errorf("yaml: line %d: column %d: %U is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)", line, col, r)
		}
	}
	rest, ok := strings.CutPrefix(err.Error(), "yaml: line ")
	if !ok {
		return err
	}
	num, problem, ok := strings.Cut(rest, ": ")
	n, convErr := strconv.Atoi(num)
	if !ok || convErr != nil {
		return err
	}
	if line, ok := yamlpos.Line(data); ok && line > n {
		return fmt.Errorf("yaml: line %d: %s", line, problem)
	}
	return err
}
