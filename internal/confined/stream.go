package confined

import "io"

// Stdin is the name a flag gives standard input ("--have -"), and the
// name ReadStream's messages use for it.
const Stdin = "-"

// ReadFlag reads the file a flag names: r (standard input) when path is
// Stdin, else path itself as ReadPath does. Both are bounded by k.Max.
func ReadFlag(r io.Reader, path string, k Kind) ([]byte, error) {
	if path == Stdin {
		return ReadStream(r, path, k)
	}
	return ReadPath(path, k)
}
