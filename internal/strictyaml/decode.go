package strictyaml

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/spelling"
)

// Options are the settings of one Decode.
type Options struct {
	// File names the document in errors.
	File string
	// Limits bound the walk.
	Limits Limits
	// Label writes a mapping key in a path (the config's CUE quoting, say);
	// nil writes it as it is.
	Label func(key string) string
	// Merge lets Check leave merge keys (<<) to the decoder that reads the
	// tree after it (CUE's, for the config); Decode refuses them always.
	Merge bool
}

// Decode decodes the tree n (a document, as Parse returns it, or any node
// of one, such as kyaml's RNode.YNode()) into out, a non-nil pointer. n is
// only read.
//
// The rules are yaml.v3's Node.Decode with known fields only, and
// stricter where yaml.v3 guesses: a struct field is named by its yaml tag,
// else its json tag, else its name lowercased, inline structs' fields
// included; a mapping key appears once; a string takes only a string
// (`tag: 1.28` is a number, as it is to kustomize), an integer an
// integer in range, a boolean true or false; null leaves the zero value;
// an alias decodes as the node it names, counted against Limits.Aliases;
// a merge key (<<) and a custom tag are refused. Types implementing
// yaml.Unmarshaler are decoded by their fields all the same.
//
// It returns nil or Errors, every problem in document order; out then
// holds what did decode. A bound of Limits passed stops the walk with one
// more error wrapping ErrLimit.
func Decode(n *yaml.Node, out any, opts Options) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("strictyaml: Decode needs a non-nil pointer, not %T", out)
	}
	d := &decoder{file: opts.File, lim: opts.Limits.withDefaults(), label: opts.Label}
	d.value(n, v.Elem(), "", 0, false)
	if len(d.errs) == 0 {
		return nil
	}
	return d.errs
}

// decoder is one Decode in progress.
type decoder struct {
	file    string
	label   func(string) string
	merge   bool
	lim     Limits
	errs    Errors
	nodes   int  // nodes decoded
	aliased int  // of them, through an alias
	stopped bool // a bound was passed
}

// fail records err at node n and path.
func (d *decoder) fail(n *yaml.Node, path string, err error) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Column: n.Column, Path: path, Err: err})
}

// stop records a bound passed at n and stops the walk.
func (d *decoder) stop(n *yaml.Node, path string, format string, args ...any) {
	d.fail(n, path, limitError(fmt.Sprintf(format, args...)))
	d.stopped = true
}

// limitError is the problem of a bound passed; it is ErrLimit to
// errors.Is.
type limitError string

func (e limitError) Error() string        { return string(e) }
func (e limitError) Is(target error) bool { return target == ErrLimit }

// value decodes n into v (settable) at path; depth is the nesting of n,
// aliased whether n is reached through an alias.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, depth int, aliased bool) {
	if !d.count(n, path, depth, aliased) {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			d.value(n.Content[0], v, path, depth, aliased)
		}
		return
	case yaml.AliasNode:
		d.value(n.Alias, v, path, depth+1, true)
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		v.SetZero()
		return
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if n.Kind == yaml.ScalarNode && strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.ShortTag(), "!!") {
		d.fail(n, path, fmt.Errorf("a value with a custom tag where %s is expected", expected(v.Type())))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(n, v, path, depth, aliased)
	case reflect.Map:
		d.mapping(n, v, path, depth, aliased)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.wrongType(n, v.Type(), path)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.value(c, s.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1, aliased)
		}
		v.Set(s)
	case reflect.Interface:
		if v.NumMethod() > 0 {
			d.fail(n, path, errors.New("a value stowage cannot decode here"))
			return
		}
		if x, ok := d.generic(n, path, depth, aliased); ok {
			if x == nil {
				v.SetZero()
			} else {
				v.Set(reflect.ValueOf(x))
			}
		}
	default:
		d.scalar(n, v, path)
	}
}

// Check is Decode without a Go type, for a document another decoder
// reads (the config, CUE's): a mapping key given twice, a key that is not
// a scalar and the bounds of opts.Limits, over the whole tree n, aliases
// followed. It returns nil or Errors.
func Check(n *yaml.Node, opts Options) error {
	d := &decoder{file: opts.File, lim: opts.Limits.withDefaults(), label: opts.Label, merge: opts.Merge}
	d.check(n, "", 0, false)
	if len(d.errs) == 0 {
		return nil
	}
	return d.errs
}

// check is Check's walk of n at path.
func (d *decoder) check(n *yaml.Node, path string, depth int, aliased bool) {
	if !d.count(n, path, depth, aliased) {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			d.check(c, path, depth, aliased)
		}
	case yaml.AliasNode:
		d.check(n.Alias, path, depth+1, true)
	case yaml.MappingNode:
		d.pairs(n, path, func(_, val *yaml.Node, at string) { d.check(val, at, depth+1, aliased) })
	case yaml.SequenceNode:
		for i, c := range n.Content {
			d.check(c, path+"["+strconv.Itoa(i)+"]", depth+1, aliased)
		}
	}
}

// count counts n against the bounds; false when the walk stops.
func (d *decoder) count(n *yaml.Node, path string, depth int, aliased bool) bool {
	if d.stopped || n == nil {
		return false
	}
	if d.nodes++; d.nodes > d.lim.Nodes {
		d.stop(n, path, "the document holds more than %d nodes, the limit", d.lim.Nodes)
		return false
	}
	if aliased {
		if d.aliased++; d.aliased > d.lim.Aliases {
			d.stop(n, path, "aliases expand to more than %d nodes, the limit", d.lim.Aliases)
			return false
		}
	}
	if depth > d.lim.Depth {
		d.stop(n, path, "nested more than %d deep, the limit", d.lim.Depth)
		return false
	}
	return true
}

// structure decodes the mapping n into the struct v.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string, depth int, aliased bool) {
	if n.Kind != yaml.MappingNode {
		d.wrongType(n, v.Type(), path)
		return
	}
	fs := fieldsOf(v.Type())
	d.pairs(n, path, func(k, val *yaml.Node, at string) {
		idx, ok := fs.byName[k.Value]
		if !ok {
			if fs.rest != nil {
				m := v.FieldByIndex(fs.rest)
				if m.IsNil() {
					m.Set(reflect.MakeMap(m.Type()))
				}
				e := reflect.New(m.Type().Elem()).Elem()
				d.value(val, e, at, depth+1, aliased)
				m.SetMapIndex(reflect.ValueOf(k.Value).Convert(m.Type().Key()), e)
				return
			}
			d.fail(k, at, errors.New("field not allowed"+AllowedHere(k.Value, fs.names)))
			return
		}
		d.value(val, fieldByIndex(v, idx), at, depth+1, aliased)
	})
}

// fieldByIndex is v's field at index, allocating inline pointers.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// mapping decodes the mapping n into the map v.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, depth int, aliased bool) {
	if n.Kind != yaml.MappingNode {
		d.wrongType(n, v.Type(), path)
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Content)/2))
	}
	kt, et := v.Type().Key(), v.Type().Elem()
	d.pairs(n, path, func(k, val *yaml.Node, at string) {
		key := reflect.New(kt).Elem()
		before := len(d.errs)
		d.scalar(k, key, at)
		if len(d.errs) > before {
			return
		}
		e := reflect.New(et).Elem()
		d.value(val, e, at, depth+1, aliased)
		v.SetMapIndex(key, e)
	})
}

// pairs calls f for each key and value of the mapping n whose key is a
// scalar given once and not a merge key, with the path of the value;
// the others are problems.
func (d *decoder) pairs(n *yaml.Node, path string, f func(k, v *yaml.Node, at string)) {
	var seen map[string]int
	for i := 0; i+1 < len(n.Content) && !d.stopped; i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		for k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		at := k.Value
		if d.label != nil {
			at = d.label(k.Value)
		}
		if path != "" {
			at = path + "." + at
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			d.fail(k, path, fmt.Errorf("%s as a key; a key here is a string", kindOf(k)))
			continue
		case k.ShortTag() == "!!merge" && d.merge:
			f(k, val, path)
			continue
		case k.ShortTag() == "!!merge":
			// At the mapping: the fields it would merge are not known.
			d.fail(k, path, errors.New("a merge key (<<), which is not allowed here; write the fields out"))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(n.Content[i], at, fmt.Errorf("duplicate key %q: this mapping gives it at line %d and again at line %d; a key appears once in a mapping (keep one)", k.Value, first, n.Content[i].Line))
			continue
		}
		if seen == nil {
			seen = make(map[string]int, len(n.Content)/2)
		}
		seen[k.Value] = n.Content[i].Line
		f(k, val, at)
	}
}

// generic decodes n as an untyped value: map[string]any, []any, string,
// int, float64, bool or nil; ok is false when it did not decode.
func (d *decoder) generic(n *yaml.Node, path string, depth int, aliased bool) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		ok := true
		d.pairs(n, path, func(k, val *yaml.Node, at string) {
			var x any
			e := reflect.ValueOf(&x).Elem()
			before := len(d.errs)
			d.value(val, e, at, depth+1, aliased)
			ok = ok && len(d.errs) == before
			m[k.Value] = x
		})
		return m, ok
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			d.value(c, reflect.ValueOf(&s[i]).Elem(), path+"["+strconv.Itoa(i)+"]", depth+1, aliased)
		}
		return s, true
	}
	var x any
	if err := n.Decode(&x); err != nil {
		d.fail(n, path, fmt.Errorf("%s that does not decode", kindOf(n)))
		return nil, false
	}
	return x, true
}

// scalar decodes the scalar n into v, a string, integer, boolean or
// float.
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.wrongType(n, v.Type(), path)
		return
	}
	tag := n.ShortTag()
	switch v.Kind() {
	case reflect.String:
		// A plain timestamp is text to every reader of these files.
		if tag == "!!str" || tag == "!!timestamp" && n.Style == 0 {
			v.SetString(n.Value)
			return
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if tag == "!!int" {
			i, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				err = n.Decode(&i)
			}
			if err == nil && !v.OverflowInt(i) {
				v.SetInt(i)
				return
			}
			d.fail(n, path, fmt.Errorf("an integer out of range where %s is expected", expected(v.Type())))
			return
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tag == "!!int" {
			var u uint64
			if n.Decode(&u) == nil && !v.OverflowUint(u) {
				v.SetUint(u)
				return
			}
			d.fail(n, path, fmt.Errorf("a negative or too large integer where %s is expected", expected(v.Type())))
			return
		}
	case reflect.Bool:
		if tag == "!!bool" {
			var b bool
			if n.Decode(&b) == nil {
				v.SetBool(b)
				return
			}
		}
	case reflect.Float32, reflect.Float64:
		if tag == "!!float" || tag == "!!int" {
			var f float64
			if n.Decode(&f) == nil && !v.OverflowFloat(f) {
				v.SetFloat(f)
				return
			}
		}
	default:
		d.fail(n, path, errors.New("a value stowage cannot decode here"))
		return
	}
	d.wrongType(n, v.Type(), path)
}

// wrongType records that n is not a value of type t.
func (d *decoder) wrongType(n *yaml.Node, t reflect.Type, path string) {
	msg := kindOf(n) + " where " + expected(t) + " is expected"
	if t.Kind() == reflect.String && n.Kind == yaml.ScalarNode && n.Style == 0 {
		msg += " (write it in quotes to make it a string)"
	}
	d.fail(n, path, errors.New(msg))
}

// kindOf names what n is: "a mapping", "a list", "a string", "an
// integer", …; a custom tag is not quoted.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
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
	}
	return "a value with a custom tag"
}

// expected names what a value of the Go type t is written as in YAML.
func expected(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
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

// AllowedHere is the end of an unknown field's message: the nearest of
// allowed (spelling.Nearest) and the list of them, as the config's
// schema words it: `; did you mean "digest"? (allowed here: digest,
// kind, …)`; "" when allowed is empty.
func AllowedHere(name string, allowed []string) string {
	if len(allowed) == 0 {
		return ""
	}
	var b strings.Builder
	if best := spelling.Nearest(name, allowed); best != "" {
		fmt.Fprintf(&b, "; did you mean %q?", best)
	}
	b.WriteString(" (allowed here: " + strings.Join(allowed, ", ") + ")")
	return b.String()
}

// fields are the YAML names of a struct type's fields.
type fields struct {
	byName map[string][]int // name -> field index (inline structs' included)
	names  []string         // the names, sorted
	rest   []int            // an inline map taking every other key; nil if none
}

// fieldCache holds fieldsOf's answer per reflect.Type.
var fieldCache sync.Map

// fieldsOf is the fields of the struct type t, cached.
func fieldsOf(t reflect.Type) *fields {
	if c, ok := fieldCache.Load(t); ok {
		return c.(*fields)
	}
	fs := &fields{byName: map[string][]int{}}
	collect(t, nil, fs)
	fs.names = slices.Sorted(maps.Keys(fs.byName))
	fieldCache.Store(t, fs)
	return fs
}

// collect adds the fields of struct t, at index prefix, to fs.
func collect(t reflect.Type, prefix []int, fs *fields) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, inline, skip := tagOf(sf)
		if skip {
			continue
		}
		index := append(slices.Clip(prefix), i)
		ft := sf.Type
		if inline {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				collect(ft, index, fs)
			case reflect.Map:
				fs.rest = index
			}
			continue
		}
		if _, dup := fs.byName[name]; !dup {
			fs.byName[name] = index
		}
	}
}

// tagOf is the YAML name of sf (yaml tag, else json tag, else the name
// lowercased), whether it is inline, and whether it is left out
// (unexported or tagged "-").
func tagOf(sf reflect.StructField) (name string, inline, skip bool) {
	tag, ok := sf.Tag.Lookup("yaml")
	if !ok {
		tag, ok = sf.Tag.Lookup("json")
	}
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	inline = slices.Contains(strings.Split(opts, ","), "inline") || ok && name == "" && sf.Anonymous
	if !sf.IsExported() && !(inline && sf.Anonymous) {
		return "", false, true
	}
	if name == "" {
		name = strings.ToLower(sf.Name)
	}
	return name, inline, false
}
