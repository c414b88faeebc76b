// Package yamlpos names the line of a YAML syntax error at the token at
// fault. yaml.v3 (behind internal/strictyaml and CUE's YAML decoder)
// names the line where the enclosing block starts when it knows one: a
// field indented one space short on line 11, in a list that starts on line
// 7, is reported at line 6. yaml.v2, the same libyaml port before that
// change, names the token at fault; Line parses the same bytes (already
// read and bounded; v2 is linear in them and refuses nesting past 10,000)
// with it.
package yamlpos

import (
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// parserProblems are the problems yaml.v2's parser (parserc.go of
// v2.4.4) reports; every other syntax problem is its scanner's.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected key":              true,
	"did not find expected '-' indicator":    true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
	"found undefined tag handle":             true,
}

// Line parses data with yaml.v2 and returns the 1-based line of its
// syntax error; ok is false when data parses, fails otherwise (a type
// error, the depth limit) or the error names no line. yaml.v2 says
// "yaml: line N: PROBLEM" with N counted from 1 for its scanner's problems
// but from 0 for its parser's (it names the problem's mark, which counts
// from 0, and adds 1 only for the scanner), so N+1 for those.
func Line(data []byte) (line int, ok bool) {
	defer func() {
		if recover() != nil {
			line, ok = 0, false
		}
	}()
	var doc struct{}
	err := yamlv2.Unmarshal(data, &doc)
	if err == nil {
		return 0, false
	}
	rest, found := strings.CutPrefix(err.Error(), "yaml: line ")
	if !found {
		return 0, false
	}
	num, problem, found := strings.Cut(rest, ": ")
	n, convErr := strconv.Atoi(num)
	if !found || convErr != nil || n < 1 {
		return 0, false
	}
	if parserProblems[problem] {
		n++
	}
	return n, true
}

// ControlProblem is the message of yaml.v2 and yaml.v3 for a character
// YAML does not allow; it names no line.
const ControlProblem = "control characters are not allowed"

// Control returns the 1-based line and column (in characters) of the
// first character of data that YAML does not allow, and that character;
// ok is false when there is none. The rule is yaml.v3's reader's (YAML
// 1.2's printable set): tab, line feed, carriage return, U+0020–U+007E,
// U+0085, U+00A0–U+D7FF, U+E000–U+FFFD and U+10000–U+10FFFF. Bytes that
// are not UTF-8 are not this function's to judge and are skipped.
func Control(data []byte) (line, col int, r rune, ok bool) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		c, size := utf8.DecodeRune(data[i:])
		i += size
		switch {
		case c == utf8.RuneError && size <= 1:
		case c == '\n':
			line, col = line+1, 1
			continue
		case !printable(c):
			return line, col, c, true
		}
		col++
	}
	return 0, 0, 0, false
}

func printable(c rune) bool {
	return c == '\t' || c == '\r' || c >= 0x20 && c <= 0x7e || c == 0x85 ||
		c >= 0xa0 && c <= 0xd7ff || c >= 0xe000 && c <= 0xfffd || c >= 0x10000 && c <= 0x10ffff
}
