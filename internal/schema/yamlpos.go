package schema

import (
	"errors"
	"strings"

	goccyyaml "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
)

// yamlProblem locates a YAML syntax error that CUE's decoder reported in
// errs, the errors of decoding data. CUE's YAML decoder (yaml.v3) names the
// line of the enclosing block when it knows one, not the line at fault: a
// field indented one space short on line 11, in a list that starts on line
// 7, is reported at line 6. The same bytes are parsed again with
// goccy/go-yaml, whose syntax errors carry the token at fault; when that
// token's line is after the line CUE named (the problem lies inside the
// block CUE named, so a later line is nearer to it), the error moves to
// that token's line and column. The message stays CUE's: the decoder
// whose verdict counts says what is wrong, and it quotes no value of the
// file (which, unparsed, cannot be redacted). Otherwise, or when the
// second parser finds no syntax error, errs is returned as it is.
func yamlProblem(errs Errors, data []byte) Errors {
	if len(errs) != 1 {
		return errs
	}
	line, col, ok := yamlSyntaxAt(data)
	if !ok || line <= errs[0].Line {
		return errs
	}
	// Without a line, CUE's message starts with the file name.
	msg := strings.TrimPrefix(errs[0].Msg, errs[0].File+": ")
	return Errors{{File: errs[0].File, Line: line, Column: col, Path: errs[0].Path, Msg: msg}}
}

// yamlSyntaxAt parses data with goccy/go-yaml and returns the 1-based line
// and column of the token its syntax error names; ok is false when data
// parses, fails with another error or makes the parser panic. data is the
// file's bytes as already read (bounded by the loader's limits).
func yamlSyntaxAt(data []byte) (line, col int, ok bool) {
	defer func() {
		if recover() != nil {
			line, col, ok = 0, 0, false
		}
	}()
	_, err := goccyparser.ParseBytes(data, 0)
	var se *goccyyaml.SyntaxError
	if !errors.As(err, &se) || se.Token == nil || se.Token.Position == nil || se.Token.Position.Line < 1 {
		return 0, 0, false
	}
	return se.Token.Position.Line, max(se.Token.Position.Column, 0), true
}
