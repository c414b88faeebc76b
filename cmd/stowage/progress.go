package main

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

// progress is a progress bar on a terminal (schollz/progressbar): lock's
// bar of references (registry.Progress) and, through mirrorProgress,
// mirror's bar of blob bytes. It is nil, and every method a no-op, when
// disabled: --quiet, or stderr is not a terminal (CI logs, pipes, tests).
// While lock's bar runs, a ticker redraws it every progressTick, so the
// elapsed time moves even when no reference finishes, and its description
// names the references in flight.
type progress struct {
	w       io.Writer
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	pending map[string]int
	stop    chan struct{}
	stopped chan struct{}
}

// progressTick is how often a running bar is redrawn.
const progressTick = time.Second

// progressNames is how many in-flight references the bar names.
const progressNames = 2

func newProgress(stderr io.Writer, quiet bool) *progress {
	f, ok := stderr.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: stderr}
}

// newBar sets the bar: max units, described by desc; opts add to the look
// both bars share (30 wide, redrawn at most every 100 ms, cleared at the
// end). Called with mu held.
func (p *progress) newBar(max int64, desc string, opts ...progressbar.Option) {
	p.bar = progressbar.NewOptions64(max, append([]progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
	}, opts...)...)
}

// Start begins a bar of total references; none for zero.
func (p *progress) Start(total int) {
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

// tick redraws the bar every progressTick until stop is closed.
func (p *progress) tick(stop, stopped chan struct{}) {
	defer close(stopped)
	t := time.NewTicker(progressTick)
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
func (p *progress) describe() string {
	names := make([]string, 0, len(p.pending))
	for n := range p.pending {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "resolving"
	}
	slices.Sort(names)
	d := "resolving (waiting on " + strings.Join(names[:min(len(names), progressNames)], ", ")
	if more := len(names) - progressNames; more > 0 {
		d += fmt.Sprintf(" and %d more", more)
	}
	return d + ")"
}

// Begin notes a reference in flight.
func (p *progress) Begin(ref string) {
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
func (p *progress) End(ref string) {
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
func (p *progress) Done() {
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
func (p *progress) stopTicker() {
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

func (p *progress) finish() {
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

// mirrorProgress is progress as mirror.Progress: a bar of blob bytes
// described by the images done, without the ticker; nil (every method a
// no-op) with --quiet, --dry-run, or when stderr is not a terminal.
type mirrorProgress struct {
	*progress
	images, done int // guarded by mu
}

func newMirrorProgress(stderr io.Writer, quiet bool) *mirrorProgress {
	p := newProgress(stderr, quiet)
	if p == nil {
		return nil
	}
	return &mirrorProgress{progress: p}
}

// Start begins the bar: bytes blob bytes to copy for images images; none
// for zero images.
func (p *mirrorProgress) Start(images int, bytes int64) {
	if p == nil || images == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.images = images
	p.newBar(bytes, fmt.Sprintf("images 0/%d", images), progressbar.OptionShowBytes(true))
}

// Bytes advances the bar by n bytes.
func (p *mirrorProgress) Bytes(n int64) {
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
func (p *mirrorProgress) Image() {
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

func (p *mirrorProgress) finish() {
	if p == nil {
		return
	}
	p.progress.finish()
}
