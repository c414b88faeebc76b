// Package progress draws the progress bars of lock and mirror on a
// terminal (schollz/progressbar): lock's bar of references resolved
// (registry.Progress) and mirror's bar of blob bytes copied
// (mirror.Progress). A bar is nil, every method a no-op, when stderr is
// no terminal or the user asked for quiet.
package progress

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar is a progress bar on a terminal (schollz/progressbar): lock's
// bar of references (registry.Progress) and, through Mirror,
// mirror's bar of blob bytes. It is nil, and every method a no-op, when
// disabled: --quiet, or stderr is not a terminal (CI logs, pipes, tests).
// While lock's bar runs, a ticker redraws it every Tick, so the
// elapsed time moves even when no reference finishes, and its description
// names the references in flight.
type Bar struct {
	w       io.Writer
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	pending map[string]int
	stop    chan struct{}
	stopped chan struct{}
}

// Tick is how often a running bar is redrawn.
const Tick = time.Second

// shownNames is how many in-flight references the bar names.
const shownNames = 2

// New is lock's bar on stderr; nil when quiet or stderr is no terminal.
func New(stderr io.Writer, quiet bool) *Bar {
	f, ok := stderr.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &Bar{w: stderr}
}

// newBar sets the bar: max units, described by desc; opts add to the look
// both bars share (30 wide, redrawn at most every 100 ms, cleared at the
// end). Called with mu held.
func (p *Bar) newBar(max int64, desc string, opts ...progressbar.Option) {
	p.bar = progressbar.NewOptions64(max, append([]progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
	}, opts...)...)
}

// Start begins a bar of total references; none for zero.
func (p *Bar) Start(total int) {
	if p == nil || total == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopTicker()
	p.newBar(int64(total), "resolving", progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true))
	p.pending = map[string]int{}
	p.bar.RenderBlank()
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.tick(p.stop, p.stopped)
}

// tick redraws the bar every Tick until stop is closed.
func (p *Bar) tick(stop, stopped chan struct{}) {
	defer close(stopped)
	t := time.NewTicker(Tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.bar != nil {
				p.bar.Describe(p.describe())
			}
			p.mu.Unlock()
		}
	}
}

// describe is "resolving", then the first references in flight (sorted)
// and how many more; called with mu held.
func (p *Bar) describe() string {
	names := make([]string, 0, len(p.pending))
	for n := range p.pending {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "resolving"
	}
	slices.Sort(names)
	d := "resolving (waiting on " + strings.Join(names[:min(len(names), shownNames)], ", ")
	if more := len(names) - shownNames; more > 0 {
		d += fmt.Sprintf(" and %d more", more)
	}
	return d + ")"
}

// Begin notes a reference in flight.
func (p *Bar) Begin(ref string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil {
		p.pending[ref]++
	}
}

// End notes a reference done.
func (p *Bar) End(ref string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[ref]--; p.pending[ref] <= 0 {
		delete(p.pending, ref)
	}
}

// Done advances the bar by one reference.
func (p *Bar) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(p.describe())
		p.bar.Add(1)
	}
}

// stopTicker ends the ticker goroutine, if any; called with mu held, so it
// releases mu while it waits for the goroutine.
func (p *Bar) stopTicker() {
	if p.stop == nil {
		return
	}
	stop, stopped := p.stop, p.stopped
	p.stop, p.stopped = nil, nil
	close(stop)
	p.mu.Unlock()
	<-stopped
	p.mu.Lock()
}

// Finish ends the bar and clears it from the terminal.
func (p *Bar) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopTicker()
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// Mirror is a Bar as mirror.Progress: a bar of blob bytes
// described by the images done, without the ticker; nil (every method a
// no-op) with --quiet, --dry-run, or when stderr is not a terminal.
type Mirror struct {
	*Bar
	images, done int // guarded by mu
}

// NewMirror is mirror's bar on stderr; nil when quiet or stderr is no
// terminal.
func NewMirror(stderr io.Writer, quiet bool) *Mirror {
	p := New(stderr, quiet)
	if p == nil {
		return nil
	}
	return &Mirror{Bar: p}
}

// Start begins the bar: bytes blob bytes to copy for images images; none
// for zero images.
func (p *Mirror) Start(images int, bytes int64) {
	if p == nil || images == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.images = images
	p.newBar(bytes, fmt.Sprintf("images 0/%d", images), progressbar.OptionShowBytes(true))
}

// Bytes advances the bar by n bytes.
func (p *Mirror) Bytes(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Add64(n)
	}
}

// Image counts one image done.
func (p *Mirror) Image() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("images %d/%d", p.done, p.images))
	}
}

// Finish ends the bar and clears it from the terminal.
func (p *Mirror) Finish() {
	if p == nil {
		return
	}
	p.Bar.Finish()
}
