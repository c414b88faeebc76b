package output

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/render"
)

// TestWriteDiff: a changed file's diff is cut at DiffFileLines lines and
// the rest counted; a Secret's diff is never shown; a file the check
// cannot read is named; files not "changed" are skipped.
func TestWriteDiff(t *testing.T) {
	dir := t.TempDir()
	var committed, rendered strings.Builder
	for i := range 100 {
		fmt.Fprintf(&committed, "old %d\n", i)
		fmt.Fprintf(&rendered, "new %d\n", i)
	}
	for name, data := range map[string]string{"big.yaml": committed.String(), "secret.yaml": "password: old\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{"big.yaml": []byte(rendered.String()), "secret.yaml": []byte("password: new\n"), "gone.yaml": []byte("x\n")}
	var b strings.Builder
	WriteDiff(&b, dir, []FileDiff{{File: "big.yaml", Status: "changed"}, {File: "secret.yaml", Status: "changed"}, {File: "gone.yaml", Status: "changed"}, {File: "other.yaml", Status: "missing"}}, files, map[string]bool{"secret.yaml": true})
	got := b.String()
	lines := strings.Split(got, "\n")
	if lines[0] != "--- "+filepath.Join(dir, "big.yaml")+" (committed)" {
		t.Errorf("first line %q", lines[0])
	}
	// 60 of the diff's 204 lines shown.
	for _, want := range []string{
		"  (144 more diff lines of big.yaml not shown)\n",
		"  (secret.yaml is a Secret: its diff is not shown)\n",
		"  (gone.yaml: open " + filepath.Join(dir, "gone.yaml") + ": no such file or directory)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "password") || strings.Contains(got, "other.yaml") || strings.Count(got, "\n") != DiffFileLines+3 {
		t.Errorf("diff shows a Secret or a missing file, or not %d lines:\n%s", DiffFileLines+3, got)
	}
}

// TestSecretFiles: the file names of the Secrets, and only theirs.
func TestSecretFiles(t *testing.T) {
	got := SecretFiles([]render.Object{{Kind: "Secret", Namespace: "ns", Name: "pull"}, {Kind: "ConfigMap", Namespace: "ns", Name: "pull"}})
	if len(got) != 1 || !got["secret-ns-pull.yaml"] {
		t.Errorf("SecretFiles = %v, want only secret-ns-pull.yaml", got)
	}
}
