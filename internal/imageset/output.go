package imageset

import (
	"os"
	"path/filepath"
)

// InputOf returns the first of inputs that out, the file a catalogue is
// to be written to, would replace or change: the same file (links
// included) or, for an input that is a directory (a chart directory), a
// path inside it; "" when none. Inputs that do not exist, Stdin among
// them, are skipped. The check is for before anything is read: writing
// such a file would replace what was read, or change the chart, with the
// catalogue. An error is one of making out absolute.
func InputOf(out string, inputs ...string) (string, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	outInfo, outErr := os.Stat(out)
	for _, in := range inputs {
		if in == Stdin {
			continue
		}
		inAbs, err := filepath.Abs(in)
		if err != nil {
			continue
		}
		fi, err := os.Stat(in)
		if err != nil {
			continue
		}
		if outErr == nil && os.SameFile(fi, outInfo) {
			return in, nil
		}
		if fi.IsDir() {
			if rel, err := filepath.Rel(inAbs, abs); err == nil && filepath.IsLocal(rel) {
				return in, nil
			}
		}
	}
	return "", nil
}
