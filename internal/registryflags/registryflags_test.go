package registryflags

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
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
