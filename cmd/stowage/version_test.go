package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	want := fmt.Sprintf("stowage (devel) (commit unknown, %s)\n", runtime.Version())
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, stderr, code := runCLI(t, nil, args...)
		if code != 0 || string(stdout) != want || stderr != "" {
			t.Errorf("stowage %s = exit %d, stdout %q, stderr %q; want exit 0, stdout %q", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
	if _, _, code := runCLI(t, nil, "version", "extra"); code != exitUsage {
		t.Errorf("stowage version extra: exit %d, want %d", code, exitUsage)
	}
}

// TestVersionFromLdflags builds stowage the way the README's release recipe
// does and checks that both values reach `stowage version`.
func TestVersionFromLdflags(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "stowage")
	ldflags := "-X github.com/stowage/stowage/internal/version.version=v9.8.7 -X github.com/stowage/stowage/internal/version.commit=0123abcd"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	want := fmt.Sprintf("stowage v9.8.7 (commit 0123abcd, %s)\n", runtime.Version())
	if err != nil || string(out) != want {
		t.Errorf("stowage version = %q, %v; want %q", out, err, want)
	}
}

// authServer is the in-process registry behind a Basic challenge (scheme
// "basic") or a Bearer token flow whose token endpoint takes Basic
// credentials (scheme "bearer"); it records every User-Agent.
type authServer struct {
	host   string
	mu     sync.Mutex
	agents []string
}

const (
	wireUser     = "alice"
	wirePassword = "wire-pw-7f3a"
	wireToken    = "wire-token-9c1e"
)

func startAuthServer(t *testing.T, scheme string) *authServer {
	t.Helper()
	s := &authServer{}
	f := &registrytest.Faults{Next: ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(wireUser+":"+wirePassword))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.agents = append(s.agents, r.UserAgent())
		s.mu.Unlock()
		switch {
		case scheme == "bearer" && r.URL.Path == "/token":
			if r.Header.Get("Authorization") != basic {
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"token": %q}`, wireToken)
		case scheme == "bearer" && r.Header.Get("Authorization") != "Bearer "+wireToken:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="wiretest"`, r.Host))
			w.WriteHeader(http.StatusUnauthorized)
		case scheme == "basic" && r.Header.Get("Authorization") != basic:
			w.Header().Set("WWW-Authenticate", `Basic realm="wiretest"`)
			w.WriteHeader(http.StatusUnauthorized)
		default:
			f.ServeHTTP(w, r)
		}
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// TestVerboseWireLog runs `stowage lock -v` against a Basic and a Bearer
// registry: stderr logs each request's method, URL and status, and no
// credential in any spelling; every request carries stowage's User-Agent.
func TestVerboseWireLog(t *testing.T) {
	t.Parallel()
	plain := startInProcess(t)
	basic, bearer := startAuthServer(t, "basic"), startAuthServer(t, "bearer")
	auth := &authn.AuthConfig{Username: wireUser, Password: wirePassword}
	seed(t, nil, []string{plain.Host + "/stowage/helper:v1", plain.Host + "/k8s/pause:3.10"}, registry.WithInsecure(plain.Host))
	seed(t, auth, []string{basic.host + "/team/app:1.0"}, registry.WithInsecure(basic.host))
	seed(t, auth, []string{bearer.host + "/team/tool:2"}, registry.WithInsecure(bearer.host))
	dir := writeConfig(t, map[string]configImage{
		"app":  {Ref: basic.host + "/team/app:1.0", User: wireUser, Password: "env:WIRE_PW"},
		"tool": {Ref: bearer.host + "/team/tool:2", User: wireUser, Password: "env:WIRE_PW"},
	}, plain.Host+"/stowage/helper:v1", plain.Host+"/k8s/pause:3.10")
	basic.agents, bearer.agents = nil, nil

	_, stderr, code := runCLI(t, map[string]string{"WIRE_PW": wirePassword, "STOWAGE_ALLOW_ENV": "WIRE_PW"}, "lock", dir, "-q", "-v",
		"--insecure-registry", plain.Host, "--insecure-registry", basic.host, "--insecure-registry", bearer.host)
	if code != 0 {
		t.Fatalf("lock -v: exit %d:\n%s", code, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^registry: GET http://` + regexp.QuoteMeta(basic.host) + `/v2/ -> 401 \(\d+ms\)$`),
		regexp.MustCompile(`(?m)^registry: GET http://` + regexp.QuoteMeta(basic.host) + `/v2/team/app/manifests/1\.0 -> 200 `),
		regexp.MustCompile(`(?m)^registry: GET http://` + regexp.QuoteMeta(bearer.host) + `/token\?scope=repository%3Ateam%2Ftool%3Apull&service=wiretest -> 200 `),
		regexp.MustCompile(`(?m)^registry: GET http://` + regexp.QuoteMeta(bearer.host) + `/v2/team/tool/manifests/2 -> 200 `),
		regexp.MustCompile(`(?m)^registry: GET http://` + regexp.QuoteMeta(plain.Host) + `/v2/k8s/pause/manifests/3\.10 -> 200 `),
	} {
		if !want.MatchString(stderr) {
			t.Errorf("lock -v stderr lacks a line matching %s:\n%s", want, stderr)
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(wireUser + ":" + wirePassword))
	for _, secret := range []string{"Basic ", "Bearer ", "Authorization", wirePassword, wireToken, b64, b64[:12]} {
		if strings.Contains(stderr, secret) {
			t.Errorf("lock -v stderr contains %q:\n%s", secret, stderr)
		}
	}
	for _, s := range []*authServer{basic, bearer} {
		if len(s.agents) == 0 {
			t.Fatalf("registry %s saw no request", s.host)
		}
		for _, ua := range s.agents {
			if !strings.HasPrefix(ua, "stowage/devel ") {
				t.Errorf("User-Agent %q, want it to start with stowage/devel", ua)
			}
		}
	}

	// Without -v, nothing is logged.
	if _, stderr, code := runCLI(t, map[string]string{"WIRE_PW": wirePassword, "STOWAGE_ALLOW_ENV": "WIRE_PW"}, "lock", dir, "-q", "--insecure-registry", basic.host); code != 0 || strings.Contains(stderr, "registry:") {
		t.Errorf("lock without -v: exit %d, stderr %q; want exit 0 and no wire log", code, stderr)
	}
}
