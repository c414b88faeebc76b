package lock

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/spelling"
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
	var doc, extra yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil, &Error{File: filename, Index: -1, Err: fmt.Errorf("empty file; want an %s object", ObjectKind)}
		}
		return nil, nil, nil, syntaxError(err, data, filename)
	}
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, nil, nil, syntaxError(err, data, filename)
	default:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, nil, nil, &Error{File: filename, Line: line, Index: -1, Err: errors.New("more than one YAML document; a lock file holds one")}
	}
	return parseDoc(&doc, data, filename, nil)
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
	l, _, errs, err := parseDoc(doc, nil, filename, line)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// parseDoc is parse after the YAML parse: doc is the one document, data
// its bytes (nil when the caller holds only the tree).
func parseDoc(doc *yaml.Node, data []byte, filename string, line func(int) int) (*Lock, *file, []error, error) {
	p := &parser{file: filename, doc: doc, line: line}
	if errs := p.otherObject(); errs != nil {
		return nil, nil, errs, nil
	}
	var f file
	if err := p.decode(&f, data); err != nil {
		return nil, nil, nil, &Error{File: filename, Index: -1, Err: err}
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

// decode decodes the document into f as a yaml.v3 Decoder with
// KnownFields(true) does, from the tree already parsed: yaml.v3's own
// decoding of the node, and the fields no Go field takes reported with
// yaml.v3's words ("line N: field X not found in type T") in document
// order among its other errors. A tree with aliases or merge keys, where
// that check would have to follow yaml.v3's resolution, is decoded from
// data with a strict Decoder instead (data is written from the tree when
// the caller gave none). Type errors are recorded with p.yamlError; any
// other error is returned.
func (p *parser) decode(f *file, data []byte) error {
	var unknown []string
	if !unknownFields(p.doc, reflect.TypeOf(f).Elem(), &unknown) {
		if data == nil {
			var err error
			if data, err = yaml.Marshal(p.doc); err != nil {
				return err
			}
		}
		strict := yaml.NewDecoder(bytes.NewReader(data))
		strict.KnownFields(true)
		return p.typeErrors(strict.Decode(f))
	}
	var msgs []string
	if err := p.doc.Decode(f); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return err
		}
		msgs = te.Errors
	}
	if len(unknown) > 0 {
		// Both lists are in document order; merge them by line, yaml.v3's
		// first on a tie.
		merged := make([]string, 0, len(msgs)+len(unknown))
		for len(msgs) > 0 || len(unknown) > 0 {
			if len(unknown) == 0 || (len(msgs) > 0 && msgLine(msgs[0]) <= msgLine(unknown[0])) {
				merged, msgs = append(merged, msgs[0]), msgs[1:]
			} else {
				merged, unknown = append(merged, unknown[0]), unknown[1:]
			}
		}
		msgs = merged
	}
	for _, msg := range msgs {
		p.yamlError(msg)
	}
	return nil
}

// typeErrors records the messages of a *yaml.TypeError and returns any
// other error.
func (p *parser) typeErrors(err error) error {
	if err == nil {
		return nil
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	for _, msg := range te.Errors {
		p.yamlError(msg)
	}
	return nil
}

// msgLine is N of yaml.v3's "line N: ..." message, 0 without one.
func msgLine(msg string) int {
	num, _, _ := strings.Cut(strings.TrimPrefix(msg, "line "), ":")
	n, _ := strconv.Atoi(num)
	return n
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// unknownFields appends to out, in document order, yaml.v3's message for
// every mapping key under n that the struct type t decoded from it has no
// field for (yaml.v3's KnownFields check, which Node.Decode lacks). It
// descends as yaml.v3 decodes: struct fields by their yaml names, slice
// and array elements, map values, pointers; a node of another kind than
// the type takes is yaml.v3's type error and not descended. It returns
// false, having stopped, at an alias or merge key.
func unknownFields(n *yaml.Node, t reflect.Type, out *[]string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return true
	}
	switch n.Kind {
	case yaml.AliasNode:
		return false
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if !unknownFields(c, t, out) {
				return false
			}
		}
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return true
		}
		for _, c := range n.Content {
			if !unknownFields(c, t.Elem(), out) {
				return false
			}
		}
	case yaml.MappingNode:
		switch t.Kind() {
		case reflect.Map:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Tag == "!!merge" || !unknownFields(n.Content[i+1], t.Elem(), out) {
					return false
				}
			}
		case reflect.Struct:
			fields, ok := yamlFields(t)
			if !ok {
				return false
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Tag == "!!merge" || k.Kind != yaml.ScalarNode {
					return false
				}
				ft, ok := fields[k.Value]
				if !ok {
					*out = append(*out, fmt.Sprintf("line %d: field %s not found in type %s", k.Line, k.Value, t))
					continue
				}
				if !unknownFields(n.Content[i+1], ft, out) {
					return false
				}
			}
		}
	}
	return true
}

// yamlFields maps the yaml key of every exported field of the struct t
// (its yaml tag's name, else the field name lowercased, as yaml.v3 names
// it) to the field's type, inline structs' fields included; ok is false
// for a struct with an inline map, which takes every key. Cached per type.
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, ok bool) {
	if c, hit := fieldCache.Load(t); hit {
		m := c.(map[string]reflect.Type)
		return m, m != nil
	}
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			if sf.Type.Kind() != reflect.Struct {
				m = nil
				break
			}
			inner, ok := yamlFields(sf.Type)
			if !ok {
				m = nil
				break
			}
			maps.Copy(m, inner)
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		m[name] = sf.Type
	}
	fieldCache.Store(t, m)
	return m, m != nil
}

// fieldCache holds yamlFields' answer per reflect.Type.
var fieldCache sync.Map

// parser turns paths ("spec.images[0].digest") into file lines and errors.
// The maps of paths are built by index at the first problem: a lock that
// parses cleanly never needs them.
type parser struct {
	file  string
	doc   *yaml.Node
	line  func(int) int // the node's line to the reported one; nil: the same
	errs  []error
	lines map[string]int    // path -> line of its key or list item
	paths map[int]string    // line -> deepest path on it
	spots map[int][]spot    // line -> the keys and values on it, in document order
	strs  map[string]string // path -> its string value, as first written
	bad   map[string]bool   // paths yaml.v3 could not decode
}

// spot is a key or a value of the document, for finding the path a
// yaml.v3 message ("line N: ...") is about among the nodes on line N.
type spot struct {
	path string
	node *yaml.Node
	key  bool
	// typ is the type the value decodes into, or for a key the struct
	// type holding it; nil where the document leaves the lock's types.
	typ reflect.Type
}

// fileType is the Go type the whole document decodes into.
var fileType = reflect.TypeFor[file]()

// index builds the maps of paths from the tree, once.
func (p *parser) index() {
	if p.lines != nil {
		return
	}
	p.lines, p.paths, p.spots, p.strs = map[string]int{}, map[int]string{}, map[int][]spot{}, map[string]string{}
	p.walk(p.doc, "", fileType)
}

// mapLine is the reported line of the node line n.
func (p *parser) mapLine(n int) int {
	if p.line == nil || n <= 0 {
		return n
	}
	return p.line(n)
}

// walk records the line of every key, list item and value under n, and
// the type t (nil: unknown) each decodes into.
func (p *parser) walk(n *yaml.Node, path string, t reflect.Type) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p.mark(n, path)
	p.spots[n.Line] = append(p.spots[n.Line], spot{path: path, node: n, typ: t})
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			p.walk(c, path, t)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			child := k.Value
			if path != "" {
				child = path + "." + child
			}
			var ct reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Map:
				ct = t.Elem()
			case t.Kind() == reflect.Struct:
				fields, _ := yamlFields(t)
				ct = fields[k.Value]
			}
			p.mark(k, child)
			p.spots[k.Line] = append(p.spots[k.Line], spot{path: child, node: k, key: true, typ: t})
			p.walk(n.Content[i+1], child, ct)
		}
	case yaml.SequenceNode:
		var ct reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			ct = t.Elem()
		}
		for i, c := range n.Content {
			p.walk(c, fmt.Sprintf("%s[%d]", path, i), ct)
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
// the path it is about on line N, in stowage's words (typeError).
func (p *parser) yamlError(msg string) {
	num, text, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		p.errs = append(p.errs, &Error{File: p.file, Index: -1, Err: errors.New(typeError(msg).text)})
		return
	}
	p.index()
	te := typeError(text)
	path := p.find(n, te)
	if p.bad == nil {
		p.bad = map[string]bool{}
	}
	p.bad[path] = true
	p.errs = append(p.errs, p.at(path, n, errors.New(te.text)))
}

// find is the path on line n that the yaml.v3 error te is about: the key
// of an unknown or repeated field, the value of the wrong type (by its tag
// and the type it was to decode into); else, and for other messages, the
// deepest path on the line.
func (p *parser) find(n int, te yamlMessage) string {
	if te.key == "" && te.tag == "" {
		return p.paths[n]
	}
	for _, strict := range []bool{true, false} {
		for _, s := range p.spots[n] {
			var match bool
			if te.key != "" {
				match = s.key && s.node.Value == te.key
			} else {
				match = !s.key && s.node.ShortTag() == te.tag
			}
			if match && (!strict || te.goType == "" || (s.typ != nil && s.typ.String() == te.goType)) {
				return s.path
			}
		}
	}
	return p.paths[n]
}

// yamlMessage is a yaml.v3 decoding error reworded: text is what the user
// reads, never naming a Go type; key, tag and goType say what it is about
// (see find).
type yamlMessage struct {
	text   string
	key    string // the field of "field X not found" or "mapping key X already defined"
	tag    string // the YAML tag of the value of "cannot unmarshal"
	goType string // the Go type yaml.v3 named
}

// typeError rewords the text of one of yaml.v3's decoding errors ("field
// X not found in type T", "cannot unmarshal !!TAG `value` into T", "field
// X already set in type T", "mapping key X already defined at line M") in
// the words stowage's schema uses for the config: an unknown field is "field
// not allowed (allowed here: …)" with the nearest name suggested, a value
// of the wrong type says what it is and what is expected there ("a string
// where an integer is expected"). No Go type name and no excerpt of the
// value is kept (the lock may be a link to a file that must not be
// quoted). Other messages keep yaml.v3's words, an excerpt dropped.
func typeError(text string) yamlMessage {
	if rest, ok := strings.CutPrefix(text, "field "); ok {
		if name, goType, ok := strings.Cut(rest, " not found in type "); ok {
			return yamlMessage{text: "field not allowed" + allowedHere(name, lockTypes()[goType]), key: name, goType: goType}
		}
		if name, goType, ok := strings.Cut(rest, " already set in type "); ok {
			return yamlMessage{text: "field set more than once", key: name, goType: goType}
		}
	}
	if rest, ok := strings.CutPrefix(text, "cannot unmarshal "); ok {
		if i := strings.LastIndex(rest, " into "); i >= 0 {
			tag, _, _ := strings.Cut(rest[:i], " ")
			goType := rest[i+len(" into "):]
			return yamlMessage{text: yamlKind(tag) + " where " + expected(lockTypes()[goType]) + " is expected", tag: tag, goType: goType}
		}
	}
	if rest, ok := strings.CutPrefix(text, "mapping key "); ok {
		if q, _, ok := strings.Cut(rest, " already defined at line "); ok {
			if key, err := strconv.Unquote(q); err == nil {
				return yamlMessage{text: unquote(text), key: key}
			}
		}
	}
	return yamlMessage{text: unquote(text)}
}

// lockTypes are the Go types of the lock file by the name yaml.v3's
// messages give them (reflect.Type.String(), pointers dereferenced); built
// at the first message, not at start-up.
var lockTypes = sync.OnceValue(func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if _, done := m[t.String()]; done {
			return
		}
		m[t.String()] = t
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			add(t.Elem())
		case reflect.Struct:
			fields, _ := yamlFields(t)
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				add(fields[name])
			}
		}
	}
	add(fileType)
	return m
})

// allowedHere is the end of an unknown field's message: the nearest
// allowed name, if one is near, and the fields of t, as the schema words
// them: `; did you mean "digest"? (allowed here: digest, kind, ...)`. ""
// for a type that is not a struct of the lock.
func allowedHere(name string, t reflect.Type) string {
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	fields, ok := yamlFields(t)
	if !ok || len(fields) == 0 {
		return ""
	}
	allowed := slices.Sorted(maps.Keys(fields))
	best, bestD := "", len(name)/2+2
	for _, a := range allowed {
		if d := spelling.Distance(name, a); d < bestD {
			best, bestD = a, d
		}
	}
	var b strings.Builder
	if best != "" {
		fmt.Fprintf(&b, "; did you mean %q?", best)
	}
	b.WriteString(" (allowed here: " + strings.Join(allowed, ", ") + ")")
	return b.String()
}

// yamlKind names a value by its YAML tag ("a string" for !!str); a
// custom tag is not quoted.
func yamlKind(tag string) string {
	switch tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a timestamp"
	case "!!binary":
		return "binary data"
	case "!!seq":
		return "a list"
	case "!!map":
		return "a mapping"
	}
	return "a value with a custom tag"
}

// expected names what a value of the Go type t is written as in YAML.
func expected(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer of 0 or more"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

// fail records err at path, on the line of path or of its closest parent.
// otherObject returns the apiVersion and kind problems alone when data is
// a mapping that names another kind of object (a Deployment given as the
// lock): its other fields would only bury the one message that matters.
// It returns nil for anything else, which the full parse then reports.
func (p *parser) otherObject() []error {
	var h struct {
		APIVersion any `yaml:"apiVersion"`
		Kind       any `yaml:"kind"`
	}
	if p.doc.Decode(&h) != nil {
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

// syntaxError is the *Error of a yaml.v3 syntax error ("yaml: line N:
// PROBLEM", N the line where the enclosing block starts): at the line of
// the token at fault (yamlpos.Line) when that is later, else at N, the
// message yaml.v3's PROBLEM, so that the line is said once, where every
// stowage error says it ("FILE:LINE: PROBLEM", as the config's syntax
// errors are). A character YAML does not allow is named with its line and
// column (yaml.v3 names no line). An error of another form keeps its
// message, without a line.
func syntaxError(err error, data []byte, filename string) *Error {
	e := &Error{File: filename, Index: -1, Err: err}
	if strings.HasSuffix(err.Error(), yamlpos.ControlProblem) {
		if line, col, r, ok := yamlpos.Control(data); ok {
			e.Line, e.Column = line, col
			e.Err = fmt.Errorf("%U is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)", r)
		}
		return e
	}
	rest, ok := strings.CutPrefix(err.Error(), "yaml: line ")
	if !ok {
		return e
	}
	num, problem, ok := strings.Cut(rest, ": ")
	n, convErr := strconv.Atoi(num)
	if !ok || convErr != nil || n < 1 {
		return e
	}
	e.Line, e.Err = n, errors.New(problem)
	if line, ok := yamlpos.Line(data); ok && line > n {
		e.Line = line
	}
	return e
}
