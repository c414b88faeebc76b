package main

import (
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"

	"github.com/stowage/stowage/internal/secret"
)

// lockedBuffer is a strings.Builder safe for the writes of other
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRouteKlog: what client-go logs through klog (a warning, an error,
// a structured line) reaches status's stderr one line each, scrubbed of
// the kubeconfig's token and escaped; klog alone wrote it to the
// process's stderr as its callers wrote it.
func TestRouteKlog(t *testing.T) {
	var out lockedBuffer
	s := &secret.Set{}
	s.Add(hostileToken)
	routeKlog(&out, s)
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
