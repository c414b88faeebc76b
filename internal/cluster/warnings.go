package cluster

import (
	"fmt"
	"io"
	"sync"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/secret"
)

// MaxWarnings bounds the distinct warnings Warnings shows from one run.
const MaxWarnings = 100

// Warnings is the rest.WarningHandler of stowage status (set it as
// rest.Config.WarningHandler): each distinct warning the API server sends
// (an HTTP Warning header, code 299), which client-go's default handler
// logs through klog as sent, is written to its writer once, scrubbed of
// the credentials in its secret.Set and escaped, at most MaxWarnings of
// them, then one line saying the others are not shown.
type Warnings struct {
	w       io.Writer
	host    string
	secrets *secret.Set

	mu   sync.Mutex
	seen map[string]bool
}

// NewWarnings returns the Warnings writing to w the warnings of the API
// server host (named in each line), scrubbed of secrets.
func NewWarnings(w io.Writer, host string, secrets *secret.Set) *Warnings {
	return &Warnings{w: w, host: host, secrets: secrets, seen: map[string]bool{}}
}

// HandleWarningHeader writes one warning; see Warnings.
func (a *Warnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[text] || len(a.seen) > MaxWarnings {
		return
	}
	a.seen[text] = true
	if len(a.seen) > MaxWarnings {
		fmt.Fprintf(a.w, "stowage: the API server %s sent more than %d warnings; the others are not shown\n", escape.Line(a.host), MaxWarnings)
		return
	}
	fmt.Fprintf(a.w, "stowage: warning from the API server %s: %s\n", escape.Line(a.host), escape.Line(a.secrets.Scrub(text)))
}

// RouteKlog sends klog's output (client-go logs through it, to stderr by
// default, as its callers wrote it) to w instead, one line per message
// prefixed "stowage: client-go: ", scrubbed of the credentials in secrets
// (read at each line, so secrets may grow later) and escaped. It replaces
// klog's logger for the whole process.
func RouteKlog(w io.Writer, secrets *secret.Set) {
	var mu sync.Mutex
	klog.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		line := args
		if prefix != "" {
			line = prefix + ": " + args
		}
		fmt.Fprintf(w, "stowage: client-go: %s\n", escape.Line(secrets.Scrub(line)))
	}, funcr.Options{}))
}
