package schema

import (
	"fmt"
	"strings"

	"github.com/stowage/stowage/internal/yamlpos"
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
	// A character YAML does not allow: both decoders name no line, and
	// CUE's message names the file again.
	if strings.HasSuffix(errs[0].Msg, yamlpos.ControlProblem) {
		if line, col, r, ok := yamlpos.Control(data); ok {
			return Errors{{File: errs[0].File, Line: line, Column: col, Msg: fmt.Sprintf("%U is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)", r)}}
		}
	}
	line, ok := yamlpos.Line(data)
	if !ok || line <= errs[0].Line {
		return errs
	}
	// Without a line, CUE's message starts with the file name.
	msg := strings.TrimPrefix(errs[0].Msg, errs[0].File+": ")
	return Errors{{File: errs[0].File, Line: line, Path: errs[0].Path, Msg: msg}}
}
