package cluster

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/stowage/stowage/internal/secret"
	"github.com/stowage/stowage/internal/testing/syncbuf"
)

// TestRouteKlog: what client-go logs through klog (a warning, an error,
// a structured line) reaches the writer (status's stderr) one line each, scrubbed of
// the kubeconfig's token and escaped; klog alone wrote it to the
// process's stderr as its callers wrote it.
func TestRouteKlog(t *testing.T) {
	var out syncbuf.Buffer
	s := &secret.Set{}
	s.Add(hostileToken)
	RouteKlog(&out, s)
	t.Cleanup(func() { klog.ClearLogger() })
	klog.Warning("token " + hostileToken + " \x1b]0;pwned\x07")
	klog.Errorf("failed: %s\nsecond line \u202e", strings.ToUpper(hostileToken))
	klog.Background().Info("Warning: unable to cancel request", "url", "https://h/?t="+hostileToken+"\u009b")
	got := out.String()
	for _, bad := range []string{hostileToken, strings.ToUpper(hostileToken), "\x1b", "\x07", "\u202e", "\u009b"} {
		if strings.Contains(got, bad) {
			t.Errorf("klog's output carries %q:\n%s", bad, got)
		}
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), got)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "stowage: client-go: ") || !strings.Contains(l, "***") {
			t.Errorf("line %q: want the stowage: client-go: prefix and the token masked", l)
		}
	}
}

// TestAPIWarningsBounded: an API server sending a warning on every answer
// gets each distinct text shown once, at most MaxWarnings of them and
// then one line saying the rest are not; other warn codes are not shown.
func TestAPIWarningsBounded(t *testing.T) {
	var out syncbuf.Buffer
	s := &secret.Set{}
	s.Add(hostileToken)
	w := NewWarnings(&out, "https://127.0.0.1:6443", s)
	for range 3 {
		for i := range MaxWarnings + 50 {
			w.HandleWarningHeader(299, "-", fmt.Sprintf("warning %d for %s", i, hostileToken))
		}
	}
	w.HandleWarningHeader(199, "-", "miscellaneous")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != MaxWarnings+1 {
		t.Fatalf("%d lines, want %d", len(lines), MaxWarnings+1)
	}
	if lines[0] != "stowage: warning from the API server https://127.0.0.1:6443: warning 0 for ***" {
		t.Errorf("first line %q", lines[0])
	}
	if want := fmt.Sprintf("stowage: the API server https://127.0.0.1:6443 sent more than %d warnings; the others are not shown", MaxWarnings); lines[MaxWarnings] != want {
		t.Errorf("last line %q, want %q", lines[MaxWarnings], want)
	}
	if strings.Contains(out.String(), hostileToken) || strings.Contains(out.String(), "miscellaneous") {
		t.Errorf("output:\n%s", out.String())
	}
}
