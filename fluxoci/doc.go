// Package fluxoci tests stowage push against Flux's own OCI client
// (github.com/fluxcd/pkg/oci), the code flux pull artifact runs: a module
// of its own, so that the main module never depends on Flux.
package fluxoci
