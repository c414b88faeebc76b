// Package registryflags defines the flags of the commands that talk to
// registries (lock, bump, vet --remote/--site, mirror, push) once, and
// fills the settings a site keeps for every command (insecure hosts,
// mirrors, a private CA, trusted token realms) from their STOWAGE_*
// variables where the command line does not give them.
package registryflags

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/registry"
)

// Values point at the variables the registry flags set.
type Values struct {
	Jobs                       *int
	Insecure, Mirrors          *[]string
	CAFile                     *string
	RequestTimeout, RunTimeout *time.Duration
	Retries                    *int
	Quiet                      *bool
	TrustedRealms              *[]string
}

// Defaults are what differs between the commands in their registry
// flags: the defaults of --timeout and --deadline and the help of
// --timeout and --jobs.
type Defaults struct {
	RequestTimeout, RunTimeout time.Duration
	TimeoutUsage, JobsUsage    string
}

// Resolve are the defaults of the commands that resolve references (lock,
// bump, vet): internal/registry's limits.
var Resolve = Defaults{
	RequestTimeout: registry.DefaultRequestTimeout,
	RunTimeout:     registry.DefaultRunTimeout,
	TimeoutUsage:   "time limit of one registry request",
	JobsUsage:      "references resolved at once",
}

// Push are push's: internal/registry's limits; --jobs is how many of the
// artifact's layers are uploaded at once (go-containerregistry's jobs).
var Push = Defaults{
	RequestTimeout: registry.DefaultRequestTimeout,
	RunTimeout:     registry.DefaultRunTimeout,
	TimeoutUsage:   "time limit of one registry request",
	JobsUsage:      "layers uploaded at once",
}

// Add defines the registry flags on fs, writing into v, with the
// defaults and help d.
func Add(fs *pflag.FlagSet, v Values, d Defaults) {
	fs.IntVar(v.Jobs, "jobs", registry.DefaultJobs, d.JobsUsage)
	fs.StringArrayVar(v.Insecure, "insecure-registry", nil, "allow plain HTTP to this registry, host[:port] as contacted (repeatable; default $STOWAGE_INSECURE_REGISTRY, comma-separated)")
	fs.StringArrayVar(v.Mirrors, "mirror", nil, "resolve REGISTRY's images at a mirror, REGISTRY=HOST[:PORT][/PATH]; the lock keeps the original names (repeatable; default $STOWAGE_MIRROR, comma-separated)")
	fs.StringVar(v.CAFile, "ca-file", "", "PEM file of a private CA to trust besides the system's; - reads standard input (default $STOWAGE_CA_FILE)")
	fs.DurationVar(v.RequestTimeout, "timeout", d.RequestTimeout, d.TimeoutUsage)
	fs.DurationVar(v.RunTimeout, "deadline", d.RunTimeout, "time limit of the whole run")
	fs.IntVar(v.Retries, "retries", registry.DefaultAttempts-1, "retries of a request after a 429, a 5xx, a reset connection or a timeout")
	fs.BoolVarP(v.Quiet, "quiet", "q", false, "no progress bar")
	fs.StringArrayVar(v.TrustedRealms, "trust-token-realm", nil, "send registry credentials to the token realm on this host[:port] although it is not the registry's own host (repeatable; default $STOWAGE_TRUST_TOKEN_REALM, comma-separated)")
}

// setting is a registry setting a variable can hold: its flag, its
// variable, and where its value goes (a comma-separated list for a
// repeatable flag).
type setting struct {
	flag, env string
	list      *[]string
	value     *string
}

// settings are v's registry settings with a variable each.
func settings(v Values) []setting {
	return []setting{
		{flag: "insecure-registry", env: "STOWAGE_INSECURE_REGISTRY", list: v.Insecure},
		{flag: "mirror", env: "STOWAGE_MIRROR", list: v.Mirrors},
		{flag: "ca-file", env: "STOWAGE_CA_FILE", value: v.CAFile},
		{flag: "trust-token-realm", env: "STOWAGE_TRUST_TOKEN_REALM", list: v.TrustedRealms},
	}
}

// EnvError is a variable whose value is refused: a list with an empty
// item. It is a usage error.
type EnvError struct {
	// Env is the variable, Value its value and Flag the flag it stands for.
	Env, Value, Flag string
}

// Error names the variable, its value and the flag.
func (e *EnvError) Error() string {
	return fmt.Sprintf("$%s=%q: an empty item; want comma-separated values of --%s", e.Env, e.Value, e.Flag)
}

// ApplyEnv fills every registry setting of v whose flag fs does not mark
// changed from its variable, read through getenv: a flag on the command
// line replaces the variable (fs nil: every variable applies). An empty
// variable is unset; a list with an empty item is an *EnvError.
func ApplyEnv(fs *pflag.FlagSet, v Values, getenv func(string) (string, bool)) error {
	for _, s := range settings(v) {
		if fs != nil && fs.Changed(s.flag) {
			continue
		}
		val, ok := getenv(s.env)
		if !ok || strings.TrimSpace(val) == "" {
			continue
		}
		if s.value != nil {
			*s.value = strings.TrimSpace(val)
			continue
		}
		var items []string
		for _, it := range strings.Split(val, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				return &EnvError{Env: s.env, Value: val, Flag: s.flag}
			}
			items = append(items, it)
		}
		*s.list = items
	}
	return nil
}

// Options are the registry client's options that the flags in v ask for
// (after ApplyEnv): jobs, plain-HTTP hosts, the two timeouts, retries
// waiting backoff before the first, trusted token realms, a private CA
// and each --mirror REGISTRY=HOST[:PORT][/PATH]. Error: a --mirror without
// "=", a usage error.
func Options(v Values, backoff time.Duration) ([]registry.Option, error) {
	opts := []registry.Option{
		registry.WithJobs(*v.Jobs),
		registry.WithInsecure(*v.Insecure...),
		registry.WithRequestTimeout(*v.RequestTimeout),
		registry.WithRunTimeout(*v.RunTimeout),
		registry.WithRetry(*v.Retries+1, backoff),
		registry.WithTrustedRealm(*v.TrustedRealms...),
	}
	if *v.CAFile != "" && *v.CAFile != confined.Stdin { // "-": the caller reads it (registry.WithCAPEM)
		opts = append(opts, registry.WithCAFile(*v.CAFile))
	}
	for _, m := range *v.Mirrors {
		from, to, ok := strings.Cut(m, "=")
		if !ok {
			return nil, fmt.Errorf("--mirror %q: want REGISTRY=HOST[:PORT][/PATH]", m)
		}
		opts = append(opts, registry.WithMirror(from, to))
	}
	return opts, nil
}
