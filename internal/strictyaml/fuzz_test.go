package strictyaml

import (
	"errors"
	"testing"
)

// FuzzDecode: any bytes parsed and decoded into a typed value and checked
// without one: no panic; every problem an *Error naming the file with a
// line; the same answer twice.
func FuzzDecode(f *testing.F) {
	f.Add("kind: K\nmetadata: {name: m, labels: {a: b}}\nitems: [{platform: x, size: 1}]\nready: true\ncount: 7\nextra: {a: [1]}\n")
	f.Add("kind: K\nkind: L\nbogus: 1\nready: 2\n")
	f.Add(aliasBomb(4))
	f.Add("a: &a [*a]\n")
	f.Add("metadata:\n  <<: {name: a}\n")
	f.Add("extra: !x {a: 1}\n")
	f.Fuzz(func(t *testing.T, data string) {
		n, err := Parse([]byte(data), "f.yaml")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" {
				t.Fatalf("Parse: %v is not an *Error of the file", err)
			}
			return
		}
		lim := Limits{Aliases: 1000, Nodes: 100_000}
		var once string
		for range 2 {
			var d doc
			err := Decode(n, &d, Options{File: "f.yaml", Limits: lim})
			cerr := Check(n, Options{File: "f.yaml", Limits: lim, Merge: true})
			for _, e := range []error{err, cerr} {
				if e == nil {
					continue
				}
				var es Errors
				if !errors.As(e, &es) {
					t.Fatalf("%v is not Errors", e)
				}
				for _, x := range es {
					if x.File != "f.yaml" || x.Line == 0 {
						t.Fatalf("%v is not located", x)
					}
				}
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if once != "" && got != once {
				t.Fatalf("two decodes differ:\n%s\n%s", once, got)
			}
			once = got
		}
	})
}
