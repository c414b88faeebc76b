package schema

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// locator turns CUE paths into file positions, looking them up in the user's
// own values so that positions never point into the embedded schema when
// the user's file has the field.
type locator struct {
	user cue.Value
	// config is user unified with #Config: what the schema allows where.
	config cue.Value
	// schema is #Config alone, for what the schema asks at a path
	// whatever the user wrote there.
	schema cue.Value
	// first is the file named when nothing in the files is closer.
	first string
}

// at returns a located error for path; when path is not in the user's
// files it climbs to the nearest parent that is.
func (l *locator) at(path cue.Path, format string, args ...any) *Error {
	e := &Error{Path: pathString(path), Msg: fmt.Sprintf(format, args...)}
	sels := l.hidden(path.Selectors())
	for n := len(sels); n >= 1; n-- { // the root is every file at once: no place of its own
		v := l.user.LookupPath(cue.MakePath(sels[:n]...))
		if !v.Exists() {
			continue
		}
		if p := userPos(v); p.IsValid() {
			e.File, e.Line, e.Column = p.Filename(), p.Line(), p.Column()
			break
		}
	}
	if e.File == "" {
		e.File = l.first
	}
	return e
}

// hidden replaces each string selector that names a hidden field ("_x",
// as CUE's error paths spell it) by the hidden field's own selector, which
// carries the config's package, so that LookupPath finds it (a structural
// cycle through a hidden field is reported at that field).
func (l *locator) hidden(sels []cue.Selector) []cue.Selector {
	out := slices.Clone(sels)
	for i, sel := range out {
		name, err := strconv.Unquote(sel.String())
		if err != nil {
			name = sel.String()
		}
		if sel.LabelType() != cue.StringLabel || !strings.HasPrefix(name, "_") || strings.HasPrefix(name, "_#") {
			continue
		}
		it, err := l.user.LookupPath(cue.MakePath(out[:i]...)).Fields(cue.Hidden(true))
		if err != nil {
			break
		}
		for it.Next() {
			if it.Selector().String() == name {
				out[i] = it.Selector()
				break
			}
		}
	}
	return out
}

// userPos is the first position of v that is in a user file.
func userPos(v cue.Value) token.Pos {
	if p := v.Pos(); inUserFile(p) {
		return p
	}
	if src := v.Source(); src != nil {
		if p := src.Pos(); inUserFile(p) {
			return p
		}
	}
	_, conjuncts := v.Expr()
	for _, c := range conjuncts {
		if p := c.Pos(); inUserFile(p) {
			return p
		}
	}
	return token.NoPos
}

// inUserFile reports whether p is in a config file: not in the embedded
// schema, and not in a value the loader made itself (those have no file
// name, such as the empty struct the files are unified into).
func inUserFile(p token.Pos) bool {
	return p.IsValid() && p.Filename() != SchemaFile && p.Filename() != ""
}

// fromCUE converts CUE's error list. Each error keeps CUE's own message;
// its path is printed as users read it (profiles.lab.pullers[0].name,
// without the schema's #Config); its position is the first one in a user
// file, never the embedded schema, climbing to the nearest parent the user
// wrote when CUE names none; and the other user positions CUE names (the
// other side of a conflict) are appended as "(see also file:line:col)".
// A conflict between two user files inside an entry of environments,
// images or profiles says that the entry is defined more than once.
func (l *locator) fromCUE(err error) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		m := messageFrom(e)
		p := cuePath(e.Path())
		positions := userPositions(e)
		le := &Error{Path: pathString(p), Msg: m.String(), cue: &m, users: len(positions)}
		_, _, _, conflict := m.conflict()
		switch {
		case isPassword(p):
			le.Msg = redactPassword(m)
		case m.format == cueNotAllowed:
			le.Msg += l.allowedFields(p)
		default:
			if msg, ok := l.shortList(p, m); ok {
				le.Msg = msg
				break
			}
			if msg, ok := l.notAList(p, m); ok {
				le.Msg = msg
				break
			}
			p, le.Msg = l.missingHint(p, m)
			le.Path = pathString(p)
		}
		if conflict && len(positions) >= 2 {
			le.Msg = definedTwice(p) + le.Msg
		}
		if len(positions) > 0 {
			setPos(le, positions[0])
		} else {
			at := l.at(p, "%s", le.Msg)
			le.File, le.Line, le.Column = at.File, at.Line, at.Column
		}
		le.Msg += seeAlso(positions)
		out = append(out, le)
	}
	if len(out) == 0 {
		out = append(out, &Error{Msg: err.Error()})
	}
	return mergeDisjunctions(out)
}

// cueMessage is one CUE error's message as CUE built it: the format and
// the arguments of cue/errors' Msg. A kind of error is told by its format
// (the cue* constants, CUE v0.17.1's internal/core/adt), never by matching
// the rendered English, and its values are the arguments.
type cueMessage struct {
	format string
	args   []any
}

// The formats of the CUE errors stowage rewords.
const (
	cueConflict         = "conflicting values %s and %s" // also "… (mismatched types %s and %s)"
	cueMismatched       = cueConflict + " (mismatched types %s and %s)"
	cueNotAllowed       = "field not allowed"
	cueEmptyDisjunction = "%d errors in empty disjunction:"
	cueIncomplete       = "incomplete value %v"
	cueNonConcrete      = "cannot convert non-concrete value %v" // cue.Value.Decode
)

func messageFrom(e cueerrors.Error) cueMessage {
	format, args := e.Msg()
	return cueMessage{format: format, args: args}
}

// String is the message as CUE prints it.
func (m cueMessage) String() string { return fmt.Sprintf(m.format, m.args...) }

// conflict returns the two values of a "conflicting values A and B"
// error, and whether their types differ.
func (m cueMessage) conflict() (a, b string, mismatched, ok bool) {
	if (m.format != cueConflict && m.format != cueMismatched) || len(m.args) < 2 {
		return "", "", false, false
	}
	return fmt.Sprint(m.args[0]), fmt.Sprint(m.args[1]), m.format == cueMismatched, true
}

// missing returns the constraint a field without a concrete value is left
// at ("string" for "incomplete value string").
func (m cueMessage) missing() (string, bool) {
	if (m.format != cueIncomplete && m.format != cueNonConcrete) || len(m.args) != 1 {
		return "", false
	}
	return fmt.Sprint(m.args[0]), true
}

// firstMessage is the message of err's only CUE error; ok is false when
// err holds none or several.
func firstMessage(err error) (cueMessage, bool) {
	es := cueerrors.Errors(err)
	if len(es) != 1 {
		return cueMessage{}, false
	}
	return messageFrom(es[0]), true
}

// mergeDisjunctions replaces CUE's report of a value that matches none of
// the alternatives of a disjunction — a header ("2 errors in empty
// disjunction:") and one conflict per alternative, all at one path — by
// one error at the value: `"Sometimes" is not allowed here; want one of
// "Equal", "Exists"`. Reports it cannot read that way keep the conflicts
// and lose only the header.
func mergeDisjunctions(errs Errors) Errors {
	byPath := map[string][]*Error{}
	for _, e := range errs {
		byPath[e.Path] = append(byPath[e.Path], e)
	}
	var out Errors
	done := map[string]bool{}
	for _, e := range errs {
		group := byPath[e.Path]
		header := slices.IndexFunc(group, func(e *Error) bool { return e.cue != nil && e.cue.format == cueEmptyDisjunction })
		if header < 0 {
			out = append(out, e)
			continue
		}
		if done[e.Path] {
			continue
		}
		done[e.Path] = true
		alts := slices.Delete(slices.Clone(group), header, header+1)
		alts = userConflicts(alts)
		if merged := mergeConflicts(alts); merged != nil {
			out = append(out, merged)
		} else if len(alts) > 0 {
			out = append(out, alts...)
		} else {
			out = append(out, group[header])
		}
	}
	return out
}

// userConflicts is, of the alternatives of a disjunction that failed,
// the conflicts between two of the user's own values, when there are any:
// two files (or two YAML keys) giving a field "kyverno" and "crio" fail
// every alternative of "kyverno" | "kyverno-ivpol" | "policy-controller" | "crio", and the
// alternatives that pit one user value against a schema value the user
// never wrote ("policy-controller") say nothing the user can act on.
// Otherwise alts is returned as it is.
func userConflicts(alts Errors) Errors {
	var out Errors
	for _, e := range alts {
		if e.cue == nil {
			return alts
		}
		if _, _, _, ok := e.cue.conflict(); ok && e.users >= 2 {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return alts
	}
	return out
}

// mergeConflicts reads errs as "conflicting values A and B" with one value
// common to all (the user's) and returns one error naming it and the
// others, or nil. An error fromCUE reworded (a definition made twice) is
// not read.
func mergeConflicts(errs Errors) *Error {
	var pairs [][2]string
	for _, e := range errs {
		if e.cue == nil || !strings.HasPrefix(e.Msg, e.cue.String()) {
			return nil
		}
		a, b, _, ok := e.cue.conflict()
		if !ok {
			return nil
		}
		pairs = append(pairs, [2]string{a, b})
	}
	if len(pairs) < 2 {
		return nil
	}
	for _, value := range pairs[0] {
		var alts []string
		for _, p := range pairs {
			switch value {
			case p[0]:
				alts = append(alts, p[1])
			case p[1]:
				alts = append(alts, p[0])
			}
		}
		if len(alts) == len(pairs) {
			sort.Strings(alts)
			merged := *errs[0]
			merged.Msg = fmt.Sprintf("%s is not allowed here; want one of %s", value, strings.Join(alts, ", "))
			return &merged
		}
	}
	return nil
}

// allowedFields returns, for a field the closed schema refuses at p, the
// nearest allowed name and the fields allowed beside it:
// `; did you mean "nodeSelector"? (allowed here: auth, image, ...)`.
func (l *locator) allowedFields(p cue.Path) string {
	sels := p.Selectors()
	if len(sels) == 0 || !l.config.Exists() {
		return ""
	}
	parent := l.config.LookupPath(cue.MakePath(sels[:len(sels)-1]...))
	iter, err := parent.Fields(cue.Optional(true))
	if err != nil {
		return ""
	}
	var allowed []string
	for iter.Next() {
		if declared(iter.Value()) {
			allowed = append(allowed, strings.TrimSuffix(iter.Selector().String(), "?"))
		}
	}
	if len(allowed) == 0 {
		return ""
	}
	sort.Strings(allowed)
	return suggest(label(sels[len(sels)-1]), allowed) + " (allowed here: " + strings.Join(allowed, ", ") + ")"
}

// messageOf is err's message without the path CUE puts in front of it.
func messageOf(err error) string {
	var msgs []string
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		if m := fmt.Sprintf(format, args...); m != "" {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		return err.Error()
	}
	return strings.Join(msgs, "; ")
}

// isPassword reports whether p is a field whose value must never reach an
// error message: an auth.password field, anything inside one, or an auth
// field itself (a password written in place of the auth struct, such as
// auth: "hunter2"), of an environment or a catalogue image.
func isPassword(p cue.Path) bool {
	sels := p.Selectors()
	for i := 2; i < len(sels); i++ {
		if sels[i].String() != "auth" {
			continue
		}
		if owner := sels[i-2].String(); owner != "environments" && owner != "images" {
			continue
		}
		if i == len(sels)-1 || sels[i+1].String() == "password" {
			return true
		}
	}
	return false
}

// redactPassword replaces CUE's message about a password field (or an
// auth field that is not a struct), which quotes the values, by one that
// does not.
func redactPassword(m cueMessage) string {
	if _, _, mismatched, ok := m.conflict(); ok && !mismatched {
		return "conflicting values (not shown: this is a password field)"
	}
	return `invalid value (not shown: it may be a password); auth is {secret: NAME} or {username: USER, password: SOURCE}, and a password source is "env:VARIABLE" or "file:path"`
}

// declared reports whether the schema contributes to v: whether v's field
// is one the schema declares rather than one only a user file has.
func declared(v cue.Value) bool {
	if p := v.Pos(); p.IsValid() && p.Filename() == SchemaFile {
		return true
	}
	_, conjuncts := v.Expr()
	for _, c := range conjuncts {
		if p := c.Pos(); p.IsValid() && p.Filename() == SchemaFile {
			return true
		}
	}
	return false
}

// fromCUEList converts errors that are not tied to a unified value (syntax
// errors); file is used when CUE gives no position.
func fromCUEList(err error, file string) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		le := &Error{Path: pathString(cuePath(e.Path())), Msg: fmt.Sprintf(format, args...), File: file}
		if le.Msg == "" {
			// A plain error wrapped by CUE, such as the YAML decoder's
			// "file:line: message".
			le.Msg = e.Error()
			if rest, ok := strings.CutPrefix(le.Msg, file+":"); ok && file != "" {
				if line, msg, ok := strings.Cut(rest, ": "); ok {
					if n, err := strconv.Atoi(line); err == nil {
						le.Line, le.Msg = n, msg
					}
				}
				if msg, ok := strings.CutPrefix(le.Msg, file+": "); ok {
					le.Msg = msg // "file: message" with no line: name the file once
				}
			}
		}
		positions := userPositions(e)
		if len(positions) > 0 {
			setPos(le, positions[0])
		}
		le.Msg += seeAlso(positions)
		out = append(out, le)
	}
	if len(out) == 0 {
		// The decoder may name the file itself ("f.yaml: exceeded max
		// depth"); the Error names it once.
		out = append(out, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), file+": ")})
	}
	return out
}

// userPositions returns the positions of e that are in user files: its
// own position first when it is one, then the others sorted by file, line
// and column, without repeats.
func userPositions(e cueerrors.Error) []token.Pos {
	user := inUserFile
	var first []token.Pos
	if user(e.Position()) {
		first = append(first, e.Position())
	}
	var rest []token.Pos
	for _, p := range e.InputPositions() {
		if user(p) {
			rest = append(rest, p)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return posLess(rest[i], rest[j]) })
	var out []token.Pos
	seen := map[string]bool{}
	for _, p := range append(first, rest...) {
		if k := posString(p); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

func posLess(a, b token.Pos) bool {
	if a.Filename() != b.Filename() {
		return a.Filename() < b.Filename()
	}
	if a.Line() != b.Line() {
		return a.Line() < b.Line()
	}
	return a.Column() < b.Column()
}

func posString(p token.Pos) string {
	return fmt.Sprintf("%s:%d:%d", p.Filename(), p.Line(), p.Column())
}

func setPos(e *Error, p token.Pos) {
	e.File, e.Line, e.Column = p.Filename(), p.Line(), p.Column()
}

// seeAlso lists the positions after the first: " (see also a:1:2, b:3:4)".
func seeAlso(positions []token.Pos) string {
	if len(positions) < 2 {
		return ""
	}
	var ss []string
	for _, p := range positions[1:] {
		ss = append(ss, posString(p))
	}
	return " (see also " + strings.Join(ss, ", ") + ")"
}

// definedTwice prefixes a conflict inside a named entry, e.g.
// `environment "jupyter" is defined more than once, with different values
// for image: `; "" when p is not inside one.
func definedTwice(p cue.Path) string {
	sels := p.Selectors()
	nouns := map[string]string{"environments": "environment", "images": "image", "profiles": "profile"}
	if len(sels) < 2 || nouns[sels[0].String()] == "" {
		return ""
	}
	msg := fmt.Sprintf("%s %q is defined more than once", nouns[sels[0].String()], label(sels[1]))
	if len(sels) > 2 {
		msg += ", with different values for " + pathString(cue.MakePath(sels[2:]...))
	}
	return msg + ": "
}

// cuePath turns the path elements of a CUE error into a path relative to
// the config: a leading #Config is dropped, list indexes ("0") become index
// selectors and quoted labels ("\"jupyter-gpu\"") are unquoted.
func cuePath(elems []string) cue.Path {
	var sels []cue.Selector
	for i, e := range elems {
		switch {
		case i == 0 && e == "#Config":
		case e != "" && strings.Trim(e, "0123456789") == "":
			n, _ := strconv.Atoi(e)
			sels = append(sels, cue.Index(n))
		case strings.HasPrefix(e, `"`):
			if u, err := strconv.Unquote(e); err == nil {
				e = u
			}
			sels = append(sels, cue.Str(e))
		case strings.HasPrefix(e, "#"):
			sels = append(sels, cue.Def(e))
		default:
			sels = append(sels, cue.Str(e))
		}
	}
	return cue.MakePath(sels...)
}

// pathString prints a path the way users read it: profiles.lab.pullers[0].name.
func pathString(p cue.Path) string {
	var b strings.Builder
	for i, s := range p.Selectors() {
		if s.Type() == cue.IndexLabel {
			fmt.Fprintf(&b, "[%d]", s.Index())
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}
