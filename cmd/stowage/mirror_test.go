package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/internal/testing/testbin"
	"github.com/stowage/stowage/schema"
)

// countingProxy is a reverse proxy in front of a registry that counts the
// blob bytes uploaded through it and the upload requests, and can slow
// uploads down.
type countingProxy struct {
	Host    string
	bytes   atomic.Int64
	uploads atomic.Int64
	slow    atomic.Bool
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse("http://" + target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/uploads") {
			if r.Method == http.MethodPost {
				p.uploads.Add(1)
			}
			if r.Body != nil {
				r.Body = &countedBody{ReadCloser: r.Body, p: p}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.Host = strings.TrimPrefix(srv.URL, "http://")
	return p
}

type countedBody struct {
	io.ReadCloser
	p *countingProxy
}

func (b *countedBody) Read(q []byte) (int, error) {
	if b.p.slow.Load() && len(q) > 4096 {
		q = q[:4096]
		time.Sleep(2 * time.Millisecond)
	}
	n, err := b.ReadCloser.Read(q)
	b.p.bytes.Add(int64(n))
	return n, err
}

// dockerAuths is the Docker config of the test process: TestMain points
// $DOCKER_CONFIG at dir for every test and every binary they run, and
// dockerLogin adds a registry's credentials to its config.json. Each
// registry is a loopback port of its own, so tests running in parallel
// share the file without one's credentials going to another's registry.
var dockerAuths struct {
	mu    sync.Mutex
	dir   string
	auths map[string]authn.AuthConfig
}

// dockerLogin adds user and password for host to the process's Docker
// config (dockerAuths), as docker login would, until the end of t. The
// file is replaced whole (a rename), so that no reader sees half of it.
func dockerLogin(t *testing.T, host, user, password string) {
	t.Helper()
	write := func() error {
		type entry struct {
			Username string `json:"username"`
			Password string `json:"password"`
		}
		auths := map[string]entry{}
		for h, a := range dockerAuths.auths {
			auths[h] = entry{a.Username, a.Password}
		}
		b, err := json.Marshal(map[string]any{"auths": auths})
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(dockerAuths.dir, "config-*.json")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(b); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), filepath.Join(dockerAuths.dir, "config.json"))
	}
	dockerAuths.mu.Lock()
	defer dockerAuths.mu.Unlock()
	if dockerAuths.dir == "" || os.Getenv("DOCKER_CONFIG") != dockerAuths.dir {
		t.Fatalf("$DOCKER_CONFIG is not the test process's Docker config (TestMain sets it; a test may not change it)")
	}
	if dockerAuths.auths == nil {
		dockerAuths.auths = map[string]authn.AuthConfig{}
	}
	dockerAuths.auths[host] = authn.AuthConfig{Username: user, Password: password}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dockerAuths.mu.Lock()
		defer dockerAuths.mu.Unlock()
		delete(dockerAuths.auths, host)
		if err := write(); err != nil {
			t.Error(err)
		}
	})
}

// mirrorSetup is a source docker-registry with htpasswd (users alice and
// bob) seeded with images sharing a base layer, a multi-arch index whose
// children share it too, stand-ins for helper and pause; a config using
// them; its lock made by `stowage lock`; and a plain-HTTP site
// docker-registry behind a counting proxy.
type mirrorSetup struct {
	src, site *registrytest.Distribution
	proxy     *countingProxy
	dir       string
	env       map[string]string
	refs      map[string]string // config key -> reference
}

func newMirrorSetup(t *testing.T, srcHost func(string) string) *mirrorSetup {
	t.Helper()
	s := &mirrorSetup{}
	s.src = registrytest.Start(t, registrytest.Options{Users: map[string]string{"alice": canary, "bob": canary + "-bob"}})
	s.site = registrytest.Start(t, registrytest.Options{})
	s.proxy = startCountingProxy(t, s.site.Host)
	h := s.src.Host
	if srcHost != nil {
		h = srcHost(h)
	}
	base := registrytest.Layer("base layer", 300_000)
	amd := registrytest.Image(t, base, registrytest.Layer("amd64", 20_000))
	arm := registrytest.Image(t, base, registrytest.Layer("arm64", 21_000))
	idx := registrytest.Index(amd, arm)
	s.refs = map[string]string{
		"app-a":   h + "/team/app-a:v1",
		"app-b":   h + "/team/app-b:v1",
		"multi":   h + "/lib/multi:1.0",
		"armonly": h + "/lib/armonly:1.0",
		"bobs":    h + "/bob/tool:2",
	}
	push := mustResolver(t, registry.WithInsecure(s.src.Host))
	alice := &authn.AuthConfig{Username: "alice", Password: canary}
	writes := []struct {
		ref string
		img v1.Image
		idx v1.ImageIndex
	}{
		{s.src.Host + "/team/app-a:v1", registrytest.Image(t, base, registrytest.Layer("app-a", 50_000)), nil},
		{s.src.Host + "/team/app-b:v1", registrytest.Image(t, base, registrytest.Layer("app-b", 60_000)), nil},
		{s.src.Host + "/lib/multi:1.0", nil, idx},
		{s.src.Host + "/lib/armonly:1.0", nil, idx},
		{s.src.Host + "/bob/tool:2", registrytest.Image(t, base, registrytest.Layer("bob's tool", 10_000)), nil},
	}
	for _, w := range writes {
		if err := registrytest.Write(context.Background(), push, registrytest.Ref(t, w.ref), alice, w.img, w.idx); err != nil {
			t.Fatal(err)
		}
	}
	helper, pause := h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	if err := registrytest.SeedStandIns(context.Background(), push, alice, []string{s.src.Host + "/stowage/helper:v1", s.src.Host + "/k8s/pause:3.10"}, 2); err != nil {
		t.Fatal(err)
	}
	// The registry answers every repository with htpasswd; helper and
	// pause get the Docker config's credentials (alice).
	dockerLogin(t, h, "alice", canary)
	images := map[string]configImage{}
	for k, r := range s.refs {
		ci := configImage{Ref: r, User: "alice", Password: "env:SRC_PASSWORD"}
		if k == "armonly" {
			ci.Platforms = []string{"linux/arm64"}
		}
		if k == "bobs" {
			ci.User, ci.Password = "bob", "env:BOB_PASSWORD"
		}
		images[k] = ci
	}
	s.dir = writeConfig(t, images, helper, pause)
	s.env = map[string]string{"SRC_PASSWORD": canary, "BOB_PASSWORD": canary + "-bob", "STOWAGE_ALLOW_ENV": "SRC_PASSWORD,BOB_PASSWORD"}
	if _, stderr, code := runCLI(t, s.env, "lock", s.dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	return s
}

// dryRun returns the plan of `stowage mirror --dry-run -o json`.
func (s *mirrorSetup) dryRun(t *testing.T, args ...string) v1alpha1.MirrorPlanReport {
	t.Helper()
	stdout, stderr, code := runCLI(t, s.env, append([]string{"mirror", s.dir, "--dry-run", "-o", "json"}, args...)...)
	noCanary(t, "dry-run", stdout, stderr)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, stderr)
	}
	var rep v1alpha1.MirrorPlanReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return rep
}

func noCanary(t *testing.T, what string, stdout []byte, stderr string) {
	t.Helper()
	for _, b := range []string{string(stdout), stderr} {
		if strings.Contains(b, canary) || strings.Contains(b, "c4nary") {
			t.Errorf("%s: a password appears in the output:\n%s", what, b)
		}
	}
}

// verifyAt checks that every lock entry's pinned digest is at the site
// under prefix, by tag for index and manifest pins, by digest for the
// child-pinned image.
func (s *mirrorSetup) verifyAt(t *testing.T, siteHost, prefix string) map[string]v1.Hash {
	t.Helper()
	l, err := lock.Parse(readFile(t, filepath.Join(s.dir, lock.FileName)), "lock")
	if err != nil {
		t.Fatal(err)
	}
	m := site.Mapping{Default: siteHost + prefix}
	got := map[string]v1.Hash{}
	for _, e := range l.Entries {
		ref := registrytest.Ref(t, e.Reference)
		to, err := m.Repository(ref.Context(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(e.Name, "armonly") {
			child, err := lock.DigestFor(e, "linux/arm64")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := remote.Head(to.Digest(child)); err != nil {
				t.Errorf("%s: child %s not at the site: %v", e.Name, child, err)
			}
			if _, err := remote.Head(to.Tag("1.0")); err == nil {
				t.Errorf("%s: a tag was written for a child pinned alone", e.Name)
			}
			continue
		}
		d, err := remote.Head(to.Tag(ref.Identifier()))
		if err != nil {
			t.Errorf("%s: not at the site: %v", e.Name, err)
			continue
		}
		if d.Digest.String() != e.Digest {
			t.Errorf("%s: %s at the site, the lock pins %s", e.Name, d.Digest, e.Digest)
		}
		got[e.Name] = d.Digest
	}
	return got
}

// TestMirrorDistribution runs `stowage mirror` between two docker-registry
// instances: the bytes the site receives equal the plan's unique-blob
// bytes exactly; a second run sends no blob; every digest verifies; the
// OCI bundle round trip gives the same digests as the direct copy and is
// byte-identical when made twice; --have leaves out what the site holds;
// no password appears in any output.
func TestMirrorDistribution(t *testing.T) {
	t.Parallel()
	s := newMirrorSetup(t, nil)
	to := s.proxy.Host + "/site"
	flags := []string{"--to", to, "--insecure-registry", s.src.Host, "--insecure-registry", s.proxy.Host}
	plan := s.dryRun(t, flags...)
	if plan.Missing != 7 || plan.Present != 0 {
		t.Errorf("plan: %d missing, %d present; want 7 and 0", plan.Missing, plan.Present)
	}
	if plan.Bytes == 0 || s.proxy.bytes.Load() != 0 {
		t.Fatalf("plan bytes %d, bytes sent by the dry run %d", plan.Bytes, s.proxy.bytes.Load())
	}
	stdout, stderr, code := runCLI(t, s.env, append([]string{"mirror", s.dir}, flags...)...)
	noCanary(t, "mirror", stdout, stderr)
	if code != 0 {
		t.Fatalf("mirror: exit %d\n%s", code, stderr)
	}
	if got := s.proxy.bytes.Load(); got != plan.Bytes {
		t.Errorf("the site received %d blob bytes, the plan said %d unique", got, plan.Bytes)
	}
	direct := s.verifyAt(t, s.site.Host, "/site")

	// Steady state: nothing missing, no blob sent.
	s.proxy.bytes.Store(0)
	s.proxy.uploads.Store(0)
	if again := s.dryRun(t, flags...); again.Missing != 0 || again.Bytes != 0 || again.Present != 7 {
		t.Errorf("second plan: %+v", again)
	}
	stdout, stderr, code = runCLI(t, s.env, append([]string{"mirror", s.dir}, flags...)...)
	noCanary(t, "second mirror", stdout, stderr)
	if code != 0 || s.proxy.bytes.Load() != 0 || s.proxy.uploads.Load() != 0 {
		t.Errorf("second run: exit %d, %d bytes and %d uploads sent, want 0 and 0:\n%s", code, s.proxy.bytes.Load(), s.proxy.uploads.Load(), stderr)
	}
	if !strings.Contains(string(stdout), "0 images copied, 7 already there") {
		t.Errorf("second run says %q", stdout)
	}

	// The bundle, twice: byte-identical.
	b1, b2 := filepath.Join(t.TempDir(), "b1"), filepath.Join(t.TempDir(), "b2")
	for _, b := range []string{b1, b2} {
		stdout, stderr, code := runCLI(t, s.env, "mirror", s.dir, "--to", "oci:"+b, "--insecure-registry", s.src.Host)
		noCanary(t, "bundle", stdout, stderr)
		if code != 0 {
			t.Fatalf("bundle: exit %d\n%s", code, stderr)
		}
	}
	f1, f2 := treeFiles(t, b1), treeFiles(t, b2)
	if len(f1) != len(f2) || len(f1) < 10 {
		t.Fatalf("bundles hold %d and %d files", len(f1), len(f2))
	}
	for p, d := range f1 {
		if !bytes.Equal(d, f2[p]) {
			t.Errorf("bundle file %s differs between two runs", p)
		}
	}
	if !bytes.Equal(f1["stowage.lock.yaml"], readFile(t, filepath.Join(s.dir, lock.FileName))) {
		t.Errorf("the bundle's lock is not the lock it was made from")
	}
	for p, d := range f1 {
		if bytes.Contains(d, []byte(canary)) {
			t.Errorf("bundle file %s holds a password", p)
		}
	}
	// From the bundle to another prefix of the site: same digests, and
	// every blob mounted or sent once.
	s.proxy.bytes.Store(0)
	stdout, stderr, code = runCLI(t, nil, "mirror", "--from", "oci:"+b1, "--to", s.proxy.Host+"/from-bundle", "--insecure-registry", s.proxy.Host)
	noCanary(t, "push bundle", stdout, stderr)
	if code != 0 {
		t.Fatalf("push bundle: exit %d\n%s", code, stderr)
	}
	viaBundle := s.verifyAt(t, s.site.Host, "/from-bundle")
	if len(viaBundle) != len(direct) {
		t.Errorf("%d images via the bundle, %d direct", len(viaBundle), len(direct))
	}
	for k, d := range direct {
		if viaBundle[k] != d {
			t.Errorf("%s: %s via the bundle, %s direct", k, viaBundle[k], d)
		}
	}

	// --have with the site's own lock: nothing left to bundle.
	empty := filepath.Join(t.TempDir(), "delta")
	stdout, stderr, code = runCLI(t, s.env, "mirror", s.dir, "--to", "oci:"+empty, "--have", filepath.Join(s.dir, lock.FileName), "--dry-run", "-o", "json")
	if code != 0 || !strings.Contains(string(stdout), `"images": []`) {
		t.Errorf("--have with the same lock: exit %d, plan %s\n%s", code, stdout, stderr)
	}
	// The same lock on standard input (--have -), the plan as YAML: the
	// same document.
	var yout, yerr bytes.Buffer
	code = run([]string{"mirror", s.dir, "--to", "oci:" + empty, "--have", "-", "--dry-run", "-o", "yaml"},
		bytes.NewReader(readFile(t, filepath.Join(s.dir, lock.FileName))), &yout, &yerr, envFrom(s.env))
	var fromJSON, fromYAML any
	if err := json.Unmarshal(stdout, &fromJSON); err != nil {
		t.Fatal(err)
	}
	err := yaml.Unmarshal(yout.Bytes(), &fromYAML)
	if err == nil { // YAML's integers as JSON's numbers
		var b []byte
		if b, err = json.Marshal(fromYAML); err == nil {
			err = json.Unmarshal(b, &fromYAML)
		}
	}
	if code != 0 || err != nil || !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("--have - -o yaml: exit %d, %v, plan\n%s\nwant the JSON's\n%s\n%s", code, err, yout.String(), stdout, yerr.String())
	}
	// A site lock that lacks app-a and pins app-b at another digest: the
	// delta bundle holds exactly those two.
	l, err := lock.Parse(readFile(t, filepath.Join(s.dir, lock.FileName)), "lock")
	if err != nil {
		t.Fatal(err)
	}
	var site lock.Lock
	for _, e := range l.Entries {
		switch {
		case strings.Contains(e.Name, "app-a"):
			continue
		case strings.Contains(e.Name, "app-b"):
			e.Digest = "sha256:" + strings.Repeat("0", 64)
		}
		site.Put(e)
	}
	siteLock := filepath.Join(t.TempDir(), "site.lock.yaml")
	if err := os.WriteFile(siteLock, site.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, s.env, "mirror", s.dir, "--to", "oci:"+empty, "--have", siteLock, "--insecure-registry", s.src.Host)
	noCanary(t, "delta bundle", stdout, stderr)
	if code != 0 {
		t.Fatalf("delta bundle: exit %d\n%s", code, stderr)
	}
	imgs, _, err := mirror.BundleImages(empty)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, im := range imgs {
		names = append(names, im.Name)
	}
	if want := []string{s.refs["app-a"], s.refs["app-b"]}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("delta bundle holds %v, want %v", names, want)
	}
}

func treeFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMirrorKilledThenResumed kills a `stowage mirror` process with
// SIGKILL in the middle of its uploads; no tag at the site points at an
// incomplete image, and a rerun completes with every digest verified.
func TestMirrorKilledThenResumed(t *testing.T) {
	t.Parallel()
	s := newMirrorSetup(t, nil)
	bin := testbin.Stowage(t)
	args := []string{"mirror", s.dir, "--to", s.proxy.Host + "/site", "--insecure-registry", s.src.Host, "--insecure-registry", s.proxy.Host, "--jobs", "2"}
	s.proxy.slow.Store(true)
	// SIGTERM first: the run stops, exit 1, saying what it leaves.
	term := exec.Command(bin, args...)
	term.Env = append(os.Environ(), "SRC_PASSWORD="+canary, "BOB_PASSWORD="+canary+"-bob", "STOWAGE_ALLOW_ENV=SRC_PASSWORD,BOB_PASSWORD")
	var termOut bytes.Buffer
	term.Stdout, term.Stderr = &termOut, &termOut
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for s.proxy.bytes.Load() < 30_000 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	term.Process.Signal(syscall.SIGTERM)
	term.Wait()
	if code := term.ProcessState.ExitCode(); code != 1 || !strings.Contains(termOut.String(), "no tag points at an incomplete image") {
		t.Errorf("SIGTERM: exit %d, want 1 saying what the run leaves:\n%s", code, termOut.String())
	}
	noCanary(t, "SIGTERM", termOut.Bytes(), "")
	s.proxy.bytes.Store(0)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SRC_PASSWORD="+canary, "BOB_PASSWORD="+canary+"-bob", "STOWAGE_ALLOW_ENV=SRC_PASSWORD,BOB_PASSWORD")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for s.proxy.bytes.Load() < 100_000 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if s.proxy.bytes.Load() < 100_000 {
		t.Fatalf("the run sent only %d bytes before the deadline:\n%s", s.proxy.bytes.Load(), out.String())
	}
	// No tag may point at an image whose blobs are not all there: the
	// registry refuses a manifest whose blobs are missing, and tags come
	// last. Every tag present is the lock's digest.
	l, err := lock.Parse(readFile(t, filepath.Join(s.dir, lock.FileName)), "lock")
	if err != nil {
		t.Fatal(err)
	}
	m := site.Mapping{Default: s.site.Host + "/site"}
	complete, tagged := 0, 0
	for _, e := range l.Entries {
		if strings.Contains(e.Name, "armonly") {
			continue
		}
		tagged++
		ref := registrytest.Ref(t, e.Reference)
		to, _ := m.Repository(ref.Context(), name.Insecure)
		d, err := remote.Head(to.Tag(ref.Identifier()))
		if err != nil {
			continue
		}
		complete++
		if d.Digest.String() != e.Digest {
			t.Errorf("%s: tag points at %s after the kill, the lock pins %s", e.Name, d.Digest, e.Digest)
		}
	}
	if complete == tagged {
		t.Fatalf("every image was complete before the kill: the test did not interrupt anything")
	}
	s.proxy.slow.Store(false)
	stdout, stderr, code := runCLI(t, s.env, args...)
	noCanary(t, "resumed mirror", stdout, stderr)
	if code != 0 {
		t.Fatalf("resumed mirror: exit %d\n%s", code, stderr)
	}
	s.verifyAt(t, s.site.Host, "/site")
}

// TestMirrorFaults: a wrong password, a 404 image, a 429 burst and a
// stalled body each fail their own image, named with the registry's
// answer; the other images are copied and verified; exit 1; no password
// in the output.
func TestMirrorFaults(t *testing.T) {
	t.Parallel()
	faults := &registrytest.Faults{}
	var srcHost string
	s := newMirrorSetup(t, func(real string) string {
		u, _ := url.Parse("http://" + real)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.ErrorLog = log.New(io.Discard, "", 0)
		faults.Next = rp
		srv := httptest.NewServer(faults)
		t.Cleanup(srv.Close)
		srcHost = strings.TrimPrefix(srv.URL, "http://")
		return srcHost
	})
	stall := func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 100))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	faults.Add(registrytest.Rule{Path: "/team/app-b/manifests/", Fault: registrytest.Status(http.StatusNotFound, nil)})
	faults.Add(registrytest.Rule{Path: "/lib/multi/", Fault: registrytest.Status(http.StatusTooManyRequests, map[string]string{"Retry-After": "0"})})
	faults.Add(registrytest.Rule{Path: "/team/app-a/blobs/", Fault: stall})
	env := map[string]string{"SRC_PASSWORD": canary, "BOB_PASSWORD": "wrong-" + canary, "STOWAGE_ALLOW_ENV": "SRC_PASSWORD,BOB_PASSWORD"}
	stdout, stderr, code := runCLI(t, env, "mirror", s.dir, "--to", s.proxy.Host+"/site", "--insecure-registry", srcHost, "--insecure-registry", s.proxy.Host,
		"--timeout", "2s", "--retries", "1")
	noCanary(t, "mirror with faults", stdout, stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	for _, want := range []string{
		"4 images failed",
		`image "` + s.refs["bobs"] + `": ` + srcHost + `: GET manifest sha256:`,
		"401 Unauthorized",
		`image "` + s.refs["app-b"] + `"`, "404 Not Found",
		`image "` + s.refs["multi"] + `"`, "429 Too Many Requests",
		`image "` + s.refs["app-a"] + `"`, "copy blob sha256:", "from " + srcHost + "/team/app-a",
		`password from env:BOB_PASSWORD`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stderr, "no answer within 2s") {
		t.Errorf("the stalled body is not named as a timeout:\n%s", stderr)
	}
	// The others: armonly (a child of the rate-limited index's content,
	// but its own repository), helper and pause.
	if !strings.Contains(string(stdout), "3 images copied") {
		t.Errorf("stdout: %s", stdout)
	}
}

// TestMirrorOpenPAIExampleDryRun plans the offline OpenPAI example against
// an empty site: every image of the lock is missing, and the plan gives
// the bytes to move per OpenPAI node role.
func TestMirrorOpenPAIExampleDryRun(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	siteReg := registrytest.Start(t, registrytest.Options{})
	dir := filepath.Join(repoRoot, "examples", "openpai-offline")
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := registrytest.SeedFor(cfg, d.Host)
	if err != nil {
		t.Fatal(err)
	}
	push := mustResolver(t, append(plan.Options(), registry.WithInsecure(d.Host))...)
	if err := registrytest.SeedStandIns(context.Background(), push, nil, plan.Refs, 4); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"mirror", dir, "--dry-run", "--to", siteReg.Host + "/mirror", "--insecure-registry", d.Host, "--insecure-registry", siteReg.Host}, plan.Flags()...)
	stdout, stderr, code := runCLI(t, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	text := string(stdout)
	l, err := lock.Parse(readFile(t, filepath.Join(dir, lock.FileName)), "lock")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d images: 0 present, %d missing", len(l.Entries), len(l.Entries))
	for _, s := range []string{want, "bytes to move per OpenPAI node role", "master", "worker",
		siteReg.Host + "/mirror/docker.io/frameworkcontroller/frameworkcontroller:"} {
		if !strings.Contains(text, s) {
			t.Errorf("the plan lacks %q:\n%s", s, text)
		}
	}
	stdout, _, code = runCLI(t, nil, append(args, "-o", "json")...)
	var rep v1alpha1.MirrorPlanReport
	if err := json.Unmarshal(stdout, &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if len(rep.Roles) != 2 || rep.Roles[0].Bytes == 0 || rep.Roles[0].Bytes > rep.Bytes {
		t.Errorf("roles %+v, plan bytes %d", rep.Roles, rep.Bytes)
	}
}

// TestMirrorToConfigSite: without --to, the images go to the site
// registry the config names (site.registry), mapped by the same rule.
func TestMirrorToConfigSite(t *testing.T) {
	t.Parallel()
	s := newMirrorSetup(t, nil)
	cfgSite := fmt.Sprintf("site:\n  registry: %q\n", s.proxy.Host+"/cfgsite")
	if err := os.WriteFile(filepath.Join(s.dir, "site.yaml"), []byte(cfgSite), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := s.dryRun(t, "--insecure-registry", s.src.Host, "--insecure-registry", s.proxy.Host)
	if plan.Destination != s.proxy.Host+"/cfgsite" || plan.Missing != 7 {
		t.Fatalf("plan to %s with %d missing, want %s and 7", plan.Destination, plan.Missing, s.proxy.Host+"/cfgsite")
	}
	for _, im := range plan.Images {
		if !strings.HasPrefix(im.Destination, s.proxy.Host+"/cfgsite/"+strings.ReplaceAll(s.src.Host, ":", "_")+"/") {
			t.Errorf("%s goes to %s", im.Name, im.Destination)
		}
	}
	// The run: the insecure hosts from $STOWAGE_INSECURE_REGISTRY, the
	// report as JSON.
	env := maps.Clone(s.env)
	if env == nil {
		env = map[string]string{}
	}
	env["STOWAGE_INSECURE_REGISTRY"] = s.src.Host + "," + s.proxy.Host
	stdout, stderr, code := runCLI(t, env, "mirror", s.dir, "-o", "json")
	noCanary(t, "mirror to the config's site", stdout, stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var rep v1alpha1.MirrorReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("mirror -o json: %v\n%s", err, stdout)
	}
	if !rep.OK || rep.Copied != 7 || rep.Verified != 7 || rep.Bytes == 0 || len(rep.Errors) != 0 || rep.Plan.Destination != s.proxy.Host+"/cfgsite" {
		t.Errorf("mirror -o json: %+v", rep)
	}
	s.verifyAt(t, s.site.Host, "/cfgsite")
}
