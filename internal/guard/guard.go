// Package guard confines what the libraries stowage links may do to the
// process: no HTTP request through net/http's default transport, and no
// line of the standard log package's output reaching the terminal raw.
// The stowage binary installs both at start-up (RefuseDefaultHTTP,
// RouteLog).
package guard

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"

	"github.com/stowage/stowage/internal/escape"
)

// refusedTransport is net/http's default transport in the stowage binary.
// stowage makes every request through a client of its own (registries:
// go-containerregistry's transport; clusters: client-go's), so a request
// through the default one is a library fetching what stowage did not ask
// for: kustomize's loader fetches an http(s) URL that a builtin
// generator's or transformer's config names. It fails at once, before any
// connection, naming the host.
type refusedTransport struct{}

// RoundTrip refuses r.
func (refusedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("stowage reads local files only: a request to %s://%s was refused", r.URL.Scheme, r.URL.Host)
}

// RefuseDefaultHTTP installs a transport that refuses every request as
// http.DefaultTransport, for the rest of the process.
func RefuseDefaultHTTP() { http.DefaultTransport = refusedTransport{} }

// RouteLog sends the standard log package's output, which libraries
// write untrusted text through (Helm's SDK warns about a chart's values
// with log.Printf, kustomize's API about a kustomization's unused vars),
// to w one escaped line a message, without the timestamp, so that a chart
// or a kustomization cannot drive the terminal (escape.LineWriter). Each
// line is labelled with the library the running command uses
// (SetLogLabel): "stowage: helm: " or "stowage: kustomize: ".
func RouteLog(w io.Writer) {
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(labelledLog{w})
}

// logLabel names the library whose messages the standard log carries in
// this run: "helm" while a chart renders, "kustomize" while a
// kustomization builds; unset names none.
var logLabel atomic.Pointer[string]

// SetLogLabel labels the standard log's lines from now on (RouteLog) with
// l, the library that writes them ("helm", "kustomize").
func SetLogLabel(l string) { logLabel.Store(&l) }

// labelledLog writes each message the standard log gives it as one
// escaped line after "stowage: " and the current logLabel.
type labelledLog struct{ w io.Writer }

func (l labelledLog) Write(p []byte) (int, error) {
	prefix := "stowage: "
	if s := logLabel.Load(); s != nil && *s != "" {
		prefix += *s + ": "
	}
	return escape.LineWriter(l.w, prefix).Write(p)
}
