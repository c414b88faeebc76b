// Command bench measures `stowage lock` and a steady-state `stowage bump`
// against a sequential loop of `crane digest`, on Debian's docker-registry
// (CNCF distribution) started on 127.0.0.1 and seeded with N distinct tags
// (deterministic stand-in images; about half are multi-arch indexes).
// Every request goes through a counting reverse proxy on loopback, so the
// registry requests per reference are counted, not estimated. It is a
// measurement, not a test: it prints numbers and fails only when a command
// fails.
//
//	make bench
//	go run ./hack/bench -stowage bin/stowage -crane bin/crane -n 1000
//
// crane is built from the go-containerregistry version in go.mod
// (go build github.com/google/go-containerregistry/cmd/crane), the same
// library stowage resolves with.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/registry/registrytest"
)

func main() {
	stowage := flag.String("stowage", "bin/stowage", "the stowage binary")
	crane := flag.String("crane", "bin/crane", "the crane binary")
	n := flag.Int("n", 1000, "distinct tags to resolve")
	jobs := flag.Int("jobs", registry.DefaultJobs, "stowage --jobs")
	flag.Parse()
	if err := run(*stowage, *crane, *n, *jobs); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// counter is a reverse proxy that counts requests by kind.
type counter struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	n     map[string]int
}

// ServeHTTP counts the request by kind and proxies it.
func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := "other"
	switch {
	case r.URL.Path == "/v2/" || r.URL.Path == "/v2":
		kind = "ping"
	case strings.Contains(r.URL.Path, "/manifests/"):
		kind = r.Method + " manifest"
	case strings.Contains(r.URL.Path, "/blobs/"):
		kind = r.Method + " blob"
	}
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
	c.proxy.ServeHTTP(w, r)
}

// take returns the counts so far and starts again from zero.
func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

func total(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

func describe(m map[string]int) string {
	var parts []string
	for _, k := range []string{"ping", "HEAD manifest", "GET manifest", "HEAD blob", "GET blob", "other"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func run(stowage, crane string, n, jobs int) error {
	for _, b := range []string{stowage, crane} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s: %w (make bench builds it)", b, err)
		}
	}
	tmp, err := os.MkdirTemp("", "stowage-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	d, err := registrytest.StartDistribution(filepath.Join(tmp, "registry"), registrytest.Options{})
	if err != nil {
		return err
	}
	defer d.Stop()

	target, _ := url.Parse("http://" + d.Host)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	c := &counter{proxy: rp, n: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	host := l.Addr().String()

	refs := make([]string, n)
	for i := range refs {
		refs[i] = fmt.Sprintf("%s/bench/img:t%04d", host, i)
	}
	fmt.Printf("seeding %d distinct tags into docker-registry at %s (proxy %s) ...\n", n, d.Host, host)
	start := time.Now()
	push, err := registry.New(registry.WithInsecure(host))
	if err != nil {
		return err
	}
	if err := registrytest.SeedStandIns(context.Background(), push, nil, refs, 16); err != nil {
		return err
	}
	fmt.Printf("seeded in %v\n\n", time.Since(start).Round(time.Millisecond))
	c.take()

	dir := filepath.Join(tmp, "config")
	if err := writeConfig(dir, refs); err != nil {
		return err
	}
	stowageArgs := []string{dir, "--quiet", "--insecure-registry", host, "--jobs", fmt.Sprint(jobs)}

	lockTime, lockCPU, err := timedCPU(stowage, append([]string{"lock"}, stowageArgs...)...)
	if err != nil {
		return err
	}
	lockCounts := c.take()

	// The fixed cost: loading the config of n images and rendering it
	// with the lock, no network.
	loadTime, loadCPU, err := timedCPU(stowage, "vet", dir)
	if err != nil {
		return err
	}
	c.take()

	bumpTime, bumpCPU, err := timedCPU(stowage, append([]string{"bump", "--exit-code"}, stowageArgs...)...)
	if err != nil {
		return err
	}
	bumpCounts := c.take()

	start = time.Now()
	before := cpu
	for _, r := range refs {
		if _, err := timed(crane, "digest", "--insecure", r); err != nil {
			return err
		}
	}
	craneTime, craneCPU := time.Since(start), cpu-before
	craneCounts := c.take()

	fmt.Printf("%d distinct tags, stowage --jobs %d, go-containerregistry crane %s\n\n", n, jobs, craneVersion(crane))
	fmt.Printf("%-34s %10s %10s %10s %9s  %s\n", "run", "time", "CPU", "requests", "per ref", "requests by kind")
	row := func(name string, t, cpu time.Duration, m map[string]int) {
		fmt.Printf("%-34s %10v %10v %10d %9.3f  %s\n", name, t.Round(time.Millisecond), cpu.Round(time.Millisecond), total(m), float64(total(m))/float64(n), describe(m))
	}
	row("stowage vet (config load, offline)", loadTime, loadCPU, nil)
	row("stowage lock (empty lock)", lockTime, lockCPU, lockCounts)
	row("stowage bump (steady state)", bumpTime, bumpCPU, bumpCounts)
	row("crane digest, sequential loop", craneTime, craneCPU, craneCounts)
	fmt.Println()
	fmt.Printf("crane loop / stowage lock: %.1fx\n", float64(craneTime)/float64(lockTime))
	fmt.Printf("crane loop / stowage bump: %.1fx\n", float64(craneTime)/float64(bumpTime))
	fmt.Printf("steady-state bump: %.3f manifest requests per reference (HEAD %d, GET %d), plus %d ping(s) for the run\n",
		float64(bumpCounts["HEAD manifest"]+bumpCounts["GET manifest"])/float64(n), bumpCounts["HEAD manifest"], bumpCounts["GET manifest"], bumpCounts["ping"])
	return nil
}

// cpu is the user plus system CPU time of the commands timed so far.
var cpu time.Duration

// timed runs a command and returns its wall time; its CPU time is added to
// cpu.
func timed(bin string, args ...string) (time.Duration, error) {
	start := time.Now()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return time.Since(start), nil
}

// timedCPU is timed, also returning the command's CPU time.
func timedCPU(bin string, args ...string) (time.Duration, time.Duration, error) {
	before := cpu
	t, err := timed(bin, args...)
	return t, cpu - before, err
}

func craneVersion(crane string) string {
	out, err := exec.Command(crane, "version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// writeConfig writes a config whose one puller pulls every reference; the
// helper and pause images are two of them, so the lock has exactly
// len(refs) entries.
func writeConfig(dir string, refs []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("images:\n")
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = fmt.Sprintf("img%04d", i)
		fmt.Fprintf(&b, "  %s: {reference: %q}\n", keys[i], r)
	}
	fmt.Fprintf(&b, "profiles:\n  bench:\n    helper: {image: %q, pause: %q}\n    pullers:\n    - name: bench\n      namespace: bench\n      images: [%s]\n",
		refs[0], refs[1%len(refs)], strings.Join(keys, ", "))
	return os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(b.String()), 0o644)
}
