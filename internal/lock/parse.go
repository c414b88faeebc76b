package lock

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/strictyaml"
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

// ReadBytesIn reads the lock file rel, a path inside the directory root,
// through an os.Root on root (confined.ReadFile): a ".." or a symbolic
// link leading out of root is refused, as is a file that is not regular
// or over confined.Lock.Max bytes. Errors name the file as shown.
func ReadBytesIn(root, rel, shown string) ([]byte, error) {
	data, err := confined.ReadFile(root, rel, confined.Lock)
	var ce *confined.Error
	if errors.As(err, &ce) && shown != "" {
		ce.Path = shown
	}
	return data, err
}

// Parse decodes the bytes of a lock file; filename is only used in errors.
// It is strict: the file holds exactly one ImageLock object of APIVersion,
// decoded by internal/strictyaml (unknown and repeated fields, values of
// the wrong type are errors; nesting and aliases are bounded), every entry must pass
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

// ParseObject is Parse returning the whole object: apiVersion, kind and
// metadata as the file writes them, and the entries of the parsed lock
// (sorted by name, their platforms sorted by platform). Errors are Parse's.
func ParseObject(data []byte, filename string) (*v1alpha1.ImageLock, error) {
	l, f, errs, err := parse(data, filename)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &v1alpha1.ImageLock{APIVersion: f.APIVersion, Kind: f.Kind, Metadata: f.Metadata, Spec: v1alpha1.ImageLockSpec{Images: l.Entries}}, nil
}

// ParseRepair is Parse for `stowage lock`, which may replace the entries
// that do not validate instead of refusing the whole file: when every
// problem lies inside entries of spec.images, it returns the lock of the
// valid entries and the problems of the dropped ones (*Error values, for
// a warning). Any other problem is an error, as in Parse.
func ParseRepair(data []byte, filename string) (*Lock, []error, error) {
	_, f, errs, err := parse(data, filename)
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
	kept := make([]Entry, 0, len(f.Spec.Images))
	for i, e := range f.Spec.Images {
		if !bad[i] {
			kept = append(kept, e)
		}
	}
	return New(kept), errs, nil
}

// parse is Parse's work: the lock of every entry, the object as decoded
// (its entries in file order; nil when the problems found are another
// object's apiVersion and kind), the problems found (all *Error), or a
// fatal error that stops the parse (not YAML, not one document).
func parse(data []byte, filename string) (*Lock, *file, []error, error) {
	doc, err := strictyaml.Parse(data, filename)
	if err != nil {
		return nil, nil, nil, parseError(err, filename)
	}
	return parseDoc(doc, filename, nil)
}

// parseError is the *Error of strictyaml.Parse's error, worded for a
// lock.
func parseError(err error, filename string) *Error {
	e := &Error{File: filename, Index: -1, Err: err}
	var se *strictyaml.Error
	if errors.As(err, &se) {
		e.Line, e.Column, e.Err = se.Line, se.Column, se.Err
	}
	switch {
	case errors.Is(err, strictyaml.ErrEmpty):
		e.Err = fmt.Errorf("empty file; want an %s object", ObjectKind)
	case errors.Is(err, strictyaml.ErrDocuments):
		e.Err = errors.New("more than one YAML document; a lock file holds one")
	}
	return e
}

// ParseNode is Parse of a lock object already parsed by yaml.v3 (kyaml's
// RNode.YNode() of an ImageLock item, a document or a mapping node), so
// that a caller holding the tree does not write and re-read it. The node
// is only read. line maps the node's lines to the lines errors report
// (for an item of a KRM ResourceList: its line in the file); nil keeps
// them. Errors are Parse's.
func ParseNode(n *yaml.Node, filename string, line func(int) int) (*Lock, error) {
	if n == nil {
		return nil, &Error{File: filename, Index: -1, Err: fmt.Errorf("empty file; want an %s object", ObjectKind)}
	}
	doc := n
	if n.Kind != yaml.DocumentNode {
		doc = &yaml.Node{Kind: yaml.DocumentNode, Line: n.Line, Column: n.Column, Content: []*yaml.Node{n}}
	}
	l, _, errs, err := parseDoc(doc, filename, line)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// parseDoc is parse after the YAML parse: doc is the one document.
func parseDoc(doc *yaml.Node, filename string, line func(int) int) (*Lock, *file, []error, error) {
	p := &parser{file: filename, doc: doc, line: line}
	if errs := p.otherObject(); errs != nil {
		return nil, nil, errs, nil
	}
	var f file
	if err := p.decode(&f); err != nil {
		return nil, nil, nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		// A null document (~, ---, !!null) or a scalar or list: not a lock,
		// and never an empty one, which would leave every image unpinned.
		line := doc.Line
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return nil, nil, []error{p.at("", line, fmt.Errorf("not an %s object: a lock file holds one YAML mapping (apiVersion, kind, spec)", ObjectKind))}, nil
	}
	top := map[string]bool{}
	for _, k := range keys(doc.Content[0]) {
		top[k.Value] = true
	}
	for _, c := range []struct{ path, got, want string }{
		{"apiVersion", f.APIVersion, APIVersion}, {"kind", f.Kind, ObjectKind}, {"spec", "-", "-"},
	} {
		switch {
		case !top[c.path]:
			p.fail(c.path, errors.New("required field missing"))
		case c.got != c.want && !p.bad[c.path]:
			p.fail(c.path, fmt.Errorf("got %q, want %q", c.got, c.want))
		}
	}
	first := make(map[string]int, len(f.Spec.Images)) // name -> index of its first entry
	put := make([]Entry, 0, len(f.Spec.Images))       // the entries of the lock, in file order
	for i, e := range f.Spec.Images {
		at := ""
		if p.bad != nil {
			if at = fmt.Sprintf("spec.images[%d]", i); p.covered(at) {
				continue
			}
		}
		for _, pr := range problems(e) {
			if at == "" {
				at = fmt.Sprintf("spec.images[%d]", i)
			}
			if !p.covered(at + "." + pr.field) {
				p.fail(at+"."+pr.field, pr.err)
			}
		}
		if j, dup := first[e.Name]; dup && e.Name != "" {
			if at == "" {
				at = fmt.Sprintf("spec.images[%d]", i)
			}
			p.fail(at+".name", fmt.Errorf("duplicate name, first used by spec.images[%d] on line %d", j, p.mapLine(p.lineOf(fmt.Sprintf("spec.images[%d]", j)))))
		} else {
			first[e.Name] = i
		}
		put = append(put, e)
	}
	l := New(put)
	if len(p.errs) > 0 {
		p.index()
	}
	for _, err := range p.errs {
		if e := err.(*Error); e.Index >= 0 {
			at := fmt.Sprintf("spec.images[%d]", e.Index)
			e.Image = cmp.Or(p.strs[at+".name"], p.strs[at+".reference"])
		}
	}
	return l, &f, p.errs, nil
}

// keys returns the key nodes of the mapping m.
func keys(m *yaml.Node) []*yaml.Node {
	ks := make([]*yaml.Node, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		ks = append(ks, m.Content[i])
	}
	return ks
}

// decode decodes the document into f with strictyaml (known fields
// only, each key once, values of the right type, bounded). Each problem is
// recorded at its path, which is then not checked further; a bound passed
// is returned as the one error of the parse.
func (p *parser) decode(f *file) error {
	err := strictyaml.Decode(p.doc, f, strictyaml.Options{File: p.file})
	var errs strictyaml.Errors
	if !errors.As(err, &errs) {
		return err
	}
	for _, e := range errs {
		if errors.Is(e, strictyaml.ErrLimit) {
			return &Error{File: p.file, Line: p.mapLine(e.Line), Index: -1, Field: e.Path, Err: e.Err}
		}
	}
	for _, e := range errs {
		if p.bad == nil {
			p.bad = map[string]bool{}
		}
		p.bad[e.Path] = true
		p.errs = append(p.errs, p.at(e.Path, e.Line, e.Err))
	}
	return nil
}

// parser turns paths ("spec.images[0].digest") into file lines and errors.
// The maps of paths are built by index at the first problem: a lock that
// parses cleanly never needs them.
type parser struct {
	file  string
	doc   *yaml.Node
	line  func(int) int // the node's line to the reported one; nil: the same
	errs  []error
	lines map[string]int    // path -> line of its key or list item
	strs  map[string]string // path -> its string value, as first written
	bad   map[string]bool   // paths that did not decode
}

// index builds the maps of paths from the tree, once.
func (p *parser) index() {
	if p.lines != nil {
		return
	}
	p.lines, p.strs = map[string]int{}, map[string]string{}
	p.walk(p.doc, "", 0)
}

// mapLine is the reported line of the node line n.
func (p *parser) mapLine(n int) int {
	if p.line == nil || n <= 0 {
		return n
	}
	return p.line(n)
}

// walk records the line of every key and list item under n, and the
// string values, down to walkDepth: deeper lies outside the lock's types,
// whose problems are reported at their own lines.
func (p *parser) walk(n *yaml.Node, path string, depth int) {
	if depth > walkDepth {
		return
	}
	p.mark(n, path)
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			p.walk(c, path, depth)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			child := k.Value
			if path != "" {
				child = path + "." + child
			}
			p.mark(k, child)
			p.walk(n.Content[i+1], child, depth+1)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p.walk(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	case yaml.ScalarNode:
		if _, ok := p.strs[path]; !ok && n.ShortTag() == "!!str" {
			p.strs[path] = n.Value
		}
	}
}

// walkDepth is the deepest walk goes: the lock's deepest field,
// spec.images[i].platforms[j].digest, is at 6.
const walkDepth = 8

// mark records the line of the node at path.
func (p *parser) mark(n *yaml.Node, path string) {
	if _, ok := p.lines[path]; !ok {
		p.lines[path] = n.Line
	}
}

// otherObject returns the apiVersion and kind problems alone when the
// document is a mapping that names another kind of object (a Deployment
// given as the lock): its other fields would only bury the one message
// that matters. It returns nil for anything else, which the full parse
// then reports.
func (p *parser) otherObject() []error {
	if len(p.doc.Content) == 0 || p.doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	top := p.doc.Content[0]
	got := map[string]string{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if (k.Value == "apiVersion" || k.Value == "kind") && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
			if _, seen := got[k.Value]; !seen {
				got[k.Value] = v.Value
			}
		}
	}
	other := func(s, want string) bool { return s != "" && s != want }
	if !other(got["apiVersion"], APIVersion) && !other(got["kind"], ObjectKind) {
		return nil
	}
	for _, c := range []struct{ path, want string }{{"apiVersion", APIVersion}, {"kind", ObjectKind}} {
		if other(got[c.path], c.want) {
			p.fail(c.path, fmt.Errorf("got %q, want %q", got[c.path], c.want))
		}
	}
	return p.errs
}

// fail records err at path, on the line of path or of its closest parent.
func (p *parser) fail(path string, err error) {
	p.errs = append(p.errs, p.at(path, p.lineOf(path), err))
}

// at is the *Error for path: entries' fields relative to their entry.
func (p *parser) at(path string, line int, err error) *Error {
	e := &Error{File: p.file, Line: p.mapLine(line), Index: -1, Field: path, Err: err}
	if rest, ok := strings.CutPrefix(path, "spec.images["); ok {
		num, field, _ := strings.Cut(rest, "]")
		e.Index, _ = strconv.Atoi(num)
		e.Field = strings.TrimPrefix(field, ".")
	}
	return e
}

// lineOf is the line of path, else of its closest parent.
func (p *parser) lineOf(path string) int {
	p.index()
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
