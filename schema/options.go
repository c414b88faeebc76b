package schema

import (
	"context"
	"fmt"
	"time"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/isolate"
)

// Option changes how Load, LoadFiles and LoadEmbedded read a config: an
// Options value, WithLimits or WithChild. Later options win.
type Option interface{ apply(*settings) }

// Options is the Option of the two rules a caller may relax.
type Options struct {
	// AllowLiteralPasswords accepts auth.password values that are not an
	// "env:" or "file:" source. Off by default: a GitOps repo must not hold
	// passwords.
	AllowLiteralPasswords bool
	// AllowNoProfiles accepts a config without profiles (the KRM function
	// in pin-only mode).
	AllowNoProfiles bool
}

func (o Options) apply(s *settings) { s.Options = o }

// WithLimits bounds what the load may cost; zero fields keep
// DefaultLimits'. A config cannot raise them, only its caller can.
func WithLimits(l Limits) Option { return limitsOption(l) }

type limitsOption Limits

func (l limitsOption) apply(s *settings) { s.Limits = Limits(l).orDefault() }

// WithContext stops the load when ctx is done (a signal, the run's
// deadline): it returns at once with an error wrapping ctx's cause, and
// a child process evaluating the config (WithChild) is killed. Without
// it, or while ctx is not done, the load is what it is without: only the
// Limits stop it.
func WithContext(ctx context.Context) Option { return contextOption{ctx} }

type contextOption struct{ ctx context.Context }

func (c contextOption) apply(s *settings) { s.ctx = c.ctx }

// settings are the options of one load.
type settings struct {
	Options
	Limits Limits
	// child is the executable WithChild named; "" evaluates in this
	// process.
	child string
	// ctx stops the load (WithContext); nil never does.
	ctx context.Context
}

// stopped is the error of a load ctx stopped, at the config's first
// file.
func stopped(ctx context.Context, file string) error {
	return fmt.Errorf("%s: evaluating the config stopped: %w", file, context.Cause(ctx))
}

func newSettings(opts []Option) settings {
	s := settings{Limits: DefaultLimits}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	return s
}

// Limits bound what one config may cost to load; a config cannot raise
// them, only the command line can (--max-config-bytes, --max-config-nodes,
// --config-timeout, --max-config-memory).
type Limits struct {
	// Bytes bounds the bytes of all the files of one config together.
	Bytes int64
	// Nodes bounds the syntax nodes of all the files together (a field,
	// a value, a list element each count).
	Nodes int
	// Time bounds the evaluation of the config with the schema.
	Time time.Duration
	// Memory bounds the heap bytes the evaluation may add, read from
	// runtime/metrics every 10 ms (so it may overshoot by what 10 ms of
	// evaluation allocates).
	Memory int64
}

// DefaultLimits are the limits of a load without WithLimits: 4 MiB, a
// million syntax nodes, 30 s and 1 GiB of heap, each far above a large real
// config (the 2,000-image test config is about 200 KB and loads in 70 MB)
// and below what exhausts a CI runner (a 10 MB YAML config took 42 s; a
// comprehension bomb reached 5.6 GB within 30 s). WithLimits changes them
// for one load.
var DefaultLimits = Limits{Bytes: 4 << 20, Nodes: 1_000_000, Time: 30 * time.Second, Memory: 1 << 30}

// orDefault is l with its zero fields DefaultLimits'.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	if l.Bytes > 0 {
		d.Bytes = l.Bytes
	}
	if l.Nodes > 0 {
		d.Nodes = l.Nodes
	}
	if l.Time > 0 {
		d.Time = l.Time
	}
	if l.Memory > 0 {
		d.Memory = l.Memory
	}
	return d
}

// timed runs load under the time and memory limits. On a hit it returns an
// error at file naming the limit and its flag; the evaluation, which CUE
// cannot cancel, is abandoned and ends with the process.
func timed(ctx context.Context, file string, lims Limits, load func() (*v1alpha1.Config, error)) (*v1alpha1.Config, error) {
	type result struct {
		cfg *v1alpha1.Config
		err error
	}
	var stop <-chan struct{} // nil: never
	if ctx != nil {
		if ctx.Err() != nil {
			return nil, stopped(ctx, file)
		}
		stop = ctx.Done()
	}
	lim := lims.Time
	base := isolate.HeapBytes()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		defer recoverCUE(file, &r.cfg, &r.err)
		r.cfg, r.err = load()
	}()
	timer := time.NewTimer(lim)
	defer timer.Stop()
	for {
		select {
		case r := <-done:
			return r.cfg, r.err
		case <-stop:
			return nil, stopped(ctx, file)
		case <-timer.C:
			return nil, Errors{{File: file, Msg: fmt.Sprintf("evaluating the config took more than %v, the limit of a config; raise it with --config-timeout", lim)}}
		case <-tick.C:
			// The heap may shrink below base after a collection: compare,
			// never subtract into an underflow.
			if isolate.HeapBytes() > base+uint64(lims.Memory) {
				return nil, Errors{{File: file, Msg: fmt.Sprintf("evaluating the config took more than %d bytes of memory, the limit of a config; raise it with --max-config-memory", lims.Memory)}}
			}
		}
	}
}
