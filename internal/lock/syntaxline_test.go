package lock

import (
	"errors"
	"regexp"
	"slices"
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
	// The line is said once, where every stowage error says it, and is
	// the Error's Line (what vet -o json reports).
	var le *Error
	if want := "stowage.lock.yaml:11: did not find expected key"; err == nil || err.Error() != want || !errors.As(err, &le) || le.Line != 11 || le.Column != 0 {
		t.Fatalf("err = %v (%#v), want %q at line 11", err, le, want)
	}
	// A well-placed error stays where yaml.v3 put it.
	_, err = Parse([]byte("apiVersion: [\n"), "x.yaml")
	if want := "x.yaml:2: did not find expected node content"; err == nil || err.Error() != want || !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("err = %v, want %q", err, want)
	}
	// A syntax error in a second document: at the line yaml.v3 names.
	_, err = Parse([]byte("apiVersion: x\n---\na: [\n"), "x.yaml")
	if want := "x.yaml:3: did not find expected node content"; err == nil || err.Error() != want || !errors.As(err, &le) || le.Line != 3 {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestControlCharacterAtFault: a character YAML does not allow is named
// with its line and column (yaml.v3 names no line).
func TestControlCharacterAtFault(t *testing.T) {
	t.Parallel()
	data := "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: x\nspec:\n  images:\n  - name: \"a\x01\"\n"
	_, err := Parse([]byte(data), "stowage.lock.yaml")
	want := "stowage.lock.yaml:7:13: U+0001 is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)"
	var le *Error
	if err == nil || err.Error() != want || !errors.As(err, &le) || le.Line != 7 || le.Column != 13 {
		t.Fatalf("err = %v, want %q at line 7, column 13", err, want)
	}
}

// TestNoGoTypeNames: whatever value of the wrong shape a field of the lock
// holds, and whatever unknown field appears beside it, the errors name the
// field, its line and what was expected, never a Go type or an excerpt of
// the value (yaml.v3's words are "cannot unmarshal !!str `abc` into
// int64", "field x not found in type v1alpha1.ImageLockEntry").
func TestNoGoTypeNames(t *testing.T) {
	t.Parallel()
	base := strings.Split(strings.TrimSuffix(string(canonical(t)), "\n"), "\n")
	goWords := regexp.MustCompile("lock\\.|v1alpha1\\.|int64|\\[\\]|map\\[|struct ?\\{|interface|`|not found in type|cannot unmarshal|value not shown")
	tried := 0
	for i, line := range base {
		key, _, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		indent := key[:len(key)-len(strings.TrimLeft(key, " -"))]
		for _, v := range []string{"[1, 2]", "{a: 1}", "\"text\"", "12", "true", "!custom x", "2001-12-14"} {
			lines := slices.Clone(base)
			lines[i] = key + ": " + v
			for _, extra := range []string{"", indent + "bogus: 1", indent + "digests: [x]"} {
				data := strings.Join(lines, "\n") + "\n"
				if extra != "" {
					data = strings.Join(slices.Insert(slices.Clone(lines), i+1, strings.Replace(extra, "-", " ", 1)), "\n") + "\n"
				}
				_, err := Parse([]byte(data), "l.yaml")
				if err == nil {
					continue
				}
				tried++
				for _, e := range flatten(err) {
					var le *Error
					if !errors.As(e, &le) || le.File != "l.yaml" {
						t.Errorf("line %d = %q: error %v is not an *Error of the file", i+1, lines[i], e)
						continue
					}
					if goWords.MatchString(le.Err.Error()) || strings.Contains(le.Field, "[") && !strings.HasPrefix(le.Field, "platforms[") && !strings.HasPrefix(le.Field, "spec.images[") {
						t.Errorf("line %d = %q, extra %q: %v", i+1, lines[i], extra, e)
					}
				}
			}
		}
	}
	if tried < 100 {
		t.Errorf("only %d broken locks tried", tried)
	}
}
