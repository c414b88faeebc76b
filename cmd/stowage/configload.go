package main

import (
	"context"

	"github.com/stowage/stowage/schema"
)

// configRun is how one run of the command line loads configs: the limits
// of its --max-config-bytes and the other limit flags (root's
// PersistentPreRunE sets them before the command runs; a config cannot
// raise them) and the executable main evaluates configs in ("" evaluates
// them in this process, as tests that run commands in-process do). It
// travels in the command's context (withConfigRun), so that runs at once
// in one process each load with their own.
type configRun struct {
	limits schema.Limits
	child  string
	// getenv is the run's environment, the operator's (nil:
	// os.LookupEnv): the function's input cap a kustomization is sized
	// against (fn.OperatorMaxInput).
	getenv env
}

// configRunKey is the context key of a configRun.
type configRunKey struct{}

// withConfigRun returns ctx carrying r.
func withConfigRun(ctx context.Context, r configRun) context.Context {
	return context.WithValue(ctx, configRunKey{}, r)
}

// configRunOf returns the configRun ctx carries; without one (or without
// ctx) the zero configRun: the default limits, evaluated in this process.
func configRunOf(ctx context.Context) configRun {
	if ctx == nil {
		return configRun{}
	}
	r, _ := ctx.Value(configRunKey{}).(configRun)
	return r
}

// schemaOptions returns the schema options of the run ctx belongs to
// (configRun: its limits and child process; ctx itself, so that a signal
// or a deadline stops the evaluation) followed by opts.
func schemaOptions(ctx context.Context, opts ...schema.Option) []schema.Option {
	r := configRunOf(ctx)
	return append([]schema.Option{schema.WithLimits(r.limits), schema.WithChild(r.child), schema.WithContext(ctx)}, opts...)
}
