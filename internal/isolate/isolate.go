// Package isolate runs one piece of untrusted evaluation (a config's CUE,
// a chart's templates) in a child process of the stowage binary, bounded
// by the operator's limits: the parent kills the child at the time limit,
// and the child bounds its own address space (LimitAddressSpace, RLIMIT_AS
// on Unix) and watches its heap (WatchHeap). A limit hit ends the child,
// never the parent or the machine. schema.WithChild and imageset's chart
// rendering use it.
package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
)

// Overhead is the address space a child may use besides its memory
// limit: the binary, the Go runtime's reservations and thread stacks (a
// stowage binary needs about 1 GB of address space before it evaluates
// anything).
const Overhead = 2 << 30

// The ways a child can end besides answering, as Run returns them.
var (
	// ErrTime: the child was still running at the time limit.
	ErrTime = errors.New("took longer than the time limit")
	// ErrMemory: the child ran out of its address space or its heap
	// passed the memory limit (WatchHeap).
	ErrMemory = errors.New("took more memory than the limit")
	// ErrStack: the child's stack passed the Go runtime's limit (a
	// definition through itself).
	ErrStack = errors.New("recursed too deeply")
)

// Limits bound one child.
type Limits struct {
	// Time bounds the child's run, from its start.
	Time time.Duration
	// Memory is the heap bytes the child may use; its address space is
	// bounded at Memory plus Overhead.
	Memory int64
}

// Run runs exe with the one argument arg and an empty environment, in on
// its stdin, its stdout copied to stdout, under lim. It returns nil when
// the child exits 0; ErrTime, ErrMemory or ErrStack (wrapped) when it hit
// a limit; else an error with the first line of its stderr.
func Run(exe, arg string, in []byte, stdout io.Writer, lim Limits) error {
	return RunContext(context.Background(), exe, arg, in, stdout, lim)
}

// RunContext is Run that also kills the child when parent is done; the
// error is then parent's cause (wrapped), not ErrTime.
func RunContext(parent context.Context, exe, arg string, in []byte, stdout io.Writer, lim Limits) error {
	ctx, cancel := context.WithTimeout(parent, lim.Time)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, arg)
	cmd.Env = []string{}
	cmd.Stdin = bytes.NewReader(in)
	stderr := &headBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	dieWithParent(cmd)
	start := time.Now()
	// Pdeathsig follows the thread that starts the child: keep this
	// goroutine on it until the child ends.
	runtime.LockOSThread()
	runErr := cmd.Run()
	runtime.UnlockOSThread()
	if parent.Err() != nil {
		return fmt.Errorf("its child process was stopped: %w", context.Cause(parent))
	}
	if ctx.Err() != nil {
		return ErrTime
	}
	if runErr == nil {
		return nil
	}
	msg := strings.TrimSpace(stderr.String())
	switch {
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory") || strings.Contains(msg, "pthread_create failed"):
		return ErrMemory
	case strings.Contains(msg, "stack exceeds"):
		return ErrStack
	}
	first, _, _ := strings.Cut(msg, "\n")
	return fmt.Errorf("its child process failed after %v (%v): %s", time.Since(start).Round(time.Millisecond), runErr, first)
}

// outOfMemory is what WatchHeap writes before it ends the process: Run
// reads it as ErrMemory.
const outOfMemory = "out of memory: the heap passed the memory limit"

// WatchHeap bounds the heap of this process (a child) at limit bytes: it
// sets the Go runtime's soft memory limit there (debug.SetMemoryLimit, so
// the collector works harder before the limit) and reads the live heap
// and goroutine stacks every 10 ms; past the limit it writes "out of memory" to stderr and
// exits 2. It returns at once; the watch runs until the process ends.
func WatchHeap(limit int64) {
	WatchMemory(limit, func() {
		fmt.Fprintln(os.Stderr, outOfMemory)
		os.Exit(2)
	})
}

// WatchMemory sets the Go runtime's soft memory limit at limit bytes
// (debug.SetMemoryLimit) and reads the live heap and goroutine stacks
// every 10 ms; past limit it calls exceeded once (which should end the
// process: the memory cannot be taken back from the code holding it).
// stop ends the watch and restores the former soft limit.
func WatchMemory(limit int64, exceeded func()) (stop func()) {
	old := debug.SetMemoryLimit(limit)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if heapAndStacks() > uint64(limit) {
					exceeded()
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			debug.SetMemoryLimit(old)
		})
	}
}

// HeapBytes is the bytes of live and not yet swept heap objects
// (runtime/metrics, no stop-the-world).
func HeapBytes() uint64 { return readMetrics("/memory/classes/heap/objects:bytes") }

// heapAndStacks is HeapBytes plus the goroutine stacks' bytes: a
// recursion (a template through tpl) grows a stack, not the heap.
func heapAndStacks() uint64 {
	return readMetrics("/memory/classes/heap/objects:bytes", "/memory/classes/heap/stacks:bytes")
}

// readMetrics is the sum of the named uint64 runtime metrics.
func readMetrics(names ...string) uint64 {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	var sum uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			sum += x.Value.Uint64()
		}
	}
	return sum
}

// headBuffer keeps the first max bytes written to it: a Go runtime crash
// names its cause on its first line, then fills stderr with every
// goroutine's stack.
type headBuffer struct {
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string { return string(h.b) }
