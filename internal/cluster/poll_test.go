package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/status"
)

// TestPoll: Check (--wait) reads until the report is ready (here the third
// reading), telling each reading that is not; it gives up with the last
// report once the wait has passed, after a bounded number of readings;
// a failed reading ends it with its error; --wait 0 reads once.
func TestPoll(t *testing.T) {
	seq := func(ready int) (func(context.Context) (*status.Report, error), *int) {
		n := 0
		return func(context.Context) (*status.Report, error) {
			n++
			return &status.Report{Ready: n == ready}, nil
		}, &n
	}
	read, n := seq(3)
	ticks := 0
	rep, err := poll(context.Background(), time.Minute, time.Millisecond, read, func(*status.Report, time.Duration) { ticks++ })
	if err != nil || !rep.Ready || *n != 3 || ticks != 2 {
		t.Errorf("ready on the third reading: ready %v, err %v, %d readings, %d ticks", rep != nil && rep.Ready, err, *n, ticks)
	}

	read, n = seq(-1)
	start := time.Now()
	rep, err = poll(context.Background(), 50*time.Millisecond, 20*time.Millisecond, read, nil)
	took := time.Since(start)
	if err != nil || rep == nil || rep.Ready || took < 50*time.Millisecond || took > 5*time.Second || *n < 2 || *n > 5 {
		t.Errorf("never ready: err %v, %d readings in %v (want 2 to 5 within the 50ms wait)", err, *n, took)
	}

	read, n = seq(-1)
	if rep, err = poll(context.Background(), 0, time.Millisecond, read, nil); err != nil || rep.Ready || *n != 1 {
		t.Errorf("--wait 0: %d readings, err %v", *n, err)
	}

	boom := errors.New("listing nodes on https://127.0.0.1:6443: connection refused")
	calls := 0
	failing := func(context.Context) (*status.Report, error) {
		calls++
		if calls == 2 {
			return nil, boom
		}
		return &status.Report{}, nil
	}
	if _, err := poll(context.Background(), time.Minute, time.Millisecond, failing, nil); !errors.Is(err, boom) || calls != 2 {
		t.Errorf("a failed reading: %v after %d readings", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	read, n = seq(-1)
	rep, err = poll(ctx, time.Minute, time.Hour, read, func(*status.Report, time.Duration) { cancel() })
	if err != nil || rep == nil || *n != 1 {
		t.Errorf("canceled while waiting: err %v, %d readings", err, *n)
	}
}
