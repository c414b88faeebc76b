package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// canary is a password that must never be printed, logged or written. It
// has the characters that trip up quoting and URL encoding.
const canary = `c4nary-[p~a_s.s>w=o"r%d;\`

// lockFaultCase is one fault of TestLockFaults.
type lockFaultCase struct {
	name  string
	cmd   string // "lock": the app entry is missing; "bump": every entry is there
	auth  bool   // the app image has auth: user alice, password env:APP_PASSWORD
	env   map[string]string
	rules []registrytest.Rule
	args  []string
	// want
	code     int
	msg      []string // in stderr
	requests int      // requests for the image's tag (not its children, not pings)
	pings    int      // GET /v2/
	minTime  time.Duration
}

// TestLockFaults runs lock and bump against the in-process registry while a
// handler injects one fault into the requests for one image. Each case
// checks the exit code, the message about that image, the number of
// requests the registry saw, and that the lock is untouched on failure.
func TestLockFaults(t *testing.T) {
	t.Parallel()
	const appPath = "/v2/team/app/"
	tests := []lockFaultCase{
		{
			name:  "401 without credentials",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: "/v2/", Fault: registrytest.RequireBasic("alice", canary)}},
			code:  1, requests: 1, pings: 1,
			msg: []string{`image "HOST/team/app:1.0"`, "registry HOST: GET tag 1.0: 401 Unauthorized: UNAUTHORIZED", "no config credentials apply"},
		},
		{
			name:  "401 then success with the config's credentials",
			cmd:   "lock",
			auth:  true,
			env:   map[string]string{"APP_PASSWORD": canary, "STOWAGE_ALLOW_ENV": "APP_PASSWORD"},
			rules: []registrytest.Rule{{Path: "/v2/", Fault: registrytest.RequireBasic("alice", canary)}},
			code:  0, requests: 1, pings: 1,
		},
		{
			name:  "401 with a wrong password",
			cmd:   "lock",
			auth:  true,
			env:   map[string]string{"APP_PASSWORD": "wrong-" + canary, "STOWAGE_ALLOW_ENV": "APP_PASSWORD"},
			rules: []registrytest.Rule{{Path: "/v2/", Fault: registrytest.RequireBasic("alice", canary)}},
			code:  1, requests: 1, pings: 1,
			msg: []string{"401 Unauthorized", `sent the config's credentials: user "alice", password from env:APP_PASSWORD`},
		},
		{
			name:  "password variable not set",
			cmd:   "lock",
			auth:  true,
			env:   map[string]string{"STOWAGE_ALLOW_ENV": "APP_PASSWORD"},
			rules: []registrytest.Rule{{Path: "/v2/", Fault: registrytest.RequireBasic("alice", canary)}},
			code:  1, requests: 0, pings: 0,
			msg: []string{`image "HOST/team/app:1.0"`, "environment variable APP_PASSWORD is not set"},
		},
		{
			name:  "404",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Status(http.StatusNotFound, nil)}},
			code:  1, requests: 1, pings: 1,
			msg: []string{`image "HOST/team/app:1.0"`, "GET tag 1.0: 404 Not Found: MANIFEST_UNKNOWN injected by the test (no such repository or tag)"},
		},
		{
			name:  "429 with Retry-After, then success",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Times: 1, Fault: registrytest.Status(http.StatusTooManyRequests, map[string]string{"Retry-After": "1"})}},
			code:  0, requests: 2, pings: 1, minTime: time.Second,
		},
		{
			name:  "429 with Retry-After every time",
			cmd:   "lock",
			args:  []string{"--retries", "1"},
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Status(http.StatusTooManyRequests, map[string]string{"Retry-After": "1"})}},
			code:  1, requests: 2, pings: 1, minTime: time.Second,
			msg: []string{"GET tag 1.0: 429 Too Many Requests: TOOMANYREQUESTS injected by the test (Retry-After: 1) (2 attempts)"},
		},
		{
			name:  "500 every time",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Status(http.StatusInternalServerError, nil)}},
			code:  1, requests: 3, pings: 1,
			msg: []string{"GET tag 1.0: 500 Internal Server Error: UNKNOWN injected by the test (3 attempts)"},
		},
		{
			name:  "403",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Status(http.StatusForbidden, nil)}},
			code:  1, requests: 1, pings: 1,
			msg: []string{`image "HOST/team/app:1.0"`, "GET tag 1.0: 403 Forbidden"},
		},
		{
			name:  "429 without Retry-After every time",
			cmd:   "lock",
			args:  []string{"--retries", "1"},
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Status(http.StatusTooManyRequests, nil)}},
			code:  1, requests: 2, pings: 1,
			msg: []string{"GET tag 1.0: 429 Too Many Requests", "(2 attempts)"},
		},
		{
			name:  "502 every time",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Status(http.StatusBadGateway, nil)}},
			code:  1, requests: 3, pings: 1,
			msg: []string{"GET tag 1.0: 502 Bad Gateway", "(3 attempts)"},
		},
		{
			name:  "stalled body past the per-request timeout",
			cmd:   "lock",
			args:  []string{"--timeout", "300ms", "--retries", "1"},
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: stalledBody(5 * time.Second)}},
			// The headers came, so the request is not sent again; the
			// timeout covers the body and ends the run.
			code: 1, requests: 1, pings: 1, minTime: 300 * time.Millisecond,
			msg: []string{`image "HOST/team/app:1.0"`, "GET tag 1.0:"},
		},
		{
			name:  "500 once",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Times: 1, Fault: registrytest.Status(http.StatusInternalServerError, nil)}},
			code:  0, requests: 2, pings: 1,
		},
		{
			name:  "HEAD without Docker-Content-Digest falls back to GET",
			cmd:   "bump",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Method: http.MethodHead, Fault: registrytest.WithoutHeader("Docker-Content-Digest")}},
			code:  0, requests: 2, pings: 1,
		},
		{
			name:  "slow answer past the per-request timeout",
			cmd:   "lock",
			args:  []string{"--timeout", "200ms", "--retries", "1"},
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Delay(5 * time.Second)}},
			code:  1, requests: 2, pings: 1, minTime: 400 * time.Millisecond,
			msg: []string{"GET tag 1.0: no answer within 200ms (2 attempts)"},
		},
		{
			name:  "slow answer past the run's deadline",
			cmd:   "lock",
			args:  []string{"--timeout", "10s", "--deadline", "300ms"},
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Delay(5 * time.Second)}},
			code:  1, requests: 1, pings: 1, minTime: 300 * time.Millisecond,
			msg: []string{"GET tag 1.0: the run's time limit of 300ms ran out"},
		},
		{
			// Go's HTTP transport itself sends a request again once when
			// a reused keep-alive connection (the ping's) is reset before
			// any answer: 3 attempts, 4 requests.
			name:  "connection reset every time",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Fault: registrytest.Reset()}},
			code:  1, requests: 4, pings: 1,
			msg: []string{"GET tag 1.0: the connection was reset (3 attempts)"},
		},
		{
			name:  "connection reset once",
			cmd:   "lock",
			rules: []registrytest.Rule{{Path: appPath + "manifests/", Times: 1, Fault: registrytest.Reset()}},
			code:  0, requests: 2, pings: 1,
		},
	}
	// Every fault runs against go-containerregistry's in-process registry
	// and against Debian's docker-registry behind the same fault-injecting
	// reverse proxy on loopback: the real server answers as a user's
	// registry would.
	backends := []struct {
		name  string
		start func(t *testing.T) *inProcess
	}{
		{"in-process", startInProcess},
		{"docker-registry", startDistributionBehindFaults},
	}
	for _, be := range backends {
		for _, tc := range tests {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				reg := be.start(t)
				runLockFault(t, reg, tc)
			})
		}
	}
}

// runLockFault runs one case of TestLockFaults against reg.
func runLockFault(t *testing.T, reg *inProcess, tc lockFaultCase) {
	const appPath = "/v2/team/app/"
	h := reg.Host
	app, helper, pause := h+"/team/app:1.0", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, helper, pause}, registry.WithInsecure(h))
	ci := configImage{Ref: app}
	if tc.auth {
		ci.User, ci.Password = "alice", "env:APP_PASSWORD"
	}
	dir := writeConfig(t, map[string]configImage{"app": ci}, helper, pause)
	lockPath := filepath.Join(dir, lock.FileName)
	have := []string{helper, pause}
	if tc.cmd == "bump" {
		have = append(have, app)
	}
	l := &lock.Lock{}
	for _, r := range have {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(e)
	}
	if err := os.WriteFile(lockPath, l.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, lockPath)

	reg.Faults.Reset()
	for _, r := range tc.rules {
		reg.Faults.Add(r)
	}
	args := append([]string{tc.cmd, dir, "--insecure-registry", h}, tc.args...)
	start := time.Now()
	stdout, stderr, code := runCLI(t, tc.env, args...)
	elapsed := time.Since(start)

	if code != tc.code {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
	}
	for _, m := range tc.msg {
		if m = strings.ReplaceAll(m, "HOST", h); !strings.Contains(stderr, m) {
			t.Errorf("stderr lacks %q:\n%s", m, stderr)
		}
	}
	if got := reg.Faults.Count("", appPath+"manifests/1.0"); got != tc.requests {
		t.Errorf("%d requests for the image, want %d: %v", got, tc.requests, reg.Faults.Requests())
	}
	pings := 0
	for _, r := range reg.Faults.Requests() {
		if r.Path == "/v2/" {
			pings++
		}
	}
	// One ping per registry and run, however many repositories (bump
	// checks the helper and pause too): the Resolver keeps the answer.
	wantPings := tc.pings
	if pings != wantPings {
		t.Errorf("%d pings, want %d: %v", pings, wantPings, reg.Faults.Requests())
	}
	if elapsed < tc.minTime {
		t.Errorf("took %v, want at least %v (Retry-After or timeouts not honoured)", elapsed, tc.minTime)
	}
	after := readFile(t, lockPath)
	switch {
	case tc.code != 0 && !bytes.Equal(after, before):
		t.Errorf("the lock changed although the run failed")
	case tc.code == 0 && tc.cmd == "lock":
		want, _ := offlineimage.Entry(app)
		got, err := lock.Parse(after, lockPath)
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := got.Lookup(want.Name); !ok || e.Digest != want.Digest {
			t.Errorf("lock entry for the app = %+v, want digest %s", e, want.Digest)
		}
	case tc.code == 0 && !bytes.Equal(after, before):
		t.Errorf("a bump with nothing new changed the lock")
	}
	for what, b := range map[string][]byte{"stdout": stdout, "stderr": []byte(stderr), "lock": after} {
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("the password appears in %s", what)
		}
	}
}

// stalledBody answers 200 with the headers of a manifest and the first
// byte of its body, then stalls for d: a registry or proxy that hangs
// mid-answer.
func stalledBody(d time.Duration) registrytest.Fault {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("{"))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	}
}

// startDistributionBehindFaults starts Debian's docker-registry and a
// fault-injecting reverse proxy in front of it on loopback; the proxy's
// address is the registry's host for the test. docker-registry builds its
// upload URLs from the Host header, which the proxy passes on, so pushes go
// through the proxy too.
func startDistributionBehindFaults(t *testing.T) *inProcess {
	t.Helper()
	d := registrytest.Start(t, registrytest.Options{})
	target, err := url.Parse("http://" + d.Host)
	if err != nil {
		t.Fatal(err)
	}
	f := &registrytest.Faults{Next: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &inProcess{Host: strings.TrimPrefix(srv.URL, "http://"), Faults: f}
}

// TestLockReportsEveryFailure fails two images in different ways: lock
// names both with the registry's answers and exits 1, and the lock keeps
// what it learned (the helper and pause entries), so that the next run,
// with the registry healthy again, asks only for the two that failed.
func TestLockReportsEveryFailure(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	app, tool, helper, pause := h+"/team/app:1.0", h+"/team/tool:2", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, tool, helper, pause}, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}, "tool": {Ref: tool}}, helper, pause)
	reg.Faults.Add(registrytest.Rule{Path: "/v2/team/app/manifests/", Fault: registrytest.Status(http.StatusNotFound, nil)})
	reg.Faults.Add(registrytest.Rule{Path: "/v2/team/tool/manifests/", Fault: registrytest.Status(http.StatusForbidden, nil)})
	_, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{"2 images failed", `image "` + app + `"`, "404 Not Found", `image "` + tool + `"`, "403 Forbidden",
		"keeps the 2 entries it has; 2 of 4 images missing: running lock again will not help until the changes the failures name are made"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// A 404 and a denied credential fail the same way next time: no
	// advice to run lock again.
	if strings.Contains(stderr, "run `stowage lock` again") {
		t.Errorf("stderr advises running lock again after a 404 and a 403:\n%s", stderr)
	}
	lockPath := filepath.Join(dir, lock.FileName)
	l, err := lock.Parse(readFile(t, lockPath), lockPath)
	if err != nil {
		t.Fatalf("the lock written is not valid: %v", err)
	}
	var names []string
	for _, e := range l.Entries {
		names = append(names, e.Reference)
		if want, _ := offlineimage.Entry(e.Reference); e.Digest != want.Digest {
			t.Errorf("%s: digest %s, want %s", e.Reference, e.Digest, want.Digest)
		}
	}
	if want := []string{pause, helper}; !slices.Equal(names, want) {
		t.Errorf("lock entries %v, want the resolved %v", names, want)
	}
	// render refuses what the lock lacks, by name.
	if _, stderr, code := runCLI(t, nil, "render", dir); code != 1 || !strings.Contains(stderr, app) {
		t.Errorf("render with the partial lock: exit %d, want 1 naming %s:\n%s", code, app, stderr)
	}

	reg.Faults.Reset()
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	for _, r := range reg.Faults.Requests() {
		if strings.Contains(r.Path, "/manifests/") && !strings.Contains(r.Path, "/team/") {
			t.Errorf("the second run asked again for %s %s, which the lock kept", r.Method, r.Path)
		}
	}
	if a, b := reg.Faults.Count("GET", "/team/app/manifests/1.0"), reg.Faults.Count("GET", "/team/tool/manifests/2"); a != 1 || b != 1 {
		t.Errorf("the second run read the failed tags %d and %d times, want once each: %v", a, b, reg.Faults.Requests())
	}
}

// TestBumpKeepGoing: a bump where one image fails changes nothing (all or
// nothing), unless --keep-going: then the other image is bumped, the failed
// one keeps its old entry, and bump exits 1 naming it.
func TestBumpKeepGoing(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	app, tool, helper, pause := h+"/team/app:1.0", h+"/team/tool:2", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, tool, helper, pause}, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}, "tool": {Ref: tool}}, helper, pause)
	// Old digests (other stand-ins) for both, so that both would move.
	l := &lock.Lock{}
	olds := map[string]lock.Entry{}
	for _, r := range []string{app, tool, helper, pause} {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		if r == app || r == tool {
			o, err := offlineimage.Entry(r + "-old")
			if err != nil {
				t.Fatal(err)
			}
			o.Name, o.Reference = e.Name, e.Reference
			e = o
			olds[r] = o
		}
		l.Put(e)
	}
	lockPath := filepath.Join(dir, lock.FileName)
	if err := os.WriteFile(lockPath, l.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, lockPath)
	reg.Faults.Add(registrytest.Rule{Path: "/v2/team/app/manifests/", Fault: registrytest.Status(http.StatusNotFound, nil)})

	if _, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", h); code != 1 || !strings.Contains(stderr, "not changed") {
		t.Fatalf("bump: exit %d, want 1 with the lock not changed: %s", code, stderr)
	}
	if !bytes.Equal(readFile(t, lockPath), before) {
		t.Fatal("bump without --keep-going changed the lock")
	}

	_, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", h, "--keep-going")
	if code != 1 || !strings.Contains(stderr, `image "`+app+`"`) || !strings.Contains(stderr, "404 Not Found") {
		t.Fatalf("bump --keep-going: exit %d, want 1 naming %s: %s", code, app, stderr)
	}
	got, err := lock.Parse(readFile(t, lockPath), lockPath)
	if err != nil {
		t.Fatal(err)
	}
	appKey, toolKey := olds[app].Name, olds[tool].Name
	if e, _ := got.Lookup(appKey); e.Digest != olds[app].Digest {
		t.Errorf("the failed app has digest %s, want its old %s", e.Digest, olds[app].Digest)
	}
	want, _ := offlineimage.Entry(tool)
	if e, _ := got.Lookup(toolKey); e.Digest != want.Digest || e.Digest == olds[tool].Digest {
		t.Errorf("tool has digest %s, want the bumped %s", e.Digest, want.Digest)
	}
}

// TestDigestHeaderMismatchRefused puts a proxy between stowage and the
// registry that changes a manifest body under its tag while keeping the
// registry's Docker-Content-Digest (whitespace appended: still valid JSON,
// another digest). lock and bump refuse it, naming the image, both digests
// and the registry, and record nothing from it; on the in-process registry
// and on Debian's docker-registry.
func TestDigestHeaderMismatchRefused(t *testing.T) {
	t.Parallel()
	for _, be := range []struct {
		name  string
		start func(t *testing.T) *inProcess
	}{{"in-process", startInProcess}, {"docker-registry", startDistributionBehindFaults}} {
		for _, cmd := range []string{"lock", "bump"} {
			t.Run(be.name+"/"+cmd, func(t *testing.T) {
				reg := be.start(t)
				h := reg.Host
				app, helper, pause := h+"/team/app:1.0", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
				seed(t, nil, []string{app, helper, pause}, registry.WithInsecure(h))
				dir := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
				l := &lock.Lock{}
				for _, r := range []string{helper, pause} {
					e, err := offlineimage.Entry(r)
					if err != nil {
						t.Fatal(err)
					}
					l.Put(e)
				}
				real, err := offlineimage.Entry(app)
				if err != nil {
					t.Fatal(err)
				}
				if cmd == "bump" {
					// An older digest for the app, so that bump reads
					// the manifest again.
					old, err := offlineimage.Entry(h + "/team/app:0.9")
					if err != nil {
						t.Fatal(err)
					}
					old.Name, old.Reference = real.Name, real.Reference
					l.Put(old)
				}
				lockPath := filepath.Join(dir, lock.FileName)
				if err := os.WriteFile(lockPath, l.Marshal(), 0o644); err != nil {
					t.Fatal(err)
				}
				before := readFile(t, lockPath)
				reg.Faults.Add(registrytest.Rule{Path: "/v2/team/app/manifests/", Fault: registrytest.AlterBody(func(b []byte) []byte {
					return append(b, ' ')
				})})
				_, stderr, code := runCLI(t, nil, cmd, dir, "--insecure-registry", h)
				if code != 1 {
					t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
				}
				for _, want := range []string{`image "` + app + `"`, "Docker-Content-Digest " + real.Digest, "hashes to sha256:", h} {
					if !strings.Contains(stderr, want) {
						t.Errorf("stderr lacks %q:\n%s", want, stderr)
					}
				}
				if got := readFile(t, lockPath); !bytes.Equal(got, before) {
					t.Errorf("the lock changed:\n%s", got)
				}
			})
		}
	}
}

// TestLockEveryImageFails: when no image resolves and there is no lock,
// lock writes no file, prints no "up to date" summary on stdout and says
// the lock was not written because none of the images resolved.
func TestLockEveryImageFails(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	app, helper, pause := h+"/team/app:1.0", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
	reg.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: registrytest.Status(http.StatusNotFound, nil)})
	stdout, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h, "--retries", "0")
	lockPath := filepath.Join(dir, lock.FileName)
	if code != 1 || !strings.Contains(stderr, lockPath+" not written: none of the 3 images resolved") || strings.Contains(stderr, "keeps the") {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 saying the lock was not written", code, stderr)
	}
	if len(stdout) != 0 {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	if _, err := os.Stat(lockPath); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v)", lockPath, err)
	}
}
