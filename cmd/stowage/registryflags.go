package main

import (
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/registryflags"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/version"
)

// retryBackoff is the wait before the first retry; tests shorten it.
var retryBackoff = registry.DefaultBackoff

// registryOptions are the flags of the commands that talk to registries
// (lock, bump, vet --remote/--site, mirror, push), defined once by
// addFlags (internal/registryflags). The settings a site keeps for every
// command also come from their STOWAGE_* variables; a flag given on the
// command line replaces its variable.
type registryOptions struct {
	jobs           int
	insecure       []string
	mirrors        []string
	caFile         string
	requestTimeout time.Duration
	runTimeout     time.Duration
	retries        int
	quiet          bool
	trustedRealms  []string
	// stdin is what --ca-file - reads; nil when another flag of the
	// command reads standard input.
	stdin io.Reader
	// site, when set (lock --via-site), reads every image at the site
	// registry it maps it to.
	site *site.Mapping
	// flags is the flag set addFlags defined them on: a flag it marks
	// changed wins over its variable.
	flags *pflag.FlagSet
}

// values are o's fields as registryflags sets them.
func (o *registryOptions) values() registryflags.Values {
	return registryflags.Values{Jobs: &o.jobs, Insecure: &o.insecure, Mirrors: &o.mirrors, CAFile: &o.caFile,
		RequestTimeout: &o.requestTimeout, RunTimeout: &o.runTimeout, Retries: &o.retries, Quiet: &o.quiet, TrustedRealms: &o.trustedRealms}
}

// registryDefaults are a command's defaults of --timeout and --deadline
// and help of --timeout and --jobs (registryflags.Defaults).
type registryDefaults struct {
	requestTimeout, runTimeout time.Duration
	timeoutUsage, jobsUsage    string
}

// resolveDefaults and pushDefaults are registryflags.Resolve and Push.
var (
	resolveDefaults = registryDefaults{registryflags.Resolve.RequestTimeout, registryflags.Resolve.RunTimeout, registryflags.Resolve.TimeoutUsage, registryflags.Resolve.JobsUsage}
	pushDefaults    = registryDefaults{registryflags.Push.RequestTimeout, registryflags.Push.RunTimeout, registryflags.Push.TimeoutUsage, registryflags.Push.JobsUsage}
)

// addFlags defines the registry flags on fs with resolveDefaults.
func (o *registryOptions) addFlags(fs *pflag.FlagSet) { o.addFlagsWith(fs, resolveDefaults) }

// addFlagsWith defines the registry flags on fs with the defaults and help d.
func (o *registryOptions) addFlagsWith(fs *pflag.FlagSet, d registryDefaults) {
	o.flags = fs
	registryflags.Add(fs, o.values(), registryflags.Defaults{RequestTimeout: d.requestTimeout, RunTimeout: d.runTimeout, TimeoutUsage: d.timeoutUsage, JobsUsage: d.jobsUsage})
}

// resolver builds the registry client from the flags (after their
// variables, registryflags.Connect) and the progress bar on stderr.
// Passwords are read from the config's sources under pw's rule through
// getenv, only when a request needs one; every source of images is first
// checked against the rule (creds.Rule.Passwords: the operator's, narrowed
// by a kustomization's exec declaration), and refused by name before any
// registry is contacted. The returned function ends the progress bar.
func (o *registryOptions) resolver(stderr io.Writer, pw creds.Rule, images []*plan.Image, getenv env) (*registry.Resolver, func(), error) {
	passwords, err := pw.Passwords(plan.AuthSources(images), getenv)
	if err != nil {
		return nil, nil, err
	}
	c := registryflags.Client{Flags: o.flags, Getenv: getenv, Backoff: retryBackoff, UserAgent: version.Get().UserAgent(),
		Passwords: passwords, Stdin: o.stdin, Progress: stderr}
	if o.site != nil {
		c.Extra = append(c.Extra, registry.WithSite(*o.site))
	}
	return registryflags.Connect(o.values(), c)
}
