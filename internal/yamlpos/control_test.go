package yamlpos

import "testing"

// TestControl: the first character YAML does not allow, by line and
// column in characters; tabs, CR, NEL, multi-byte text and bytes that are
// not UTF-8 are not reported.
func TestControl(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in        string
		line, col int
		r         rune
		ok        bool
	}{
		{"a: b\n", 0, 0, 0, false},
		{"a:\tb\r\nc: \u0085é日\xff\n", 0, 0, 0, false},
		{"a: b\nc: dé\x01\n", 2, 6, 1, true},
		{"\x1b[31m: x\n", 1, 1, 0x1b, true},
		{"a: \ufffe\n", 1, 4, 0xfffe, true},
	} {
		line, col, r, ok := Control([]byte(c.in))
		if line != c.line || col != c.col || r != c.r || ok != c.ok {
			t.Errorf("Control(%q) = %d, %d, %U, %v; want %d, %d, %U, %v", c.in, line, col, r, ok, c.line, c.col, c.r, c.ok)
		}
	}
}
