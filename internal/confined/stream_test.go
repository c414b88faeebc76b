package confined

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadStream: a stream up to the bound is read whole; one byte more is
// refused naming the stream and the bound, without its content.
func TestReadStream(t *testing.T) {
	t.Parallel()
	k := Kind{What: "lock file", Max: 8}
	b, err := ReadStream(strings.NewReader("12345678"), Stdin, k)
	if err != nil || string(b) != "12345678" {
		t.Errorf("8 bytes: %q, %v", b, err)
	}
	_, err = ReadStream(strings.NewReader("secret-canary"), Stdin, k)
	var ce *Error
	if !errors.As(err, &ce) || err.Error() != "lock file -: is more than the 8 bytes a lock file may hold" {
		t.Errorf("9 bytes: %v", err)
	}
}

// TestReadFlag: "-" reads the stream, any other name the file.
func TestReadFlag(t *testing.T) {
	t.Parallel()
	k := Kind{What: "lock file", Max: 64}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFlag(strings.NewReader("stdin"), Stdin, k); err != nil || string(b) != "stdin" {
		t.Errorf("-: %q, %v", b, err)
	}
	if b, err := ReadFlag(strings.NewReader("stdin"), p, k); err != nil || string(b) != "file" {
		t.Errorf("%s: %q, %v", p, b, err)
	}
}

// TestReadStreamNamed: a stream within the bound is read whole; one byte more
// is an *Error naming the stream and the bound.
func TestReadStreamNamed(t *testing.T) {
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
