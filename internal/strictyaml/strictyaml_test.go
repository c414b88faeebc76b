package strictyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type platform struct {
	Platform string `yaml:"platform"`
	Size     int64  `yaml:"size,omitempty"`
}

type meta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type doc struct {
	TypeMeta `json:",inline"`
	Metadata meta       `yaml:"metadata"`
	Items    []platform `yaml:"items"`
	Ready    bool       `yaml:"ready"`
	Count    *uint8     `json:"count,omitempty"`
	Extra    any        `yaml:"extra"`
}

type TypeMeta struct {
	Kind string `json:"kind"`
}

// decode parses and decodes data into a doc.
func decode(t *testing.T, data string, lim Limits) (doc, error) {
	t.Helper()
	var d doc
	n, err := Parse([]byte(data), "f.yaml")
	if err != nil {
		return d, err
	}
	return d, Decode(n, &d, Options{File: "f.yaml", Limits: lim})
}

// TestDecode: a document of every kind of field decodes, inline and json
// names included.
func TestDecode(t *testing.T) {
	t.Parallel()
	d, err := decode(t, "kind: K\nmetadata:\n  name: m\n  labels: {a: b}\nitems:\n- platform: linux/amd64\n  size: 0x10\n- platform: 2024-01-01\nready: true\ncount: 7\nextra: {a: [1, x, null]}\n", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %v %v %v %d %v", d.Kind, d.Metadata.Name, d.Metadata.Labels, d.Items, d.Ready, *d.Count, d.Extra)
	if want := "K m map[a:b] [{linux/amd64 16} {2024-01-01 0}] true 7 map[a:[1 x <nil>]]"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestProblems: each problem at its line and column with its path, all
// of them in document order, in words that name no Go type.
func TestProblems(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, data, want string }{
		{"unknown field with a suggestion", "kind: K\nmetadta:\n  name: x\n",
			`f.yaml:2:1: metadta: field not allowed; did you mean "metadata"? (allowed here: count, extra, items, kind, metadata, ready)`},
		{"unknown field far from any", "zzzzzzzzzz: 1\n",
			`f.yaml:1:1: zzzzzzzzzz: field not allowed (allowed here: count, extra, items, kind, metadata, ready)`},
		{"duplicate key at its line", "kind: K\nready: true\nkind: L\n",
			`f.yaml:3:1: kind: duplicate key "kind": this mapping gives it at line 1 and again at line 3; a key appears once in a mapping (keep one)`},
		{"duplicate map key", "metadata:\n  labels:\n    a: b\n    a: c\n",
			`f.yaml:4:5: metadata.labels.a: duplicate key "a": this mapping gives it at line 3 and again at line 4; a key appears once in a mapping (keep one)`},
		{"wrong type at its line", "items:\n- platform: linux/amd64\n  size: big\n",
			`f.yaml:3:9: items[0].size: a string where an integer is expected`},
		{"number for a string", "kind: 1.28\n",
			`f.yaml:1:7: kind: a number where a string is expected (write it in quotes to make it a string)`},
		{"list for a mapping", "metadata: [a]\n",
			`f.yaml:1:11: metadata: a list where a mapping is expected`},
		{"negative for unsigned", "count: -1\n",
			`f.yaml:1:8: count: a negative or too large integer where an integer of 0 or more is expected`},
		{"too large", "count: 300\n",
			`f.yaml:1:8: count: a negative or too large integer where an integer of 0 or more is expected`},
		{"boolean", "ready: maybe\n",
			`f.yaml:1:8: ready: a string where true or false is expected`},
		{"custom tag", "kind: !x K\n",
			`f.yaml:1:7: kind: a value with a custom tag where a string is expected`},
		{"merge key", "metadata:\n  <<: {name: a}\n",
			`f.yaml:2:3: metadata: a merge key (<<), which is not allowed here; write the fields out`},
		{"several, in order", "kind: [1]\nbogus: 1\nready: 2\n",
			"f.yaml:1:7: kind: a list where a string is expected\nf.yaml:2:1: bogus: field not allowed (allowed here: count, extra, items, kind, metadata, ready)\nf.yaml:3:8: ready: an integer where true or false is expected"},
	} {
		_, err := decode(t, c.data, Limits{})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got\n%v\nwant\n%s", c.name, err, c.want)
		}
		var e *Error
		if !errors.As(err, &e) || e.File != "f.yaml" || e.Line == 0 {
			t.Errorf("%s: %v is not a located *Error", c.name, err)
		}
	}
}

// aliasBomb is a "billion laughs" document: levels of ten aliases each.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "extra: *a%d\n", levels)
	return b.String()
}

// TestAliasBomb: aliases expanding to 10^10 nodes are refused after the
// first Limits.Aliases of them, in milliseconds; a few aliases decode.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := decode(t, "metadata: {name: x}\n"+aliasBomb(9), Limits{})
	if err == nil || !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "aliases expand to more than 50000 nodes, the limit") {
		t.Fatalf("got %v, want the alias limit", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing the bomb took %v", d)
	}
	if _, err := decode(t, "metadata: &m {name: x}\nextra: *m\n", Limits{}); err != nil {
		t.Errorf("one alias: %v", err)
	}
	if _, err := decode(t, aliasBomb(2), Limits{Aliases: 200}); err == nil || !errors.Is(err, ErrLimit) {
		t.Errorf("a lower bound: %v", err)
	}
}

// TestDepthAndNodes: nesting past Limits.Depth and nodes past
// Limits.Nodes stop the walk at the node at fault.
func TestDepthAndNodes(t *testing.T) {
	t.Parallel()
	deep := "extra: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"
	_, err := decode(t, deep, Limits{})
	if err == nil || !errors.Is(err, ErrLimit) || !strings.HasPrefix(err.Error(), "f.yaml:1:") || !strings.Contains(err.Error(), "nested more than 100 deep, the limit") {
		t.Errorf("depth: %v", err)
	}
	if _, err := decode(t, "extra: [[[[1]]]]\n", Limits{Depth: 3}); err == nil || !strings.Contains(err.Error(), "nested more than 3 deep") {
		t.Errorf("depth 3: %v", err)
	}
	_, err = decode(t, "items:\n"+strings.Repeat("- platform: x\n", 100), Limits{Nodes: 50})
	if err == nil || !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "the document holds more than 50 nodes, the limit") {
		t.Errorf("nodes: %v", err)
	}
}

// TestParse: one document, or an error at its line.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data string
		is   error
		want string
	}{
		{"", ErrEmpty, "f.yaml: no YAML document"},
		{"a: 1\n---\nb: 2\n", ErrDocuments, "f.yaml:3: more than one YAML document"},
		{"a:\n  b: 1\n  c:\n  - x: 1\n    y: 2\n   z: 3\n", nil, "f.yaml:6: did not find expected key"},
		{"a: \"b\x01\"\n", nil, "f.yaml:1:6: U+0001 is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)"},
	} {
		_, err := Parse([]byte(c.data), "f.yaml")
		if err == nil || err.Error() != c.want || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("Parse(%q) = %v, want %s", c.data, err, c.want)
		}
	}
}

// TestExpanded: a bomb of 10^10 nodes is counted only past the bound, in
// milliseconds; plain YAML is not parsed.
func TestExpanded(t *testing.T) {
	t.Parallel()
	start := time.Now()
	if n, ok := Expanded([]byte(aliasBomb(9)), 1_000_000); ok || n <= 1_000_000 {
		t.Errorf("bomb: %d, %v", n, ok)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if n, ok := Expanded([]byte(aliasBomb(2)), 1_000_000); !ok || n < 100 {
		t.Errorf("small: %d, %v", n, ok)
	}
	if n, ok := Expanded([]byte("a: [b, c]\n"), 1); !ok || n != 0 {
		t.Errorf("no aliases: %d, %v", n, ok)
	}
}
