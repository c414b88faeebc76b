package cluster

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stowage/stowage/internal/secret"
	"github.com/stowage/stowage/internal/status"
)

// PollInterval is how often Check reads the cluster again while it waits
// (stowage status --wait).
const PollInterval = 5 * time.Second

// CheckOptions bound one Check.
type CheckOptions struct {
	// Timeout bounds each request to the API server (--timeout); rc
	// carries the same limit, this names it in errors.
	Timeout time.Duration
	// Deadline bounds each reading of the cluster (--deadline).
	Deadline time.Duration
	// Wait is how long to read again until the report is ready (--wait);
	// 0 reads once. The whole Check lasts at most Wait plus Deadline.
	Wait time.Duration
	// Interval is the time between readings; 0 is PollInterval.
	Interval time.Duration
	// Waiting, if not nil, is called with each report that is not ready
	// while time is left, and the time left.
	Waiting func(rep *status.Report, left time.Duration)
}

// Check reads the cluster of rc (Read), evaluates it against exp
// (status.Evaluate) and scrubs the report of the credentials in secrets,
// again every o.Interval until the report is ready or o.Wait has passed;
// it returns the last report. Each reading is bounded by o.Deadline, the
// whole by o.Wait plus o.Deadline. A reading that fails ends it with that
// error (see Read). A kubelet's configz (nodes/proxy) is read once per
// Check, not once per reading.
func Check(ctx context.Context, rc *rest.Config, exp *status.Expected, secrets *secret.Set, o CheckOptions) (*status.Report, error) {
	interval := o.Interval
	if interval <= 0 {
		interval = PollInterval
	}
	ctx, cancel := context.WithTimeout(ctx, o.Wait+o.Deadline)
	defer cancel()
	// The kubelets' configurations do not change while status waits:
	// each node's configz is read once per run, not once per reading.
	seen := newKubeletConfigs()
	reading := func(ctx context.Context) (*status.Report, error) {
		ctx, cancel := context.WithTimeout(ctx, o.Deadline)
		defer cancel()
		cl, err := read(ctx, rc, exp, secrets, o.Timeout, seen)
		if err != nil {
			return nil, err
		}
		rep := status.Evaluate(exp, cl)
		status.Scrub(rep, secrets.Scrub)
		return rep, nil
	}
	return poll(ctx, o.Wait, interval, reading, o.Waiting)
}

// poll reads the cluster's report with read until it is Ready or wait has
// passed since the first reading, every interval (never sleeping past
// wait), calling tick with each report that is not ready and the time
// left; it returns the last report. A reading that fails ends it with that
// error; the end of ctx ends the wait with the last report. With wait 0 it
// reads once.
func poll(ctx context.Context, wait, interval time.Duration, read func(context.Context) (*status.Report, error), tick func(*status.Report, time.Duration)) (*status.Report, error) {
	start := time.Now()
	for {
		rep, err := read(ctx)
		if err != nil {
			return nil, err
		}
		left := wait - time.Since(start)
		if rep.Ready || left <= 0 {
			return rep, nil
		}
		if tick != nil {
			tick(rep, left)
		}
		t := time.NewTimer(min(interval, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return rep, nil
		case <-t.C:
		}
	}
}
