package registrytest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/trustfile"
)

func TestCopyTrustFiles(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(from, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("keys/top.pub", "top key")
	write("keys/env.pub", "env key")
	write("trust/trusted_root.json", "{}")
	cfg := &v1alpha1.Config{
		Verify:       &v1alpha1.Verify{Keys: []string{"keys/top.pub"}},
		Environments: map[string]v1alpha1.Environment{"cuda": {Verify: &v1alpha1.Verify{Keys: []string{"keys/env.pub", "keys/top.pub"}}}},
		Profiles:     map[string]v1alpha1.Profile{"p": {Verify: &v1alpha1.Verify{TrustedRoot: "trust/trusted_root.json"}}},
	}
	got := TrustFiles(cfg)
	want := []TrustFile{{"keys/env.pub", trustfile.Key}, {"keys/top.pub", trustfile.Key}, {"trust/trusted_root.json", trustfile.TrustedRoot}}
	if len(got) != len(want) {
		t.Fatalf("TrustFiles = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("TrustFiles[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if err := CopyTrustFiles(cfg, from, to); err != nil {
		t.Fatal(err)
	}
	for rel, data := range map[string]string{"keys/top.pub": "top key", "keys/env.pub": "env key", "trust/trusted_root.json": "{}"} {
		b, err := os.ReadFile(filepath.Join(to, rel))
		if err != nil || string(b) != data {
			t.Errorf("%s = %q, %v; want %q", rel, b, err, data)
		}
	}

	// A key outside the config directory, directly or through a link,
	// and a missing one, are refused by name.
	outside := filepath.Join(t.TempDir(), "stolen.pub")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(from, "keys", "link.pub")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, want string }{
		{"../stolen.pub", "outside"},
		{"keys/link.pub", "keys/link.pub"},
		{"keys/missing.pub", "keys/missing.pub"},
	} {
		err := CopyTrustFiles(&v1alpha1.Config{Verify: &v1alpha1.Verify{Keys: []string{tc.key}}}, from, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CopyTrustFiles(key %s) = %v, want an error naming %q", tc.key, err, tc.want)
		}
		if tc.key == "keys/missing.pub" && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("CopyTrustFiles(missing key) = %v, want fs.ErrNotExist", err)
		}
	}
}
