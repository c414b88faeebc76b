package lock

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse parses any bytes as a lock. Parse never panics; where the
// canonical fast path accepts the bytes, the general parser returns the
// same lock, and Marshal writes the bytes back unchanged; a lock Parse
// accepts marshals to a file that parses to the same lock.
func FuzzParse(f *testing.F) {
	locks, _ := filepath.Glob("../../examples/*/stowage.lock.yaml")
	more, _ := filepath.Glob("../../examples/*/*/stowage.lock.yaml")
	for _, p := range append(append(locks, more...), "testdata/canonical.lock.yaml") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add((&Lock{}).Marshal())
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data, "stowage.lock.yaml")
		if fast, ok := parseCanonical(data); ok {
			general, gerr := parseGeneral(data, "stowage.lock.yaml")
			if gerr != nil {
				t.Fatalf("the fast path accepts what the general parser refuses: %v\n%s", gerr, data)
			}
			if !reflect.DeepEqual(normal(fast), normal(general)) {
				t.Fatalf("the fast path reads\n%+v\nthe general parser\n%+v\nfrom\n%s", fast, general, data)
			}
			if out := fast.Marshal(); string(out) != string(data) {
				t.Fatalf("the fast path accepted a file Marshal writes otherwise:\n%s\n---\n%s", data, out)
			}
		}
		if err != nil {
			return
		}
		out := l.Marshal()
		again, err := Parse(out, "stowage.lock.yaml")
		if err != nil {
			t.Fatalf("Marshal of a parsed lock does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normal(l), normal(again)) {
			t.Fatalf("Parse(Marshal(l)) differs from l:\n%+v\n%+v", l, again)
		}
	})
}

// normal makes empty and nil slices alike, for comparing locks.
func normal(l *Lock) *Lock {
	out := &Lock{}
	for _, e := range l.Entries {
		if len(e.Platforms) == 0 {
			e.Platforms = nil
		}
		out.Entries = append(out.Entries, e)
	}
	return out
}
