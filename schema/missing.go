package schema

import (
	"strings"

	"cuelang.org/go/cue"
)

// missingHint rewrites CUE's words for a field without a concrete value
// ("incomplete value string", "cannot convert non-concrete value string")
// into the field's name and what to write there: `name is required and
// missing: write name: followed by a string`; when the user's files give
// the field a value that is not concrete (`name: string`), it says that
// instead. Other messages are returned as CUE prints them.
func (l *locator) missingHint(p cue.Path, m cueMessage) string {
	msg := m.String()
	want, ok := m.missing()
	if !ok {
		return msg
	}
	sels := p.Selectors()
	if len(sels) == 0 {
		return msg
	}
	name := sels[len(sels)-1].Unquoted()
	what := describeConstraint(want)
	if l.user.LookupPath(p).Exists() {
		return name + " has no concrete value: write " + what + " (CUE: " + msg + ")"
	}
	return name + " is required and missing: write " + name + ": followed by " + what
}

// describeConstraint names, for a user, the values a schema constraint as
// CUE prints it accepts: `!=""` is a non-empty string.
func describeConstraint(c string) string {
	switch c = strings.TrimSpace(c); c {
	case "string":
		return "a string"
	case `!=""`, `string & !=""`:
		return "a non-empty string"
	case "int", "int64", "uint", ">=0", "int & >=0":
		return "a whole number"
	case "bool":
		return "true or false"
	case "number", "float":
		return "a number"
	}
	if strings.HasPrefix(c, "[") {
		return "a list"
	}
	if strings.HasPrefix(c, "{") {
		return "a mapping"
	}
	return "a value of " + c
}
