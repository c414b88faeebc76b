package lock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/confined"
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
// unknown or repeated fields are errors, every entry must pass
// Entry.Validate, and two entries may not share a name. All problems are
// reported at once, as *Error values joined with errors.Join, each naming the
// file, line, entry index and name, and field. The returned lock has its
// entries sorted by name and their platforms sorted by platform.
func Parse(data []byte, filename string) (*Lock, error) {
	p := &parser{file: filename}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	l := p.object(root)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return l, nil
}

// parser walks yaml.v3 nodes so that every error can carry a line number.
type parser struct {
	file string
	errs []error
}

// at locates a node for errors: entry index (-1 outside entries) and field.
type at struct {
	index int
	field string
}

func (a at) child(field string) at {
	if a.field == "" {
		return at{a.index, field}
	}
	return at{a.index, a.field + "." + field}
}

func (p *parser) fail(line int, a at, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Index: a.index, Field: a.field, Err: fmt.Errorf(format, args...)})
}

func (p *parser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("empty file; want an %s object", ObjectKind)
		}
		return nil, &Error{File: p.file, Index: -1, Err: err}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, &Error{File: p.file, Index: -1, Err: err}
	default:
		return nil, &Error{File: p.file, Line: line(deref(&extra)), Index: -1, Err: errors.New("more than one YAML document; a lock file holds one")}
	}
	return &doc, nil
}

// deref follows the document wrapper and aliases to the value node.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && (n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) > 0 {
			n = n.Content[0]
		} else {
			return nil
		}
	}
	return n
}

// describe names the YAML type of n for "must be a …, got …" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!int", "!!float":
		return "number " + n.Value
	case "!!bool":
		return "boolean " + n.Value
	case "!!str":
		return fmt.Sprintf("string %q", n.Value)
	}
	return fmt.Sprintf("%s %q", n.Tag, n.Value)
}

// field is one key and value of a mapping.
type field struct {
	key, val *yaml.Node
}

// mapping returns the fields of mapping n by key. It reports a non-mapping,
// repeated keys, keys not in known and keys of required that are absent.
func (p *parser) mapping(n *yaml.Node, a at, known, required []string) map[string]field {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		line := 0
		what := "nothing"
		if n != nil {
			line, what = n.Line, describe(n)
		}
		p.fail(line, a, "must be a mapping, got %s", what)
		return nil
	}
	fields := map[string]field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			p.fail(n.Content[i].Line, a, "keys must be strings")
			continue
		}
		key := k.Value
		if !slices.Contains(known, key) {
			p.fail(k.Line, a.child(key), "unknown field (known fields: %s)", strings.Join(known, ", "))
			continue
		}
		if prev, dup := fields[key]; dup {
			p.fail(k.Line, a.child(key), "repeated field, first set on line %d", prev.key.Line)
			continue
		}
		fields[key] = field{k, v}
	}
	for _, key := range required {
		if _, ok := fields[key]; !ok {
			p.fail(n.Line, a.child(key), "required field missing")
		}
	}
	return fields
}

// str decodes a string scalar; ok is false (and an error recorded) otherwise.
func (p *parser) str(n *yaml.Node, a at) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.fail(line(n), a, "must be a string, got %s", describeOrNothing(n))
		return "", false
	}
	return n.Value, true
}

// bytesize decodes an integer scalar, a size in bytes; its sign is checked
// by Entry.problems.
func (p *parser) bytesize(n *yaml.Node, a at) (int64, bool) {
	n = deref(n)
	var v int64
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		p.fail(line(n), a, "must be an integer number of bytes, got %s", describeOrNothing(n))
		return 0, false
	}
	return v, true
}

func line(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

func describeOrNothing(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	return describe(n)
}

// seq returns the items of list n, reporting anything else. A null value is
// an empty list.
func (p *parser) seq(n *yaml.Node, a at) []*yaml.Node {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		p.fail(line(n), a, "must be a list, got %s", describeOrNothing(n))
		return nil
	}
	return n.Content
}

// stringMap decodes a mapping of strings to strings (labels, annotations).
func (p *parser) stringMap(n *yaml.Node, a at) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.fail(line(n), a, "must be a mapping of strings, got %s", describeOrNothing(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, ok := p.str(n.Content[i], a); ok {
			p.str(n.Content[i+1], a.child(k))
		}
	}
}

func (p *parser) object(root *yaml.Node) *Lock {
	top := at{index: -1}
	fields := p.mapping(root, top, []string{"apiVersion", "kind", "metadata", "spec"}, []string{"apiVersion", "kind", "spec"})
	if fields == nil {
		return nil
	}
	for _, kv := range [][2]string{{"apiVersion", APIVersion}, {"kind", ObjectKind}} {
		key, want := kv[0], kv[1]
		if f, ok := fields[key]; ok {
			if v, ok := p.str(f.val, top.child(key)); ok && v != want {
				p.fail(f.key.Line, top.child(key), "got %q, want %q", v, want)
			}
		}
	}
	if f, ok := fields["metadata"]; ok {
		// namespace is accepted because kustomize's `namespace:` sets it on
		// every resource, the lock included; it means nothing to stowage.
		meta := p.mapping(f.val, top.child("metadata"), []string{"name", "namespace", "annotations", "labels"}, nil)
		for _, k := range []string{"name", "namespace"} {
			if f, ok := meta[k]; ok {
				p.str(f.val, top.child("metadata."+k))
			}
		}
		for _, k := range []string{"annotations", "labels"} {
			if f, ok := meta[k]; ok {
				p.stringMap(f.val, top.child("metadata."+k))
			}
		}
	}
	l := &Lock{}
	if f, ok := fields["spec"]; ok {
		spec := p.mapping(f.val, top.child("spec"), []string{"images"}, nil)
		if f, ok := spec["images"]; ok {
			l.Entries = p.entries(f.val, top.child("spec.images"))
		}
	}
	return l
}

func (p *parser) entries(n *yaml.Node, a at) []Entry {
	l := &Lock{}
	first := map[string]int{} // name -> index of its first entry
	lines := map[string]int{} // name -> line of its first entry
	for i, item := range p.seq(n, a) {
		start := len(p.errs)
		e, entryLine := p.entry(item, i)
		if e.Name != "" {
			if j, dup := first[e.Name]; dup {
				p.fail(entryLine, at{index: i, field: "name"}, "duplicate name, first used by spec.images[%d] on line %d", j, lines[e.Name])
			} else {
				first[e.Name], lines[e.Name] = i, entryLine
			}
		}
		for _, err := range p.errs[start:] {
			err.(*Error).Image = e.ident()
		}
		l.Put(e)
	}
	return l.Entries
}

// decoded collects, while an entry is decoded, the line of each field path
// ("digest", "platforms[1].size"; "" is the entry) and the paths that failed
// to decode, so validation neither repeats them nor loses their lines.
type decoded struct {
	lines map[string]int
	bad   map[string]bool
}

// strField decodes fields[key] into dst, recording it under path.
func (p *parser) strField(fields map[string]field, key, path string, a at, d decoded, dst *string) {
	f, ok := fields[key]
	if !ok {
		return
	}
	d.lines[path] = f.key.Line
	if s, ok := p.str(f.val, a.child(key)); ok {
		*dst = s
	} else {
		d.bad[path] = true
	}
}

// sizeField decodes fields["size"] into dst, recording it under path.
func (p *parser) sizeField(fields map[string]field, path string, a at, d decoded, dst *int64) {
	f, ok := fields["size"]
	if !ok {
		return
	}
	d.lines[path] = f.key.Line
	if v, ok := p.bytesize(f.val, a.child("size")); ok {
		*dst = v
	} else {
		d.bad[path] = true
	}
}

// entry decodes spec.images[i] and validates it; it returns the entry and
// its line.
func (p *parser) entry(n *yaml.Node, i int) (Entry, int) {
	a := at{index: i}
	var e Entry
	n = deref(n)
	fields := p.mapping(n, a, []string{"name", "reference", "digest", "kind", "platforms", "size"}, nil)
	if fields == nil {
		return e, line(n)
	}
	d := decoded{lines: map[string]int{"": n.Line}, bad: map[string]bool{}}
	p.strField(fields, "name", "name", a, d, &e.Name)
	p.strField(fields, "reference", "reference", a, d, &e.Reference)
	p.strField(fields, "digest", "digest", a, d, &e.Digest)
	var kind string
	p.strField(fields, "kind", "kind", a, d, &kind)
	e.Kind = Kind(kind)
	p.sizeField(fields, "size", a, d, &e.Size)
	if f, ok := fields["platforms"]; ok {
		d.lines["platforms"] = f.key.Line
		items := p.seq(f.val, a.child("platforms"))
		if items == nil && deref(f.val).Tag != "!!null" {
			d.bad["platforms"] = true
		}
		for j, item := range items {
			path := fmt.Sprintf("platforms[%d]", j)
			pa := a.child(path)
			d.lines[path] = line(deref(item))
			pf := p.mapping(item, pa, []string{"platform", "digest", "size"}, nil)
			if pf == nil {
				d.bad[path] = true
			}
			var pl Platform
			p.strField(pf, "platform", path+".platform", pa, d, &pl.Platform)
			p.strField(pf, "digest", path+".digest", pa, d, &pl.Digest)
			p.sizeField(pf, path+".size", pa, d, &pl.Size)
			e.Platforms = append(e.Platforms, pl)
		}
	}
	for _, pr := range e.problems() {
		if covered(d.bad, pr.field) {
			continue
		}
		p.fail(lineOf(d.lines, pr.field), at{index: i, field: pr.field}, "%w", pr.err)
	}
	return e, n.Line
}

// covered reports whether field or one of its parents already failed to
// decode, so that validation does not report it twice.
func covered(bad map[string]bool, field string) bool {
	for {
		if bad[field] {
			return true
		}
		i := strings.LastIndexByte(field, '.')
		if i < 0 {
			return false
		}
		field = field[:i]
	}
}

// lineOf returns the line of field, else of its closest parent, else of the
// entry.
func lineOf(lines map[string]int, field string) int {
	for {
		if l, ok := lines[field]; ok {
			return l
		}
		i := strings.LastIndexByte(field, '.')
		if i < 0 {
			return lines[""]
		}
		field = field[:i]
	}
}
