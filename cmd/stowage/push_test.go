package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/printer"
)

// TestPushArguments: a destination not of the form
// oci://REGISTRY/REPOSITORY:TAG, a bad --created or -o is a usage error
// (exit 2) naming what to give, before anything is rendered or contacted
// (DIR does not exist); credentials in the URL are refused with exit 1.
func TestPushArguments(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"registry.example:5000/p/a:v1"}, 2, "want oci://REGISTRY/REPOSITORY:TAG"},
		{[]string{"oci://registry.example/p/a@sha256:" + strings.Repeat("0", 64)}, 2, "give a tag, not a digest"},
		{[]string{"oci://platform/prepull:v1"}, 2, "registry to be explicitly defined"},
		{[]string{"oci://r.example/p/a:v1", "--created", "yesterday"}, 2, "want RFC 3339"},
		{[]string{"oci://r.example/p/a:v1", "-o", "xml"}, 2, "want one of text, json, yaml"},
		{[]string{"oci://u:hunter2@r.example/p/a:v1"}, 1, "credentials in the URL are refused"},
	} {
		stdout, stderr, code := runCLI(t, nil, append([]string{"push", dir}, tc.args...)...)
		if code != tc.code || len(stdout) != 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "hunter2") {
			t.Errorf("push %v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestPushYAML: push -o yaml prints the same report as -o json, the
// artifact's digest the same (the build is reproducible).
func TestPushYAML(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	env := map[string]string{"STOWAGE_INSECURE_REGISTRY": reg.Host}
	dir := cliValidDir(t)
	dest := "oci://" + reg.Host + "/platform/prepull:v1"
	jout, stderr, code := runCLI(t, env, "push", dir, dest, "-o", "json")
	var fromJSON, fromYAML v1alpha1.PushReport
	if err := json.Unmarshal(jout, &fromJSON); code != 0 || err != nil {
		t.Fatalf("push -o json: exit %d, %v: %s %s", code, err, jout, stderr)
	}
	yout, stderr, code := runCLI(t, env, "push", dir, dest, "-o", "yaml")
	if err := yaml.Unmarshal(yout, &fromYAML); code != 0 || err != nil || !reflect.DeepEqual(fromJSON, fromYAML) || fromYAML.Digest == "" {
		t.Errorf("push -o yaml: exit %d, %v, %+v, want %+v: %s", code, err, fromYAML, fromJSON, stderr)
	}
}

// TestMirrorPushHelpKeys: the help of mirror and push lists the keys of
// the reports -o json and -o yaml print, read from their types.
func TestMirrorPushHelpKeys(t *testing.T) {
	t.Parallel()
	for cmd, keys := range map[string][]string{
		"mirror": {printer.MustKeys(v1alpha1.MirrorPlanReport{}), printer.MustKeys(v1alpha1.MirrorReport{})},
		"push":   {printer.MustKeys(v1alpha1.PushReport{})},
	} {
		stdout, _, code := runCLI(t, nil, cmd, "--help")
		for _, k := range keys {
			if code != 0 || !strings.Contains(string(stdout), k) {
				t.Errorf("%s --help (exit %d) does not list %s", cmd, code, k)
			}
		}
	}
	if k := printer.MustKeys(v1alpha1.MirrorReport{}); k != "{ok, plan, copied, present, verified, attachmentsCopied, attachmentsPresent, bytes, signatures, errors}" {
		t.Errorf("mirror's report keys: %s", k)
	}
}
