package registryflags

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/progress"
	"github.com/stowage/stowage/internal/registry"
)

// UsageError is a command-line mistake found while connecting: a flag or
// variable value the registry client refuses (exit 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ErrStdinTaken refuses --ca-file - where another flag of the command
// reads standard input.
var ErrStdinTaken = &UsageError{errors.New("--ca-file -: standard input is read by another flag of this command; give the CA as a file")}

// Client is what a registry client needs beside the flags.
type Client struct {
	// Flags is the flag set Add defined the flags on: a flag it marks
	// changed wins over its variable (ApplyEnv).
	Flags  *pflag.FlagSet
	Getenv func(string) (string, bool)
	// Backoff is the wait before the first retry.
	Backoff   time.Duration
	UserAgent string
	// Passwords reads a config's password source when a request needs
	// one (creds.Rule.Passwords); nil for none.
	Passwords func(source string) ([]byte, error)
	// Stdin is what --ca-file - reads; nil when another flag of the
	// command reads standard input.
	Stdin io.Reader
	// Progress receives the progress bar (progress.New); nil for none.
	Progress io.Writer
	// Extra are further options (registry.WithSite).
	Extra []registry.Option
}

// Connect builds the registry client the flags in v ask for, after their
// STOWAGE_* variables (ApplyEnv), with c's passwords and progress bar. The
// returned function ends the progress bar. Errors: a *UsageError for a
// negative --retries, a refused variable, a malformed --mirror or an
// option the client refuses; a CA file that is no regular file, too large
// or without a PEM certificate is bad input (exit 1), as is standard input
// that cannot be read.
func Connect(v Values, c Client) (*registry.Resolver, func(), error) {
	if *v.Retries < 0 {
		return nil, nil, &UsageError{fmt.Errorf("--retries must not be negative, got %d", *v.Retries)}
	}
	if err := ApplyEnv(c.Flags, v, c.Getenv); err != nil {
		return nil, nil, &UsageError{err}
	}
	opts, err := Options(v, c.Backoff)
	if err != nil {
		return nil, nil, &UsageError{err}
	}
	opts = append(opts, registry.WithUserAgent(c.UserAgent))
	if c.Passwords != nil {
		opts = append(opts, registry.WithPasswords(c.Passwords))
	}
	if *v.CAFile == confined.Stdin {
		if c.Stdin == nil {
			return nil, nil, ErrStdinTaken
		}
		pem, err := confined.ReadStream(c.Stdin, "standard input", confined.CA)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, registry.WithCAPEM(pem, "standard input"))
	}
	opts = append(opts, c.Extra...)
	var bar *progress.Bar
	if c.Progress != nil {
		if bar = progress.New(c.Progress, *v.Quiet); bar != nil {
			opts = append(opts, registry.WithProgress(bar))
		}
	}
	r, err := registry.New(opts...)
	var oe *registry.OptionError
	if errors.As(err, &oe) {
		return nil, nil, &UsageError{err}
	}
	if err != nil {
		return nil, nil, err
	}
	return r, bar.Finish, nil
}
