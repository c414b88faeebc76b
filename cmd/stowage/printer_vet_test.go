package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// sameReport fails t unless jsonOut and yamlOut, the -o json and -o yaml
// output of the same run, decode to the same value, which must be an
// object holding want's keys.
func sameReport(t *testing.T, what string, jsonOut, yamlOut []byte, want map[string]any) {
	t.Helper()
	var fromJSON, fromYAML map[string]any
	if err := json.Unmarshal(jsonOut, &fromJSON); err != nil {
		t.Fatalf("%s -o json: %v\n%s", what, err, jsonOut)
	}
	if err := sigsyaml.Unmarshal(yamlOut, &fromYAML); err != nil {
		t.Fatalf("%s -o yaml: %v\n%s", what, err, yamlOut)
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("%s: -o yaml decodes to\n%v\nwant what -o json decodes to\n%v", what, fromYAML, fromJSON)
	}
	for k, v := range want {
		if !reflect.DeepEqual(fromJSON[k], v) {
			t.Errorf("%s: %s = %v, want %v", what, k, fromJSON[k], v)
		}
	}
}

// helpKeys are the keys the -o flag of command's --help names.
func helpKeys(t *testing.T, command string) string {
	t.Helper()
	out, stderr, code := runCLI(t, nil, command, "--help")
	m := regexp.MustCompile(`(?m)^\s+-o, --output string\s+.*?(\{[^}]*\})`).FindSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("%s --help: exit %d, no keys in -o's help:\n%s%s", command, code, out, stderr)
	}
	return string(m[1])
}

// TestPrinterVetLockBump: vet, lock and bump print with -o yaml the same
// report -o json prints (decoded, the same value), and their --help lists
// the keys of the report's type, v1alpha1's VetReport, LockReport and
// BumpReport.
func TestPrinterVetLockBump(t *testing.T) {
	t.Parallel()
	for cmd, report := range map[string]any{"vet": v1alpha1.VetReport{}, "lock": v1alpha1.LockReport{}, "bump": v1alpha1.BumpReport{}} {
		if got, want := helpKeys(t, cmd), printer.MustKeys(report); got != want {
			t.Errorf("%s --help lists %s, want the report's keys %s", cmd, got, want)
		}
	}

	// vet and lock --check of an example, offline.
	ex := filepath.Join(repoRoot, "examples", "openpai-offline")
	for _, args := range [][]string{{"vet", ex}, {"lock", ex, "--check"}} {
		j, stderr, code := runCLI(t, nil, append(args, "-o", "json")...)
		y, _, ycode := runCLI(t, nil, append(args, "-o", "yaml")...)
		if code != 0 || ycode != 0 {
			t.Fatalf("%v: exit %d (json), %d (yaml): %s", args, code, ycode, stderr)
		}
		sameReport(t, strings.Join(args, " "), j, y, map[string]any{"ok": true})
	}

	// A failing vet prints its report in both formats too.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "config.yaml"), []byte("profiles: {p: {pullers: [{name: Bad_Name, namespace: ns, images: []}]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, _, code := runCLI(t, nil, "vet", bad, "-o", "json")
	y, _, ycode := runCLI(t, nil, "vet", bad, "-o", "yaml")
	if code != 1 || ycode != 1 {
		t.Fatalf("vet of a bad config: exit %d (json), %d (yaml), want 1", code, ycode)
	}
	sameReport(t, "vet of a bad config", j, y, map[string]any{"ok": false})

	// bump of a tag that moved: the same change, printed both ways.
	reg := startInProcess(t)
	h := reg.Host
	app, other, helper, pause := h+"/team/app:1.0", h+"/team/other:2.0", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, helper, pause}, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: %s", stderr)
	}
	otherRef, err := name.ParseReference(other)
	if err != nil {
		t.Fatal(err)
	}
	appRef, err := name.ParseReference(app)
	if err != nil {
		t.Fatal(err)
	}
	img, idx, err := offlineimage.For(otherRef)
	if err != nil {
		t.Fatal(err)
	}
	push, err := registry.New(registry.WithInsecure(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.Write(context.Background(), push, appRef, nil, img, idx); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(dir, "stowage.lock.yaml")
	before := readFile(t, lockPath)
	out := map[string][]byte{}
	for _, format := range []string{"json", "yaml"} {
		if err := os.WriteFile(lockPath, before, 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", h, "-o", format)
		if code != 0 {
			t.Fatalf("bump -o %s: exit %d: %s", format, code, stderr)
		}
		out[format] = stdout
	}
	sameReport(t, "bump", out["json"], out["yaml"], map[string]any{"changed": true})
}
