package fn_test

import (
	"slices"
	"testing"

	"github.com/stowage/stowage/fn"
)

// TestDeclaredFlags: an exec declaration's args parsed with the fn
// command's own flags: --allow-env given (repeated) or not (nil: it
// narrows nothing), --max-input-bytes or its default, and a flag or an
// argument the command refuses.
func TestDeclaredFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		allow []string
		max   int64
		fails bool
	}{
		{args: nil, allow: nil, max: fn.DefaultMaxInput},
		{args: []string{"--allow-env", "A", "--allow-env", "B", "--max-input-bytes", "100"}, allow: []string{"A", "B"}, max: 100},
		{args: []string{"--nope"}, fails: true},
		{args: []string{"extra"}, fails: true},
		{args: []string{"--max-input-bytes", "lots"}, fails: true},
	} {
		allow, max, err := fn.DeclaredFlags(fn.NewCommand(), tc.args)
		if tc.fails {
			if err == nil {
				t.Errorf("%q: no error", tc.args)
			}
			continue
		}
		if err != nil || !slices.Equal(allow, tc.allow) || (allow == nil) != (tc.allow == nil) || max != tc.max {
			t.Errorf("%q: allow-env %q, max %d, %v; want %q, %d", tc.args, allow, max, err, tc.allow, tc.max)
		}
	}
}
