package registryflags

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/stowage/stowage/internal/registry"
)

type flags struct {
	jobs, retries     int
	insecure, mirrors []string
	realms            []string
	ca                string
	req, run          time.Duration
	quiet             bool
}

func (f *flags) values() Values {
	return Values{Jobs: &f.jobs, Insecure: &f.insecure, Mirrors: &f.mirrors, CAFile: &f.ca, RequestTimeout: &f.req,
		RunTimeout: &f.run, Retries: &f.retries, Quiet: &f.quiet, TrustedRealms: &f.realms}
}

// TestApplyEnv: a variable fills its setting unless the flag was given,
// a list is split at commas and trimmed, an empty variable is unset, and
// a list with an empty item is an *EnvError naming the variable.
func TestApplyEnv(t *testing.T) {
	t.Parallel()
	var f flags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Add(fs, f.values(), Push)
	if err := fs.Parse([]string{"--mirror", "docker.io=flag:5000"}); err != nil {
		t.Fatal(err)
	}
	if f.req != Push.RequestTimeout || f.run != Push.RunTimeout || fs.Lookup("jobs").Usage != Push.JobsUsage {
		t.Errorf("defaults not applied: timeout %v, deadline %v, jobs usage %q", f.req, f.run, fs.Lookup("jobs").Usage)
	}
	env := map[string]string{
		"STOWAGE_INSECURE_REGISTRY": " a:5000, b ",
		"STOWAGE_MIRROR":            "docker.io=env:5000",
		"STOWAGE_CA_FILE":           " /ca.pem ",
		"STOWAGE_TRUST_TOKEN_REALM": "  ",
	}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := ApplyEnv(fs, f.values(), getenv); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.insecure, []string{"a:5000", "b"}) || f.ca != "/ca.pem" || f.realms != nil {
		t.Errorf("insecure %q, ca %q, realms %q; want [a:5000 b], /ca.pem, none", f.insecure, f.ca, f.realms)
	}
	if !slices.Equal(f.mirrors, []string{"docker.io=flag:5000"}) {
		t.Errorf("mirrors = %q, want the flag's, not the variable's", f.mirrors)
	}
	env["STOWAGE_INSECURE_REGISTRY"] = "a,,b"
	err := ApplyEnv(nil, f.values(), getenv)
	var ee *EnvError
	if !errors.As(err, &ee) || ee.Env != "STOWAGE_INSECURE_REGISTRY" || ee.Flag != "insecure-registry" {
		t.Fatalf("an empty item: %v, want an *EnvError naming the variable", err)
	}
	if want := `$STOWAGE_INSECURE_REGISTRY="a,,b": an empty item; want comma-separated values of --insecure-registry`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestOptions: every flag becomes a registry option that registry.New
// accepts; a --mirror without "=" is refused naming the value, and one
// whose target is no host is refused by registry.New.
func TestOptions(t *testing.T) {
	t.Parallel()
	f := &flags{jobs: 4, retries: 2, insecure: []string{"localhost:5000"}, mirrors: []string{"docker.io=mirror.lab:5000/hub"},
		realms: []string{"auth.lab"}, req: time.Second, run: time.Minute}
	opts, err := Options(f.values(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 7 {
		t.Errorf("%d options, want 7 (jobs, insecure, two timeouts, retries, realms, one mirror)", len(opts))
	}
	if _, err := registry.New(opts...); err != nil {
		t.Errorf("registry.New: %v", err)
	}
	f.mirrors = []string{"docker.io"}
	if _, err := Options(f.values(), time.Millisecond); err == nil || err.Error() != `--mirror "docker.io": want REGISTRY=HOST[:PORT][/PATH]` {
		t.Errorf("a mirror without =: %v", err)
	}
	f.mirrors = []string{"docker.io=/"}
	opts, err = Options(f.values(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.New(opts...); err == nil {
		t.Error("registry.New accepted a mirror with no host")
	}
}
