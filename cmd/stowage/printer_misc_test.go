package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/version"
)

// TestPrinterMisc: version, init and openpai services print with -o yaml
// the report -o json prints (decoded, the same value), and the -o flag of
// their --help (and status's) lists the keys of the report's type.
func TestPrinterMisc(t *testing.T) {
	t.Parallel()
	v := version.Get()
	js, _, c1 := runCLI(t, nil, "version", "-o", "json")
	ys, _, c2 := runCLI(t, nil, "version", "-o", "yaml")
	if c1 != 0 || c2 != 0 {
		t.Fatalf("version: exit %d and %d", c1, c2)
	}
	sameReport(t, "version", js, ys, map[string]any{"version": v.Version, "go": v.Go})

	base := t.TempDir()
	js, _, c1 = runCLI(t, nil, "init", filepath.Join(base, "a"), "-o", "json")
	ys, _, c2 = runCLI(t, nil, "init", filepath.Join(base, "b"), "-o", "yaml")
	if c1 != 0 || c2 != 0 {
		t.Fatalf("init: exit %d and %d", c1, c2)
	}
	sameReport(t, "init", []byte(strings.ReplaceAll(string(js), filepath.Join(base, "a"), filepath.Join(base, "b"))), ys,
		map[string]any{"dir": filepath.Join(base, "b")})

	dir := filepath.Join(repoRoot, "examples", "openpai-offline")
	js, _, c1 = runCLI(t, nil, "openpai", "services", dir, "-o", "json")
	ys, _, c2 = runCLI(t, nil, "openpai", "services", dir, "-o", "yaml")
	if c1 != 0 || c2 != 0 {
		t.Fatalf("openpai services: exit %d and %d", c1, c2)
	}
	sameReport(t, "openpai services", js, ys, map[string]any{"version": "v1.5.0"})

	for _, tc := range []struct {
		args   []string
		report any
	}{
		{[]string{"version"}, v1alpha1.VersionReport{}},
		{[]string{"init"}, v1alpha1.InitReport{}},
		{[]string{"openpai", "services"}, v1alpha1.OpenPAIServicesReport{}},
		{[]string{"status"}, v1alpha1.StatusReport{}},
	} {
		out, stderr, code := runCLI(t, nil, append(tc.args, "--help")...)
		m := regexp.MustCompile(`(?m)^\s+-o, --output string\s+.*?(\{[^}]*\})`).FindSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("%v --help: exit %d, no keys in -o's help:\n%s%s", tc.args, code, out, stderr)
		}
		if want := printer.MustKeys(tc.report); string(m[1]) != want {
			t.Errorf("%v --help lists %s, want %s", tc.args, m[1], want)
		}
	}
}
