package main

import (
	"path/filepath"
	"strings"
	"testing"
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
