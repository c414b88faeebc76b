package schema

import (
	"reflect"
	"strings"

	"cuelang.org/go/cue"
)

// decodeFailure is a part of the config that did not decode into its Go
// type: its path and the decoder's error.
type decodeFailure struct {
	path cue.Path
	err  error
}

// decodePartial decodes v into dst (settable) as far as it can. When v as a
// whole does not decode (a CUE error inside it, a wrong type, a value the
// Go type refuses such as refreshHours "two"), it descends into struct
// fields (by their json names), map entries and list elements, keeps every
// part that decodes, and leaves the others at their zero value. It returns
// the parts left out (the innermost ones that failed), so that the Go
// rules can still run over the rest of the config and all problems are
// reported in one load.
func decodePartial(v cue.Value, dst reflect.Value, p cue.Path) []decodeFailure {
	err := v.Decode(dst.Addr().Interface())
	if err == nil {
		return nil
	}
	dst.SetZero()
	fail := []decodeFailure{{path: p, err: err}}
	switch dst.Kind() {
	case reflect.Pointer:
		elem := reflect.New(dst.Type().Elem())
		fails := decodePartial(v, elem.Elem(), p)
		if len(fails) == 1 && fails[0].path.String() == p.String() {
			return fails // nothing of it decoded: leave it nil
		}
		dst.Set(elem)
		return fails
	case reflect.Struct:
		// Fields fails for what is not a struct; a struct with an error
		// inside still lists its fields.
		if _, err := v.Fields(); err != nil {
			return fail
		}
		var fails []decodeFailure
		t := dst.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			fv := v.LookupPath(cue.MakePath(cue.Str(name)))
			if !fv.Exists() {
				continue
			}
			fails = append(fails, decodePartial(fv, dst.Field(i), extend(p, name))...)
		}
		return fails
	case reflect.Map:
		iter, ierr := v.Fields()
		if ierr != nil || dst.Type().Key().Kind() != reflect.String {
			return fail
		}
		var fails []decodeFailure
		m := reflect.MakeMap(dst.Type())
		for iter.Next() {
			k := iter.Selector().Unquoted()
			ev := reflect.New(dst.Type().Elem()).Elem()
			fails = append(fails, decodePartial(iter.Value(), ev, extend(p, k))...)
			m.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), ev)
		}
		dst.Set(m)
		return fails
	case reflect.Slice:
		// List fails when an element has an error (the list's kind is
		// then bottom), so the elements are looked up one by one.
		kind := v.IncompleteKind()
		if kind != cue.BottomKind && kind&cue.ListKind == 0 {
			return fail
		}
		var fails []decodeFailure
		s := reflect.MakeSlice(dst.Type(), 0, 0)
		for i := 0; ; i++ {
			ev := v.LookupPath(cue.MakePath(cue.Index(i)))
			if !ev.Exists() {
				break
			}
			elem := reflect.New(dst.Type().Elem()).Elem()
			fails = append(fails, decodePartial(ev, elem, extend(p, i))...)
			s = reflect.Append(s, elem)
		}
		if s.Len() == 0 && kind == cue.BottomKind {
			return fail // not a list at all
		}
		dst.Set(s)
		return fails
	}
	return fail
}

// related reports whether the error paths a and b (as pathString prints
// them) are equal or one lies inside the other.
func related(a, b string) bool {
	inside := func(child, parent string) bool {
		if parent == "" {
			return true
		}
		rest, ok := strings.CutPrefix(child, parent)
		return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
	}
	return inside(a, b) || inside(b, a)
}
