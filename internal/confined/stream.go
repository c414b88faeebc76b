package confined

import (
	"fmt"
	"io"
)

// Stdin is the name a flag gives standard input ("--have -"), and the
// name ReadStream's messages use for it.
const Stdin = "-"

// ReadStream reads r, a stream such as standard input that has no size to
// check first, up to k.Max bytes: one byte more is refused, so a stream
// that does not end stops being read there. shown names the stream in
// messages. Errors are *Error values that never quote the content.
func ReadStream(r io.Reader, shown string, k Kind) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, k.Max+1))
	if err != nil {
		return nil, &Error{Path: shown, Kind: k.What, Reason: "cannot be read: " + err.Error(), Err: err}
	}
	if int64(len(b)) > k.Max {
		return nil, &Error{Path: shown, Kind: k.What, Reason: fmt.Sprintf("is more than the %d bytes a %s may hold", k.Max, k.What)}
	}
	return b, nil
}

// ReadFlag reads the file a flag names: r (standard input) when path is
// Stdin, else path itself as ReadPath does. Both are bounded by k.Max.
func ReadFlag(r io.Reader, path string, k Kind) ([]byte, error) {
	if path == Stdin {
		return ReadStream(r, path, k)
	}
	return ReadPath(path, k)
}
