package schema

import (
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
)

// yamlProblem locates a YAML syntax error that CUE's decoder reported in
// errs, the errors of decoding data. CUE's YAML decoder (yaml.v3) names the
// line where the enclosing block starts when it knows one, not the line at
// fault: a field indented one space short on line 11, in a list that
// starts on line 7, is reported at line 6. yaml.v2, the same libyaml port
// before that change, names the token at fault; the same bytes (already
// read and bounded; v2 is linear in them and refuses nesting past 10,000)
// are parsed again with it, and when its line is after the line CUE named
// (the problem lies inside the block CUE named, so a later line is nearer
// to it) the error moves there. The message stays CUE's: the decoder whose
// verdict counts says what is wrong. Otherwise errs is returned as it is.
func yamlProblem(errs Errors, data []byte) Errors {
	if len(errs) != 1 {
		return errs
	}
	line, ok := yamlV2Line(data)
	if !ok || line <= errs[0].Line {
		return errs
	}
	// Without a line, CUE's message starts with the file name.
	msg := strings.TrimPrefix(errs[0].Msg, errs[0].File+": ")
	return Errors{{File: errs[0].File, Line: line, Path: errs[0].Path, Msg: msg}}
}

// yamlV2ParserProblems are the problems yaml.v2's parser (parserc.go of
// v2.4.4) reports; every other syntax problem is its scanner's.
var yamlV2ParserProblems = map[string]bool{
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

// yamlV2Line parses data with yaml.v2 and returns the 1-based line of its
// syntax error; ok is false when data parses, fails otherwise (a type
// error, the depth limit) or the error names no line. yaml.v2 says
// "yaml: line N: PROBLEM" with N counted from 1 for its scanner's problems
// but from 0 for its parser's (it names the problem's mark, which counts
// from 0, and adds 1 only for the scanner), so N+1 for those.
func yamlV2Line(data []byte) (line int, ok bool) {
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
	if yamlV2ParserProblems[problem] {
		n++
	}
	return n, true
}
