package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/testing/syncbuf"
)

// TestProgressMovesAndNamesPending: with references in flight and none
// finishing, the bar is redrawn every tick with the elapsed time moving and
// the first pending references named; it stops redrawing once finished.
func TestProgressMovesAndNamesPending(t *testing.T) {
	// Not parallel: it expects the bar's ticker to have redrawn within half
	// a tick of a deadline, which other tests' load can delay.
	var w syncbuf.Buffer
	p := &Bar{w: &w}
	p.Start(4)
	p.Begin("registry.example/team/app:1.0")
	p.Begin("registry.example/team/tool:2")
	p.Begin("registry.example/team/zz:3")
	p.Begin("registry.example/team/done:4")
	p.End("registry.example/team/done:4")
	p.Done()
	time.Sleep(2*Tick + Tick/2)
	out := w.String()
	p.Finish()
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
	time.Sleep(Tick + Tick/2)
	if got := w.String(); got != after {
		t.Errorf("the bar was redrawn after finish: %q", strings.TrimPrefix(got, after))
	}
}

// TestProgressOff: no bar unless stderr is a terminal and not --quiet, and
// a disabled bar takes every call of lock and mirror without output.
func TestProgressOff(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if p := New(&buf, false); p != nil {
		t.Fatalf("a bytes.Buffer got a bar")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p := NewMirror(f, false); p != nil {
		t.Fatalf("a regular file got a bar")
	}
	var p *Bar
	p.Start(3)
	p.Begin("a")
	p.End("a")
	p.Done()
	p.Finish()
	var m *Mirror
	m.Start(2, 100)
	m.Bytes(50)
	m.Image()
	m.Finish()
}

// TestMirrorProgress: mirror's bar counts blob bytes and says how many
// images are done.
func TestMirrorProgress(t *testing.T) {
	t.Parallel()
	var w syncbuf.Buffer
	m := &Mirror{Bar: &Bar{w: &w}}
	m.Start(2, 1000)
	m.Bytes(400)
	m.Image()
	st := m.bar.State()
	if st.CurrentNum != 400 || st.Max != 1000 {
		t.Errorf("mirror bar at %d of %d, want 400 of 1000", st.CurrentNum, st.Max)
	}
	if st.Description != "images 1/2" {
		t.Errorf("mirror bar says %q, want %q", st.Description, "images 1/2")
	}
	m.Finish()
	if m.bar != nil {
		t.Errorf("bar left after finish")
	}
}
