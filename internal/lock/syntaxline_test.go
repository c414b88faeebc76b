package lock

import (
	"strings"
	"testing"
)

// TestSyntaxErrorAtFault: a field indented one space short on line 11 is
// reported at line 11, not at line 5 where yaml.v3 says the enclosing
// block starts.
func TestSyntaxErrorAtFault(t *testing.T) {
	t.Parallel()
	data := `apiVersion: stowage.dev/v1alpha1
kind: ImageLock
metadata:
  name: stowage-lock
spec:
  images:
  - name: docker.io/library/busybox:1.36
    reference: busybox:1.36
    digest: sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    kind: manifest
   size: 10
`
	_, err := Parse([]byte(data), "stowage.lock.yaml")
	if want := "stowage.lock.yaml: yaml: line 11: did not find expected key"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	// A well-placed error stays where yaml.v3 put it.
	_, err = Parse([]byte("apiVersion: [\n"), "x.yaml")
	if err == nil || !strings.Contains(err.Error(), "yaml: line ") {
		t.Fatalf("err = %v", err)
	}
}

// TestControlCharacterAtFault: a character YAML does not allow is named
// with its line and column (yaml.v3 names no line).
func TestControlCharacterAtFault(t *testing.T) {
	t.Parallel()
	data := "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: x\nspec:\n  images:\n  - name: \"a\x01\"\n"
	_, err := Parse([]byte(data), "stowage.lock.yaml")
	want := "stowage.lock.yaml: yaml: line 7: column 13: U+0001 is a control character, which YAML does not allow"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
