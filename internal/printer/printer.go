// Package printer is stowage's one way to print a report: every command
// that prints one takes -o text|json|yaml and hands the report, a type in
// api/v1alpha1, to Print. JSON is escape.WriteJSON's; YAML is the same
// document in block style, keys in the JSON's order, so that `-o yaml`
// and `-o json` carry the same keys and values (as kubectl's do); text is
// the report's own WriteText. No format lets untrusted text reach a
// terminal raw: JSON writes it as \u escapes, YAML as double-quoted
// escapes, text through internal/escape.
package printer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/escape"
)

// Formats are the values of -o on every command that prints a report.
var Formats = []string{"text", "json", "yaml"}

// Texter is a report that prints itself for a terminal. WriteText must
// escape untrusted text (internal/escape).
type Texter interface {
	WriteText(w io.Writer) error
}

// Check returns an error naming flag when value is not one of formats
// (Formats when none is given).
func Check(flag, value string, formats ...string) error {
	if len(formats) == 0 {
		formats = Formats
	}
	if slices.Contains(formats, value) {
		return nil
	}
	return fmt.Errorf("%s %s: not a format; want one of %s", flag, escape.Line(fmt.Sprintf("%q", value)), strings.Join(formats, ", "))
}

// Print writes report to w in format: "json" (escape.WriteJSON), "yaml"
// (the JSON document as block YAML) or "text" (report's WriteText; an
// error when report has none). Any other format is an error.
func Print(w io.Writer, format string, report any) error {
	switch format {
	case "json":
		return escape.WriteJSON(w, report)
	case "yaml":
		return WriteYAML(w, report)
	case "text":
		t, ok := report.(Texter)
		if !ok {
			return fmt.Errorf("a %T has no text form; use -o json or -o yaml", report)
		}
		return t.WriteText(w)
	}
	return Check("-o", format)
}

// WriteYAML writes v as one YAML document: v's JSON encoding (its json
// tags, omitempty and MarshalJSON apply) in block style, mappings in the
// JSON's key order, indented by two spaces. A string holding a character
// escape.Text escapes (a control, a bidirectional or zero-width format
// character) is written double-quoted with that character as a YAML
// escape (\x1b, \u202e), which a YAML decoder reads back as the same
// string.
func WriteYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	node, err := nodeOf(dec)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(node); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write(yamlSafe(buf.Bytes()))
	return err
}

// nodeOf reads one JSON value from dec as a YAML node.
func nodeOf(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("printer: a JSON key that is not a string")
				}
				val, err := nodeOf(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, stringNode(k), val)
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				val, err := nodeOf(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, val)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("printer: unexpected %v", t)
	case string:
		return stringNode(t), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("printer: unexpected JSON token %T", tok)
}

// stringNode is s as a string scalar: double-quoted when it holds a
// character that may not reach a terminal raw, so that yamlSafe can write
// that character as an escape, or when a YAML 1.1 decoder would read it
// as a boolean.
func stringNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if escape.Text(s) != s || yaml11Bool[strings.ToLower(s)] {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// yaml11Bool are the strings YAML 1.1 reads as booleans (yaml.org/type/bool),
// which a YAML 1.2 encoder leaves plain but kubectl's and PyYAML's decoders
// would read as true or false.
var yaml11Bool = map[string]bool{"y": true, "yes": true, "n": true, "no": true, "on": true, "off": true}

// yamlSafe rewrites every rune at or above DEL that escape.Text escapes
// as a YAML escape. Such a rune is only ever inside a double-quoted
// scalar (stringNode), where \x, \u and \U escapes mean the character.
func yamlSafe(b []byte) []byte {
	if !utf8.Valid(b) || !hasUnsafe(b) {
		return b
	}
	var out bytes.Buffer
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s := string(b[:n])
		switch {
		case r >= 0x7f && escape.Text(s) != s && r > 0xffff:
			fmt.Fprintf(&out, `\U%08x`, r)
		case r >= 0x7f && escape.Text(s) != s:
			fmt.Fprintf(&out, `\u%04x`, r)
		default:
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.Bytes()
}

func hasUnsafe(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if s := string(b[:n]); r >= 0x7f && escape.Text(s) != s {
			return true
		}
		b = b[n:]
	}
	return false
}

// Keys returns the top-level keys of report's JSON encoding, from its
// type's json tags in field order, as a command's --help lists them:
// "{profile, ready, images}". Embedded structs' keys are included; fields
// tagged "-" are not. An error when report is not a struct.
func Keys(report any) (string, error) {
	t := reflect.TypeOf(report)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return "", errors.New("printer.Keys: not a struct")
	}
	return "{" + strings.Join(keys(t), ", ") + "}", nil
}

// MustKeys is Keys for a report type known at compile time; it panics on
// a type that is not a struct, a programming error.
func MustKeys(report any) string {
	k, err := Keys(report)
	if err != nil {
		panic(err)
	}
	return k
}

func keys(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.Contains(tag, ",") {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, keys(ft)...)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
