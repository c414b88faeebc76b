package yamlpos

import "testing"

// TestLine: the line of the token at fault, counted from 1, for a parser
// problem (which yaml.v2 counts from 0) and a scanner problem (from 1);
// none for valid YAML.
func TestLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data string
		line int
		ok   bool
	}{
		{"a:\n  b: 1\n  c:\n  - x: 1\n    y: 2\n   z: 3\n", 6, true},
		{"a: 1\nb: \"unterminated\n", 3, true},
		{"a: 1\n", 0, false},
	} {
		line, ok := Line([]byte(c.data))
		if line != c.line || ok != c.ok {
			t.Errorf("Line(%q) = %d, %v; want %d, %v", c.data, line, ok, c.line, c.ok)
		}
	}
}
