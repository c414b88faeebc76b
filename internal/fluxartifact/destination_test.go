package fluxartifact

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseDestination: a destination must be oci:// with a registry host
// and a tag; the refusals of its form are *DestinationError (usage errors),
// credentials and a repository the distribution grammar refuses are not,
// and the credentials are never echoed.
func TestParseDestination(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
		usage     bool
	}{
		{"registry.example:5000/p/a:v1", "want oci://REGISTRY/REPOSITORY:TAG", true},
		{"oci://registry.example/p/a@sha256:" + strings.Repeat("0", 64), "give a tag, not a digest", true},
		{"oci://platform/prepull:v1", "registry to be explicitly defined", true},
		{"oci://registry.example/p/A:v1", `destination "oci://registry.example/p/A:v1": `, false},
		{"oci://user:hunter2@registry.example/p/a:v1", "destination oci://***@registry.example/p/a:v1: credentials in the URL are refused", false},
	} {
		_, err := ParseDestination(tc.url)
		var de *DestinationError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &de) != tc.usage || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseDestination(%q) = %v, want an error saying %q (usage %v)", tc.url, err, tc.want, tc.usage)
		}
	}
	for _, ok := range []string{"oci://127.0.0.1:5000/p/a:v1", "oci://localhost/p/a:v1", "oci://registry.site.example/platform/prepull:2026-12-01"} {
		if tag, err := ParseDestination(ok); err != nil || "oci://"+tag.Name() != ok {
			t.Errorf("ParseDestination(%q) = %v, %v", ok, tag, err)
		}
	}
}

// TestCreated: --created is RFC 3339, else SOURCE_DATE_EPOCH seconds, else
// the Unix epoch, in UTC; a bad value names the flag or the variable.
func TestCreated(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	epoch := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == "SOURCE_DATE_EPOCH" }
	}
	for _, tc := range []struct {
		flag   string
		getenv func(string) (string, bool)
		want   time.Time
	}{
		{"", noEnv, time.Unix(0, 0).UTC()},
		{"", epoch("1764583200"), time.Unix(1764583200, 0).UTC()},
		{"2026-12-01T11:00:00+01:00", epoch("5"), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)},
	} {
		got, err := Created(tc.flag, tc.getenv)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("Created(%q) = %v, %v; want %v", tc.flag, got, err, tc.want)
		}
	}
	if _, err := Created("yesterday", noEnv); err == nil || !strings.Contains(err.Error(), "--created \"yesterday\": want RFC 3339") {
		t.Errorf("--created yesterday: %v", err)
	}
	if _, err := Created("", epoch("-1")); err == nil || !strings.Contains(err.Error(), `SOURCE_DATE_EPOCH="-1"`) {
		t.Errorf("SOURCE_DATE_EPOCH=-1: %v", err)
	}
}
