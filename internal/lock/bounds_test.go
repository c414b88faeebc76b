package lock

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParseBounded: the lock is decoded by internal/strictyaml, which
// descends only where the lock's types take a value: aliases that would
// expand to 10^10 nodes and lists nested 5,000 deep are refused in
// milliseconds, at the line and field of the first value of the wrong
// type, without expanding them; every error is located.
func TestParseBounded(t *testing.T) {
	t.Parallel()
	var bomb strings.Builder
	bomb.WriteString("apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: x\n  labels:\n    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&bomb, "    a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	bomb.WriteString("spec:\n  images: *a9\n")
	deep := header + "  - name: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"
	for _, c := range []struct {
		name, data, first string
		count             int
	}{
		{"alias bomb", bomb.String(), "l.yaml:6: metadata.labels.a0: a list where a string is expected", 20},
		{"deep nesting", deep, "l.yaml:9: spec.images[0]: name: a list where a string is expected", 4},
	} {
		start := time.Now()
		_, err := Parse([]byte(c.data), "l.yaml")
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.first+"\n") {
			t.Errorf("%s: got\n%v\nwant first\n%s", c.name, err, c.first)
			continue
		}
		errs := flatten(err)
		if len(errs) != c.count {
			t.Errorf("%s: %d errors, want %d:\n%v", c.name, len(errs), c.count, err)
		}
		for _, e := range errs {
			var le *Error
			if !errors.As(e, &le) || le.Line == 0 {
				t.Errorf("%s: %v is not located", c.name, e)
			}
		}
	}
}
