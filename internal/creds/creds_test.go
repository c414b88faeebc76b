package creds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hub"), []byte("file-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crlf"), []byte("crlf-pass\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HARBOR": "env-pass", "EMPTY": ""}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	got, err := Read(dir, []Source{
		{Source: "env:HARBOR"}, {Source: "file:hub"}, {Source: "file:crlf"}, {Source: "literal-allowed"},
	}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"env:HARBOR": "env-pass", "file:hub": "file-pass", "file:crlf": "crlf-pass", "literal-allowed": "literal-allowed"}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestReadErrors: every failing source is reported at once, naming the
// variable or file and what needs it, never a value.
func TestReadErrors(t *testing.T) {
	env := map[string]string{"EMPTY": "", "SET": "canary-value-123"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	_, err := Read(t.TempDir(), []Source{
		{Source: "env:NOT_SET_ANYWHERE", UsedBy: []string{`environment "jupyter-gpu"`}},
		{Source: "env:EMPTY", UsedBy: []string{`image "x"`}},
		{Source: "file:missing/password", UsedBy: []string{`environment "hub"`}},
		{Source: "env:SET"},
	}, getenv)
	if err == nil {
		t.Fatal("Read succeeded with missing sources")
	}
	msg := err.Error()
	for _, want := range []string{
		`environment variable NOT_SET_ANYWHERE is not set (needed by environment "jupyter-gpu")`,
		`environment variable EMPTY is not set (needed by image "x")`,
		"missing/password cannot be read (needed by environment \"hub\")",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "canary-value-123") {
		t.Errorf("error shows a password value:\n%s", msg)
	}
}

// TestReadStaysInDir: a file source must name a file inside the config
// directory; absolute paths and ".." are refused without being read.
func TestReadStaysInDir(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{"file:/etc/hostname", "file:../outside", "file:a/../../outside"} {
		_, err := Read(dir, []Source{{Source: src, UsedBy: []string{"x"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "outside the config directory") {
			t.Errorf("%s: err = %v, want a refusal", src, err)
		}
	}
}
