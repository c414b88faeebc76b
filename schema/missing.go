package schema

import (
	"fmt"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
)

// missingHint rewrites CUE's words for a field without a concrete value
// ("incomplete value string", "cannot convert non-concrete value string")
// into the field's name and what to write there: `name is required and
// missing: write name: followed by a string`; when the user's files give
// the field a value that is not concrete (`name: string`), it says that
// instead. It returns the path the message is about: p, or, when p is an
// element of a list the user's files do not have at all (the first
// element of a required non-empty list such as policy.kinds), the list
// field. Other messages are returned as CUE prints them, at p.
func (l *locator) missingHint(p cue.Path, m cueMessage) (cue.Path, string) {
	msg := m.String()
	want, ok := m.missing()
	if !ok {
		return p, msg
	}
	sels := p.Selectors()
	field := len(sels) - 1
	for field >= 0 && sels[field].LabelType() == cue.IndexLabel {
		field--
	}
	if field < 0 || !isName(sels[field]) {
		return p, msg
	}
	if field < len(sels)-1 {
		list := cue.MakePath(sels[:field+1]...)
		if l.user.LookupPath(list).Exists() {
			// An element of a list the user wrote: named by its index.
			what := describeConstraint(want)
			if l.user.LookupPath(p).Exists() {
				return p, pathString(cue.MakePath(sels[field:]...)) + " has no concrete value: write " + what + " (CUE: " + msg + ")"
			}
			return p, pathString(cue.MakePath(sels[field:]...)) + " is required and missing: write " + what
		}
		name := sels[field].Unquoted()
		return list, name + " is required and missing: write " + name + ": followed by a list of at least one " + elementOf(want)
	}
	name := sels[field].Unquoted()
	what := describeConstraint(want)
	if l.user.LookupPath(p).Exists() {
		return p, name + " has no concrete value: write " + what + " (CUE: " + msg + ")"
	}
	return p, name + " is required and missing: write " + name + ": followed by " + what
}

// isName reports whether sel is a regular field's name, one
// Selector.Unquoted may be asked for (it panics on an index, a
// definition or a pattern).
func isName(sel cue.Selector) bool {
	return sel.LabelType() == cue.StringLabel && sel.ConstraintType() < cue.PatternConstraint
}

// label is sel as a user reads it: a field's name unquoted, anything else
// (an index, a definition) as CUE prints it.
func label(sel cue.Selector) string {
	if isName(sel) {
		return sel.Unquoted()
	}
	return sel.String()
}

// elementOf names a list element's constraint as CUE prints it:
// `"kyverno" | "crio"` is `of "kyverno", "crio"`, anything else as
// describeConstraint says.
func elementOf(c string) string {
	if alts, ok := stringAlternatives(c); ok {
		return "of " + strings.Join(alts, ", ")
	}
	return "element, " + describeConstraint(c)
}

// stringAlternatives splits a disjunction of string literals as CUE
// prints it (`"a" | "b"`) into its quoted alternatives; ok is false for
// anything else.
func stringAlternatives(c string) ([]string, bool) {
	parts := strings.Split(c, "|")
	if len(parts) < 2 {
		return nil, false
	}
	var out []string
	for _, part := range parts {
		part = strings.TrimSpace(part)
		if _, err := strconv.Unquote(part); err != nil || !strings.HasPrefix(part, `"`) {
			return nil, false
		}
		out = append(out, part)
	}
	return out, true
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
	if alts, ok := stringAlternatives(c); ok {
		return "one of " + strings.Join(alts, ", ")
	}
	if strings.HasPrefix(c, "[") {
		return "a list"
	}
	if strings.HasPrefix(c, "{") {
		return "a mapping"
	}
	return "a value of " + c
}

// cueListLengths is CUE's format for a list whose length a closed list
// does not allow: "incompatible list lengths (0 and 1)".
const cueListLengths = "incompatible list lengths (%d and %d)"

// shortList rewrites CUE's "incompatible list lengths" for a list the
// user's files give fewer elements than the schema's open list requires
// (`kinds: []` where the schema says [#AdmissionKind, ...#AdmissionKind])
// into what is missing: `kinds is empty: write at least one of "kyverno",
// ...`. ok is false for any other message.
func (l *locator) shortList(p cue.Path, m cueMessage) (string, bool) {
	sels := p.Selectors()
	if m.format != cueListLengths || len(sels) == 0 || !isName(sels[len(sels)-1]) {
		return "", false
	}
	have, err := l.user.LookupPath(p).Len().Int64()
	if err != nil {
		return "", false
	}
	sch := schemaAt(l.schema, p)
	if sch.IncompleteKind() != cue.ListKind {
		return "", false
	}
	need := 0
	for sch.LookupPath(cue.MakePath(cue.Index(need))).Exists() {
		need++
	}
	if int64(need) <= have || !sch.Allows(cue.Index(need)) {
		return "", false
	}
	elem := fmt.Sprint(sch.LookupPath(cue.MakePath(cue.Index(0))))
	name := sels[len(sels)-1].Unquoted()
	count := "one"
	if need > 1 {
		count = strconv.Itoa(need)
	}
	if have == 0 {
		return fmt.Sprintf("%s is empty: write at least %s %s", name, count, elementOf(elem)), true
	}
	return fmt.Sprintf("%s has %d elements: write at least %s %s", name, have, count, elementOf(elem)), true
}

// notAList rewords a type conflict at a field the schema makes a list
// when the user wrote a single value there (`kinds: "kyverno"`): CUE
// names the list's type as the schema spells it
// ([#AdmissionKind,...#AdmissionKind]); the message says to write a list
// and what its elements are.
func (l *locator) notAList(p cue.Path, m cueMessage) (string, bool) {
	sels := p.Selectors()
	if m.format != cueMismatched || len(sels) == 0 || !isName(sels[len(sels)-1]) {
		return "", false
	}
	sch := schemaAt(l.schema, p)
	if sch.IncompleteKind() != cue.ListKind {
		return "", false
	}
	have := l.user.LookupPath(p)
	if !have.Exists() || have.IncompleteKind() == cue.ListKind {
		return "", false
	}
	elem := sch.LookupPath(cue.MakePath(cue.AnyIndex))
	if !elem.Exists() {
		elem = sch.LookupPath(cue.MakePath(cue.Index(0)))
	}
	name := sels[len(sels)-1].Unquoted()
	msg := fmt.Sprintf("%s is a single %s; write a list (%s: [ … ])", name, have.IncompleteKind(), name)
	if elem.Exists() {
		each := "each element " + describeConstraint(fmt.Sprint(elem))
		if alts, ok := stringAlternatives(fmt.Sprint(elem)); ok {
			each = "each one of " + strings.Join(alts, ", ")
		}
		msg = fmt.Sprintf("%s is a single %s; write a list, %s (%s: [ … ])", name, have.IncompleteKind(), each, name)
	}
	return msg, true
}

// schemaAt is the schema's constraint at p: fields looked up as
// optional fields and through pattern constraints ([string]: #Profile),
// list elements through the list's element type, as LookupPath alone
// does not.
func schemaAt(v cue.Value, p cue.Path) cue.Value {
	for _, s := range p.Selectors() {
		n := v.LookupPath(cue.MakePath(s))
		if !n.Exists() && isName(s) {
			n = v.LookupPath(cue.MakePath(s.Optional()))
		}
		if !n.Exists() {
			pattern := cue.AnyString
			if s.LabelType() == cue.IndexLabel {
				pattern = cue.AnyIndex
			}
			n = v.LookupPath(cue.MakePath(pattern))
		}
		v = n
	}
	return v
}
