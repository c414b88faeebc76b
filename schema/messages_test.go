package schema

import "testing"

// TestControlCharacterLocated: a character YAML does not allow is one
// error naming the file once, with its line and column, and saying which
// character it is (CUE's decoder named the file twice and no line).
func TestControlCharacterLocated(t *testing.T) {
	_, one := manyFiles(1)
	f := File{Name: "cfg/x.yaml", Data: []byte("images:\n  z:\n    reference: busy\x07box:1\n")}
	_, err := LoadFiles("cfg", append([]File{f}, one...), Options{})
	want := "cfg/x.yaml:3:20: U+0007 is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
