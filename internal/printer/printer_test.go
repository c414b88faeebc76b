package printer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

type report struct {
	OK      bool              `json:"ok"`
	Name    string            `json:"name"`
	Size    float64           `json:"size"`
	Errors  []inner           `json:"errors"`
	Labels  map[string]string `json:"labels,omitempty"`
	Skipped string            `json:"-"`
}

func TestWriteYAMLSameAsJSON(t *testing.T) {
	r := report{OK: true, Name: "evil\x1b[31m\u202e\U000E0001 name", Size: 1.5, Errors: []inner{{File: "a.cue", Line: 3}, {File: "multi\nline"}},
		Labels: map[string]string{"z": "1", "a": "yes"}}
	var y bytes.Buffer
	if err := WriteYAML(&y, r); err != nil {
		t.Fatal(err)
	}
	want := "ok: true\n" +
		`name: "evil\e[31m\u202e\U000E0001 name"` + "\n" +
		"size: 1.5\n" +
		"errors:\n  - file: a.cue\n    line: 3\n  - file: |-\n      multi\n      line\n" +
		"labels:\n  a: \"yes\"\n  z: \"1\"\n"
	if y.String() != want {
		t.Fatalf("yaml:\n%s\nwant:\n%s", y.String(), want)
	}
	for _, r := range y.String() {
		if r == 0x1b || r == 0x202e || r == 0xE0001 {
			t.Fatalf("raw %U in the YAML", r)
		}
	}
	// The YAML reads back as the JSON's values.
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal(y.Bytes(), &fromYAML); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatal(err)
	}
	jy, _ := json.Marshal(fromYAML)
	jj, _ := json.Marshal(fromJSON)
	if !bytes.Equal(jy, jj) {
		t.Fatalf("yaml reads back as %s, json as %s", jy, jj)
	}
}

func TestKeys(t *testing.T) {
	got, err := Keys(&report{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{ok, name, size, errors, labels}"; got != want {
		t.Fatalf("Keys = %q, want %q", got, want)
	}
	if _, err := Keys(3); err == nil {
		t.Fatal("Keys(3) gave no error")
	}
}

func TestCheck(t *testing.T) {
	for _, f := range Formats {
		if err := Check("-o", f); err != nil {
			t.Fatal(err)
		}
	}
	err := Check("-o", "xml\x1b")
	if err == nil || !strings.Contains(err.Error(), `-o "xml\x1b": not a format; want one of text, json, yaml`) {
		t.Fatalf("Check = %v", err)
	}
	if err := Check("--format", "yaml", "cue", "jsonschema"); err == nil {
		t.Fatal("Check accepted a format not listed")
	}
}

func TestPrintText(t *testing.T) {
	if err := Print(&bytes.Buffer{}, "text", struct{}{}); err == nil || !strings.Contains(err.Error(), "no text form") {
		t.Fatalf("Print text of a type without WriteText = %v", err)
	}
	if err := Print(&bytes.Buffer{}, "toml", struct{}{}); err == nil {
		t.Fatal("Print accepted toml")
	}
}
