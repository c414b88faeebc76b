package schema

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestSchemaAgreesWithGoTypes: every field of the CUE schema's #Config,
// at every depth, is a JSON field of the api/v1alpha1 type it decodes
// into, and every JSON field of those types (those not tagged "-") is a
// field of the schema: a field added on one side only fails here.
func TestSchemaAgreesWithGoTypes(t *testing.T) {
	sch := cuecontext.New().CompileBytes(Source, cue.Filename(SchemaFile))
	if err := sch.Err(); err != nil {
		t.Fatal(err)
	}
	var walked int
	var agree func(path string, v cue.Value, typ reflect.Type)
	agree = func(path string, v cue.Value, typ reflect.Type) {
		for {
			switch typ.Kind() {
			case reflect.Pointer:
				typ = typ.Elem()
				continue
			case reflect.Slice:
				typ, v, path = typ.Elem(), v.LookupPath(cue.MakePath(cue.AnyIndex)), path+"[]"
				continue
			case reflect.Map:
				typ, v, path = typ.Elem(), v.LookupPath(cue.MakePath(cue.AnyString)), path+".*"
				continue
			}
			break
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		walked++
		if !v.Exists() {
			t.Errorf("%s: the schema has no value here for %s", path, typ)
			return
		}
		inCUE := map[string]cue.Value{}
		it, err := v.Fields(cue.Optional(true))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		for it.Next() {
			inCUE[it.Selector().Unquoted()] = it.Value()
		}
		inGo := map[string]reflect.Type{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			inGo[name] = f.Type
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range inCUE {
				if !yield(k) {
					return
				}
			}
		}) {
			gt, ok := inGo[name]
			if !ok {
				t.Errorf("%s.%s: in the CUE schema, not in %s", path, name, typ)
				continue
			}
			agree(path+"."+name, inCUE[name], gt)
		}
		for name := range inGo {
			if _, ok := inCUE[name]; !ok {
				t.Errorf("%s.%s: in %s, not in the CUE schema", path, name, typ)
			}
		}
	}
	agree("#Config", sch.LookupPath(cue.ParsePath("#Config")), reflect.TypeFor[v1alpha1.Config]())
	if walked < 10 {
		t.Errorf("walked %d struct types; the walk lost its way", walked)
	}
}
