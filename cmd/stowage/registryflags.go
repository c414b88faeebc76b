package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
)

// retryBackoff is the wait before the first retry; tests shorten it.
var retryBackoff = registry.DefaultBackoff

// registryOptions are the flags of the commands that talk to registries
// (lock, bump, vet --remote/--site, mirror, push), defined once by
// addFlags. The settings a site keeps for every command (insecure hosts,
// mirrors, a private CA, trusted token realms) also come from the
// registryEnv variables; a flag given on the command line replaces its
// variable.
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
	// site, when set (lock --via-site), reads every image at the site
	// registry it maps it to.
	site *site.Mapping
	// flags is the flag set addFlags defined them on: a flag it marks
	// changed wins over its variable.
	flags *pflag.FlagSet
}

// registrySetting is a registry setting a variable can hold: its flag,
// its variable, and where its value goes (a comma-separated list for a
// repeatable flag).
type registrySetting struct {
	flag, env string
	list      *[]string
	value     *string
}

// settings are o's registry settings with a variable each.
func (o *registryOptions) settings() []registrySetting {
	return []registrySetting{
		{flag: "insecure-registry", env: "STOWAGE_INSECURE_REGISTRY", list: &o.insecure},
		{flag: "mirror", env: "STOWAGE_MIRROR", list: &o.mirrors},
		{flag: "ca-file", env: "STOWAGE_CA_FILE", value: &o.caFile},
		{flag: "trust-token-realm", env: "STOWAGE_TRUST_TOKEN_REALM", list: &o.trustedRealms},
	}
}

// registryDefaults are what differs between the commands in their
// registry flags: the defaults of --timeout and --deadline and the help of
// --timeout and --jobs.
type registryDefaults struct {
	requestTimeout, runTimeout time.Duration
	timeoutUsage, jobsUsage    string
}

// resolveDefaults are the registry flags' defaults of the commands that
// resolve references (lock, bump, vet): registry's limits.
var resolveDefaults = registryDefaults{
	requestTimeout: registry.DefaultRequestTimeout,
	runTimeout:     registry.DefaultRunTimeout,
	timeoutUsage:   "time limit of one registry request",
	jobsUsage:      "references resolved at once",
}

// pushDefaults are push's: registry's limits; --jobs is how many of the
// artifact's layers are uploaded at once (go-containerregistry's jobs).
var pushDefaults = registryDefaults{
	requestTimeout: registry.DefaultRequestTimeout,
	runTimeout:     registry.DefaultRunTimeout,
	timeoutUsage:   "time limit of one registry request",
	jobsUsage:      "layers uploaded at once",
}

// addFlags defines the registry flags on fs with resolveDefaults.
func (o *registryOptions) addFlags(fs *pflag.FlagSet) { o.addFlagsWith(fs, resolveDefaults) }

// addFlagsWith defines the registry flags on fs, once for every command,
// with the defaults and help d.
func (o *registryOptions) addFlagsWith(fs *pflag.FlagSet, d registryDefaults) {
	o.flags = fs
	fs.IntVar(&o.jobs, "jobs", registry.DefaultJobs, d.jobsUsage)
	fs.StringArrayVar(&o.insecure, "insecure-registry", nil, "allow plain HTTP to this registry, host[:port] as contacted (repeatable; default $STOWAGE_INSECURE_REGISTRY, comma-separated)")
	fs.StringArrayVar(&o.mirrors, "mirror", nil, "resolve REGISTRY's images at a mirror, REGISTRY=HOST[:PORT][/PATH]; the lock keeps the original names (repeatable; default $STOWAGE_MIRROR, comma-separated)")
	fs.StringVar(&o.caFile, "ca-file", "", "PEM file of a private CA to trust besides the system's (default $STOWAGE_CA_FILE)")
	fs.DurationVar(&o.requestTimeout, "timeout", d.requestTimeout, d.timeoutUsage)
	fs.DurationVar(&o.runTimeout, "deadline", d.runTimeout, "time limit of the whole run")
	fs.IntVar(&o.retries, "retries", registry.DefaultAttempts-1, "retries of a request after a 429, a 5xx, a reset connection or a timeout")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	fs.StringArrayVar(&o.trustedRealms, "trust-token-realm", nil, "send registry credentials to the token realm on this host[:port] although it is not the registry's own host (repeatable; default $STOWAGE_TRUST_TOKEN_REALM, comma-separated)")
}

// applyEnv fills every registry setting whose flag was not given from its
// variable (settings), read through getenv: a flag on the command line
// replaces the variable. An empty variable is unset; a list with an empty
// item is a usage error naming the variable.
func (o *registryOptions) applyEnv(getenv env) error {
	for _, s := range o.settings() {
		if o.flags != nil && o.flags.Changed(s.flag) {
			continue
		}
		v, ok := getenv(s.env)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if s.value != nil {
			*s.value = strings.TrimSpace(v)
			continue
		}
		var items []string
		for _, it := range strings.Split(v, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				return usageError{fmt.Errorf("$%s=%q: an empty item; want comma-separated values of --%s", s.env, v, s.flag)}
			}
			items = append(items, it)
		}
		*s.list = items
	}
	return nil
}
