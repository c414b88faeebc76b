package confined

import (
	"errors"
	"strings"
	"testing"
)

// TestReadStream: a stream within the bound is read whole; one byte more
// is an *Error naming the stream and the bound.
func TestReadStream(t *testing.T) {
	t.Parallel()
	k := Kind{What: "list file", Max: 4}
	b, err := ReadStream(strings.NewReader("abcd"), "standard input", k)
	if err != nil || string(b) != "abcd" {
		t.Fatalf("4 bytes: %q, %v", b, err)
	}
	_, err = ReadStream(strings.NewReader("abcde"), "standard input", k)
	var e *Error
	if !errors.As(err, &e) || err.Error() != "list file standard input: is more than the 4 bytes a list file may hold" {
		t.Errorf("5 bytes: %v, want the bound named", err)
	}
}
