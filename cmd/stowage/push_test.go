package main

import (
	"strings"
	"testing"
	"time"
)

// TestPushArguments: push's destination must be oci:// with a registry
// host and a tag, its created time RFC 3339 or SOURCE_DATE_EPOCH seconds;
// every refusal is a usage error (exit 2) naming what to give, before
// anything is rendered or contacted.
func TestPushArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"registry.example:5000/p/a:v1", "want oci://REGISTRY/REPOSITORY:TAG"},
		{"oci://registry.example/p/a@sha256:" + strings.Repeat("0", 64), "give a tag, not a digest"},
		{"oci://platform/prepull:v1", "registry to be explicitly defined"},
		{"oci://registry.example/p/A:v1", "want oci://REGISTRY/REPOSITORY:TAG"},
	} {
		_, err := pushReference(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pushReference(%q) = %v, want an error saying %q", tc.url, err, tc.want)
		}
	}
	for _, ok := range []string{"oci://127.0.0.1:5000/p/a:v1", "oci://localhost/p/a:v1", "oci://registry.site.example/platform/prepull:2026-12-01"} {
		if _, err := pushReference(ok); err != nil {
			t.Errorf("pushReference(%q): %v", ok, err)
		}
	}

	noEnv := func(string) (string, bool) { return "", false }
	epoch := func(v string) env { return func(k string) (string, bool) { return v, k == "SOURCE_DATE_EPOCH" } }
	for _, tc := range []struct {
		flag string
		env  env
		want time.Time
	}{
		{"", noEnv, time.Unix(0, 0).UTC()},
		{"", epoch("1764583200"), time.Unix(1764583200, 0).UTC()},
		{"2026-12-01T11:00:00+01:00", epoch("5"), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)},
	} {
		got, err := pushCreated(tc.flag, tc.env)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("pushCreated(%q) = %v, %v; want %v", tc.flag, got, err, tc.want)
		}
	}
	if _, err := pushCreated("yesterday", noEnv); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("--created yesterday: %v", err)
	}
	if _, err := pushCreated("", epoch("-1")); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("SOURCE_DATE_EPOCH=-1: %v", err)
	}
}
