package lock

import (
	"strconv"
	"strings"

	"github.com/stowage/stowage/internal/yamlenc"
)

// canonicalHead is the start of every lock file Marshal writes with at
// least one entry; an empty lock ends "images: []".
const canonicalHead = "apiVersion: " + APIVersion + "\nkind: " + ObjectKind + "\nmetadata:\n  name: " + ObjectName +
	"\n  annotations:\n    " + LocalConfigAnnotation + ": \"true\"\nspec:\n  images:\n"

// parseCanonical reads a lock file that is byte for byte what Marshal
// writes — every lock stowage writes, unless a person edited it — without
// a YAML parser, which was most of Parse's cost (a lock of 2,000 images is
// read by every render, vet, bump and KRM function run). It returns ok
// false, and Parse then reads the file the general way with every error
// located, for anything else: another layout or field order, a quoted,
// numeric or otherwise non-plain string (see yamlenc.IsPlain), entries or
// platforms out of order or repeated, or an entry that breaks a rule of
// Entry.Validate. So a lock it accepts is exactly the Lock Parse would
// return; TestCanonicalMatchesParse checks that.
func parseCanonical(data []byte) (*Lock, bool) {
	s := string(data)
	if s == canonicalHead[:len(canonicalHead)-1]+" []\n" {
		return &Lock{}, true
	}
	rest, ok := strings.CutPrefix(s, canonicalHead)
	if !ok || rest == "" {
		return nil, false
	}
	// line consumes one line "<prefix><value>\n" and returns the value.
	line := func(prefix string) (string, bool) {
		r, ok := strings.CutPrefix(rest, prefix)
		if !ok {
			return "", false
		}
		v, after, ok := strings.Cut(r, "\n")
		if !ok || v == "" {
			return "", false
		}
		rest = after
		return v, true
	}
	str := func(prefix string) (string, bool) {
		v, ok := line(prefix)
		return v, ok && yamlenc.IsPlain(v)
	}
	size := func(prefix string) (int64, bool) {
		v, ok := line(prefix)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		// Marshal writes a size only when it is not 0, in decimal.
		return n, err == nil && n != 0 && strconv.FormatInt(n, 10) == v
	}
	l := &Lock{}
	for rest != "" {
		var e Entry
		var kind string
		var ok bool
		if e.Name, ok = str("  - name: "); !ok {
			return nil, false
		}
		if e.Reference, ok = str("    reference: "); !ok {
			return nil, false
		}
		if e.Digest, ok = str("    digest: "); !ok {
			return nil, false
		}
		if kind, ok = str("    kind: "); !ok {
			return nil, false
		}
		e.Kind = Kind(kind)
		if r, found := strings.CutPrefix(rest, "    platforms:\n"); found {
			rest = r
			for strings.HasPrefix(rest, "    - platform: ") {
				var p Platform
				if p.Platform, ok = str("    - platform: "); !ok {
					return nil, false
				}
				if p.Digest, ok = str("      digest: "); !ok {
					return nil, false
				}
				if strings.HasPrefix(rest, "      size: ") {
					if p.Size, ok = size("      size: "); !ok {
						return nil, false
					}
				}
				if n := len(e.Platforms); n > 0 && e.Platforms[n-1].Platform >= p.Platform {
					return nil, false // Marshal sorts platforms; a repeat is an error
				}
				e.Platforms = append(e.Platforms, p)
			}
			if len(e.Platforms) == 0 {
				return nil, false
			}
		}
		if strings.HasPrefix(rest, "    size: ") {
			if e.Size, ok = size("    size: "); !ok {
				return nil, false
			}
		}
		if n := len(l.Entries); n > 0 && l.Entries[n-1].Name >= e.Name {
			return nil, false // Marshal sorts entries; a repeated name is an error
		}
		if len(e.problems()) > 0 {
			return nil, false
		}
		l.Entries = append(l.Entries, e)
	}
	return l, true
}
