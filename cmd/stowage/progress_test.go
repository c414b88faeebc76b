package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the bar's ticker goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgressMovesAndNamesPending: with references in flight and none
// finishing, the bar is redrawn every tick with the elapsed time moving and
// the first pending references named; it stops redrawing once finished.
func TestProgressMovesAndNamesPending(t *testing.T) {
	var w syncBuffer
	p := &progress{w: &w}
	p.Start(4)
	p.Begin("registry.example/team/app:1.0")
	p.Begin("registry.example/team/tool:2")
	p.Begin("registry.example/team/zz:3")
	p.Begin("registry.example/team/done:4")
	p.End("registry.example/team/done:4")
	p.Done()
	time.Sleep(2*progressTick + progressTick/2)
	out := w.String()
	p.finish()
	if !strings.Contains(out, "waiting on registry.example/team/app:1.0, registry.example/team/tool:2 and 1 more") {
		t.Errorf("the bar does not name the pending references:\n%q", out)
	}
	if strings.Contains(out, "team/done:4") {
		t.Errorf("the bar names a finished reference:\n%q", out)
	}
	if !strings.Contains(out, "[2s") {
		t.Errorf("the elapsed time did not move to 2s without a reference finishing:\n%q", out)
	}
	after := w.String()
	time.Sleep(progressTick + progressTick/2)
	if got := w.String(); got != after {
		t.Errorf("the bar was redrawn after finish: %q", strings.TrimPrefix(got, after))
	}
}
