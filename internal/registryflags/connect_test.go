package registryflags

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// values are the flags' variables at the defaults lock uses.
func values(caFile string, retries int, mirrors ...string) Values {
	jobs, quiet := 4, true
	var insecure, realms []string
	req, run := time.Second, time.Minute
	return Values{Jobs: &jobs, Insecure: &insecure, Mirrors: &mirrors, CAFile: &caFile,
		RequestTimeout: &req, RunTimeout: &run, Retries: &retries, Quiet: &quiet, TrustedRealms: &realms}
}

// TestConnect: a good set of flags gives a client; each command-line
// mistake is a *UsageError, and standard input without a certificate is
// bad input, not a usage error.
func TestConnect(t *testing.T) {
	t.Parallel()
	none := func(string) (string, bool) { return "", false }
	c := Client{Getenv: none, UserAgent: "test"}
	r, done, err := Connect(values("", 0, "docker.io=127.0.0.1:5000/docker.io"), c)
	if err != nil || r == nil {
		t.Fatalf("good flags: %v", err)
	}
	done()
	var ue *UsageError
	for name, v := range map[string]Values{
		"negative --retries": values("", -1),
		"--mirror without =": values("", 0, "docker.io"),
		"--ca-file - taken":  values("-", 0),
	} {
		if _, _, err := Connect(v, c); !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a *UsageError", name, err)
		}
	}
	withStdin := c
	withStdin.Stdin = strings.NewReader("not a certificate\n")
	_, _, err = Connect(values("-", 0), withStdin)
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "CA file standard input: no PEM certificate in it") {
		t.Errorf("--ca-file - without PEM: %v, want bad input naming standard input", err)
	}
	env := func(k string) (string, bool) {
		if k == "STOWAGE_MIRROR" {
			return "docker.io=x,,ghcr.io=y", true
		}
		return "", false
	}
	bad := c
	bad.Getenv = env
	if _, _, err := Connect(values("", 0), bad); !errors.As(err, &ue) || !strings.Contains(err.Error(), "$STOWAGE_MIRROR") {
		t.Errorf("a refused variable: %v, want a *UsageError naming it", err)
	}
}
