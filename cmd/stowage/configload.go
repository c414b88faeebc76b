package main

import "github.com/stowage/stowage/schema"

// The schema options every config load of a command gets: the limits of
// the command line (--max-config-bytes and the others, set before each
// command runs) and the child process main evaluates configs in ("" in
// tests that run commands in-process).
var (
	configLimits schema.Limits
	configChild  string
)

// schemaOptions returns the command's schema options followed by opts.
func schemaOptions(opts ...schema.Option) []schema.Option {
	return append([]schema.Option{schema.WithLimits(configLimits), schema.WithChild(configChild)}, opts...)
}
