// Package apitest uses stowage's public Go API the way another module
// does: schema.Load, render.Render and its writers, fn.NewCommand, fn.Main
// (cmd/stowage-fn, built and run as kustomize runs it) and the
// fn.Processor, the api/v1alpha1 types. Its own module, with a module
// path outside github.com/stowage/stowage, so that it cannot import an
// internal package: when a public signature starts to need one, or an
// API stops working end to end, this module fails to build or its tests
// fail. `make test` runs it (make apitest).
package apitest
