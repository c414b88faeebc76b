package lock

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any bytes as a lock file: no panic; either a lock whose
// entries all validate and whose Marshal parses back to the same entries,
// or *Error values naming the file; ParseRepair never keeps an entry that
// does not validate; the same result twice.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nspec:\n  images:\n  - {name: a, size: -5}\n"))
	f.Add([]byte(""))
	f.Add([]byte("~\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data, "stowage.lock.yaml")
		l2, err2 := Parse(data, "stowage.lock.yaml")
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two parses differ: %v / %v", err, err2)
		}
		if err != nil {
			var le *Error
			if !errors.As(err, &le) || le.File != "stowage.lock.yaml" {
				t.Fatalf("error %v is not an *Error naming the file", err)
			}
		} else {
			for _, e := range l.Entries {
				if verr := Validate(e); verr != nil {
					t.Fatalf("Parse accepted an entry that does not validate: %v", verr)
				}
			}
			back, err := Parse(l.Marshal(), "again")
			if err != nil {
				t.Fatalf("Marshal of a parsed lock does not parse: %v", err)
			}
			if !bytes.Equal(back.Marshal(), l.Marshal()) {
				t.Fatal("Marshal after a round trip differs")
			}
			_ = l2
		}
		r, _, rerr := ParseRepair(data, "stowage.lock.yaml")
		if rerr == nil {
			for _, e := range r.Entries {
				if verr := Validate(e); verr != nil {
					t.Fatalf("ParseRepair kept an entry that does not validate: %v", verr)
				}
			}
		}
	})
}
