package registrytest

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// needRegistry skips t without docker-registry (fails it with RequireEnv).
func needRegistry(t *testing.T) {
	t.Helper()
	if _, err := Lookup(); err != nil {
		Start(t, Options{}) // skips or fails as Start does
	}
}

// hold listens on a free port of 127.0.0.1 until the end of t, with h
// answering (nil: accept and never answer), and returns the port.
func hold(t *testing.T, h http.Handler) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		t.Cleanup(func() { l.Close() })
	} else {
		srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
		srv.Start()
		t.Cleanup(srv.Close)
	}
	return l.Addr().(*net.TCPAddr).Port
}

// impostor answers every request as a registry would, API header
// included: what a registry of another test on the same port says.
var impostor = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	w.WriteHeader(http.StatusOK)
})

// TestStartOnTakenPort: a port another server holds (one that answers
// like a registry, too) is not taken for ours: with o.Port the start
// fails at once saying the port is taken; with a free port picked, the
// start moves to another port and its registry is the one answering.
func TestStartOnTakenPort(t *testing.T) {
	t.Parallel()
	needRegistry(t)
	taken := hold(t, impostor)

	_, err := StartDistribution(t.TempDir(), Options{Port: taken})
	if !errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("fixed port taken: %v, want the port named taken", err)
	}

	for _, o := range []Options{{}, {TLS: true}, {Users: map[string]string{"alice": "secret"}}} {
		if _, err := exec.LookPath("htpasswd"); o.Users != nil && err != nil {
			continue
		}
		picks := 0
		d, err := startDistribution(t.TempDir(), o, func() (int, error) {
			picks++
			if picks < 3 {
				return taken, nil
			}
			return freePort()
		})
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		t.Cleanup(func() { d.Stop() })
		if picks != 3 || strings.HasSuffix(d.Host, ":"+strconv.Itoa(taken)) {
			t.Errorf("%+v: %d picks, registry on %s (taken port %d)", o, picks, d.Host, taken)
		}
		if err := d.wait(); err != nil {
			t.Errorf("%+v: the registry on %s does not answer as ours: %v", o, d.Host, err)
		}
	}

	picks := 0
	_, err = startDistribution(t.TempDir(), Options{}, func() (int, error) { picks++; return taken, nil })
	if !errors.Is(err, errPortTaken) || picks != StartAttempts {
		t.Errorf("every pick taken: %v after %d picks, want the port named taken after %d", err, picks, StartAttempts)
	}
}
