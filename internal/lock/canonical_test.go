package lock

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCanonicalMatchesParse checks that the canonical fast path of Parse
// accepts only files Marshal writes, and then returns what the general
// parser returns: on the examples' locks, on Marshal's output for odd
// entries, and on every one-line edit of a lock.
func TestCanonicalMatchesParse(t *testing.T) {
	var files [][]byte
	locks, _ := filepath.Glob("../../examples/*/stowage.lock.yaml")
	more, _ := filepath.Glob("../../examples/*/*/stowage.lock.yaml")
	for _, p := range append(locks, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := parseCanonical(b); !ok {
			t.Errorf("%s: the fast path refused a lock stowage wrote", p)
		}
		files = append(files, b)
	}
	if len(files) == 0 {
		t.Fatal("no example locks found")
	}
	d := "sha256:" + strings.Repeat("0a", 32)
	for _, s := range []string{"1", "true", "a b", "'q'", "é", "-", "127.0.0.1:5000/x:y", "2001-01-01", "0x1F", "1e3", "null", "~", "on"} {
		l := &Lock{Entries: []Entry{{Name: s, Reference: s, Digest: d, Kind: KindManifest, Size: 5}, {Name: "z" + s, Reference: s, Digest: s, Kind: Kind(s), Platforms: []Platform{{Platform: s, Digest: s, Size: 1}}}}}
		files = append(files, l.Marshal())
	}
	files = append(files, (&Lock{}).Marshal())
	// Every one-line edit of the first example lock: a line dropped,
	// doubled, or changed to a neighbour's value.
	base := files[0]
	lines := bytes.SplitAfter(base, []byte("\n"))
	for i := range lines {
		drop := bytes.Join(append(append([][]byte{}, lines[:i]...), lines[i+1:]...), nil)
		double := bytes.Join(append(append(append([][]byte{}, lines[:i+1]...), lines[i]), lines[i+1:]...), nil)
		files = append(files, drop, double)
		if i+1 < len(lines) {
			swap := append([][]byte{}, lines...)
			swap[i], swap[i+1] = swap[i+1], swap[i]
			files = append(files, bytes.Join(swap, nil))
		}
		for _, repl := range [][2]string{{"size: ", "size: 0"}, {"size: ", "size: -"}, {"kind: ", "kind: x"}, {"digest: sha256:", "digest: sha256:A"}, {": ", ": \""}, {"platform: linux/", "platform: linux/amd64/"}} {
			if bytes.Contains(lines[i], []byte(repl[0])) {
				edit := append([][]byte{}, lines...)
				edit[i] = bytes.Replace(lines[i], []byte(repl[0]), []byte(repl[1]), 1)
				files = append(files, bytes.Join(edit, nil))
			}
		}
	}
	for _, data := range files {
		fast, ok := parseCanonical(data)
		if !ok {
			continue
		}
		if got := fast.Marshal(); !bytes.Equal(got, data) {
			t.Errorf("fast path accepted a file Marshal does not write:\n%s\nMarshal writes:\n%s", data, got)
			continue
		}
		full, err := parseGeneral(data, "f")
		if err != nil {
			t.Errorf("fast path accepted a file the general parser refuses (%v):\n%s", err, data)
			continue
		}
		if !reflect.DeepEqual(fast, full) {
			t.Errorf("fast path and general parser differ on\n%s\nfast %+v\nfull %+v", data, fast, full)
		}
	}
}
