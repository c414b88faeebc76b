// Command bench measures `stowage lock` and a steady-state `stowage bump`
// against the tools a user would script instead — a sequential loop of
// `crane digest`, a sequential loop of `skopeo inspect` (Debian's skopeo)
// and kbld (carvel.dev/kbld, when it could be built) — on Debian's
// docker-registry (CNCF distribution) started on 127.0.0.1 and seeded with
// N distinct tags (deterministic stand-in images; about half are
// multi-arch indexes). Each tool is timed against the registry directly
// and run once more through a counting reverse proxy on loopback, so the
// registry requests per reference are counted, not estimated, and the
// proxy's own cost is in no time. It is a measurement, not a test: it prints numbers, writes
// them as a markdown section for docs/benchmarks.md (-md, included by
// hack/perf) and fails only when a command fails.
//
//	make bench
//	go run ./hack/bench -stowage bin/stowage -crane bin/crane -kbld bin/kbld -n 1000 -md bin/bench-registry.md
//
// crane is built from the go-containerregistry version in go.mod, the same
// library stowage resolves with; kbld by `make kbld` (hack/bench/kbld.sh);
// skopeo is looked up in PATH (apt-get install -y skopeo).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

func main() {
	var o options
	flag.StringVar(&o.stowage, "stowage", "bin/stowage", "the stowage binary")
	flag.StringVar(&o.crane, "crane", "bin/crane", "the crane binary")
	flag.StringVar(&o.kbld, "kbld", "bin/kbld", "the kbld binary; when missing, -kbld-log says why")
	flag.StringVar(&o.kbldLog, "kbld-log", "bin/kbld.log", "output of the kbld build, quoted when kbld is missing")
	flag.StringVar(&o.kbldVersion, "kbld-version", "", "the version kbld was built from, for the report (a build from the module proxy says \"develop\")")
	flag.StringVar(&o.skopeo, "skopeo", "skopeo", "the skopeo binary (looked up in PATH)")
	flag.IntVar(&o.n, "n", 1000, "distinct tags to resolve")
	flag.IntVar(&o.skopeoEvery, "skopeo-every", 4, "time skopeo on every k-th tag only (it is slow), scaled up to n")
	flag.IntVar(&o.jobs, "jobs", registry.DefaultJobs, "stowage --jobs")
	flag.IntVar(&o.runs, "runs", 3, "runs of stowage lock, bump and kbld; the median is reported")
	flag.StringVar(&o.md, "md", "", "write the results as a markdown section to this file")
	flag.StringVar(&o.json, "json", "", "write the headline ratios as JSON to this file (hack/perf reads it)")
	flag.StringVar(&o.ports, "ports", "", "LO-HI: listen on fixed ports of 127.0.0.1 from this range (the registry, the counting proxy) instead of free ones")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	stowage, crane, kbld, kbldLog, skopeo string
	kbldVersion                           string
	n, skopeoEvery, jobs, runs            int
	md, json                              string
	ports                                 string
}

// Summary is what -json writes: the headline numbers hack/perf puts in the
// goals table of docs/benchmarks.md.
type Summary struct {
	N                int     `json:"n"`
	LockSeconds      float64 `json:"lockSeconds"`
	LockPerRef       float64 `json:"lockRequestsPerRef"`
	CraneRatio       float64 `json:"craneOverLock"`
	KbldRatio        float64 `json:"kbldOverLock,omitempty"`
	KbldPerRef       float64 `json:"kbldRequestsPerRef,omitempty"`
	KbldNote         string  `json:"kbldNote,omitempty"`
	SkopeoRatio      float64 `json:"skopeoOverLock,omitempty"`
	BumpManifestsRef float64 `json:"bumpManifestRequestsPerRef"`
	BumpPings        int     `json:"bumpPings"`
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
	case strings.HasSuffix(r.URL.Path, "/tags/list"):
		kind = "tags list"
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
	for _, k := range []string{"ping", "HEAD manifest", "GET manifest", "HEAD blob", "GET blob", "tags list", "other"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// result is one tool's measurement over refs references.
type result struct {
	name, command string
	wall, cpu     time.Duration // for all n references (scaled when sampled)
	refs          int           // references actually resolved per run
	counts        map[string]int
	note          string
}

// cpuRatio is a's CPU time over b's.
func cpuRatio(a, b result) float64 { return a.cpu.Seconds() / b.cpu.Seconds() }

func (r result) perRef() float64 { return float64(total(r.counts)) / float64(r.refs) }

func run(o options) error {
	for _, b := range []string{o.stowage, o.crane} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s: %w (make bench builds it)", b, err)
		}
	}
	tmp, err := os.MkdirTemp("", "stowage-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var regPort, proxyPort int
	if o.ports != "" {
		var lo, hi int
		if _, err := fmt.Sscanf(o.ports, "%d-%d", &lo, &hi); err != nil || lo < 1 || hi > 65535 || hi-lo < 1 {
			return fmt.Errorf("-ports %q: want LO-HI with at least 2 ports, e.g. 5310-5319", o.ports)
		}
		regPort, proxyPort = lo, lo+1
	}
	d, err := registrytest.StartDistribution(filepath.Join(tmp, "registry"), registrytest.Options{Port: regPort})
	if err != nil {
		return err
	}
	defer d.Stop()

	target, _ := url.Parse("http://" + d.Host)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	c := &counter{proxy: rp, n: map[string]int{}}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", proxyPort))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	host := l.Addr().String()

	// Every tool is timed against the registry directly and counted in a
	// separate run through the proxy, so that the proxy's own cost (it
	// parses and forwards every request on the same two cores) is in no
	// time; the requests per reference are the same either way.
	direct, counted := newSite(tmp, "direct", d.Host, o), newSite(tmp, "counted", host, o)
	for _, st := range []site{direct, counted} {
		if err := writeConfig(st.dir, st.refs); err != nil {
			return err
		}
		if err := writePod(st.pod, st.refs); err != nil {
			return err
		}
	}
	fmt.Printf("seeding %d distinct tags into docker-registry at %s (proxy %s) ...\n", o.n, d.Host, host)
	start := time.Now()
	push, err := registry.New(registry.WithInsecure(d.Host))
	if err != nil {
		return err
	}
	if err := registrytest.SeedStandIns(context.Background(), push, nil, direct.refs, 16); err != nil {
		return err
	}
	fmt.Printf("seeded in %v\n\n", time.Since(start).Round(time.Millisecond))
	c.take()
	// A loop is counted on a sample of about 50 references.
	countEvery := max(1, o.n/50)

	ms, err := measure(o, c, direct, counted, countEvery)
	if err != nil {
		return err
	}
	ms.print(o)
	if o.json != "" {
		if err := ms.writeSummary(o); err != nil {
			return err
		}
	}
	if o.md == "" {
		return nil
	}
	return ms.writeMarkdown(o)
}

// measured are the runs of one benchmark: stowage lock, vet and bump,
// and kbld, the crane loop and the skopeo loop beside them (kbld and
// skopeo nil, with a note, when they are not here).
type measured struct {
	results                            []result
	lockRes, vetRes, bumpRes, craneRes result
	kbldRes, skopeoRes                 *result
	kbldNote, skopeoNote               string
	countEvery                         int
}

// ratio is r's wall time over base's.
func ratio(r result, base result) float64 { return float64(r.wall) / float64(base.wall) }

// measure times and counts every tool on the direct and counted sites;
// the loops are counted on every countEvery-th reference.
func measure(o options, c *counter, direct, counted site, countEvery int) (*measured, error) {
	ms := &measured{countEvery: countEvery}

	// stowage lock from an empty lock, runs times.
	var err error
	lock := func(st site) (time.Duration, time.Duration, error) {
		if err := os.Remove(st.lockFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, 0, err
		}
		return timed(o.stowage, append([]string{"lock", st.dir}, st.flags...)...)
	}
	ms.lockRes, err = repeat(o.runs, c, direct, counted, lock)
	if err != nil {
		return nil, err
	}
	ms.lockRes.name, ms.lockRes.command = "stowage lock (empty lock)", "stowage lock DIR --insecure-registry HOST --quiet"
	ms.results = append(ms.results, ms.lockRes)

	// The fixed cost: loading the config of n images and rendering it
	// with the lock, no network.
	ms.vetRes, err = repeat(o.runs, c, direct, counted, func(st site) (time.Duration, time.Duration, error) { return timed(o.stowage, "vet", st.dir) })
	if err != nil {
		return nil, err
	}
	ms.vetRes.name, ms.vetRes.command, ms.vetRes.note = "stowage vet (config load, offline)", "stowage vet DIR", "no registry: the fixed cost of loading the config"

	ms.bumpRes, err = repeat(o.runs, c, direct, counted, func(st site) (time.Duration, time.Duration, error) {
		return timed(o.stowage, append([]string{"bump", st.dir, "--exit-code"}, st.flags...)...)
	})
	if err != nil {
		return nil, err
	}
	ms.bumpRes.name, ms.bumpRes.command = "stowage bump (steady state)", "stowage bump DIR --exit-code --insecure-registry HOST --quiet"
	ms.results = append(ms.results, ms.bumpRes)

	// kbld, when it could be built.
	if _, err := os.Stat(o.kbld); err != nil {
		ms.kbldNote = "kbld could not be built here"
		if log, err := os.ReadFile(o.kbldLog); err == nil {
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			ms.kbldNote += ": " + strings.Join(lines[max(0, len(lines)-3):], " / ")
		}
	} else {
		r, err := repeat(o.runs, c, direct, counted, func(st site) (time.Duration, time.Duration, error) {
			return timed(o.kbld, "-f", st.pod, "--registry-insecure")
		})
		if err != nil {
			return nil, err
		}
		v := o.kbldVersion
		if b, err := os.ReadFile(o.kbld + ".version"); v == "" && err == nil {
			v = strings.TrimSpace(string(b)) // written by hack/bench/kbld.sh
		}
		if v == "" {
			v = toolVersion(o.kbld, "version")
		}
		r.name, r.command = "kbld "+v, "kbld -f POD.yaml --registry-insecure (one Pod, n containers)"
		ms.kbldRes = &r
		ms.results = append(ms.results, r)
	}

	// crane digest, one process per reference.
	ms.craneRes, err = loop(c, direct.refs, 1, counted.refs, countEvery, func(ref string) (time.Duration, time.Duration, error) {
		return timed(o.crane, "digest", "--insecure", ref)
	})
	if err != nil {
		return nil, err
	}
	ms.craneRes.name, ms.craneRes.command = "crane digest, sequential loop", "for ref in …; do crane digest --insecure $ref; done"
	ms.results = append(ms.results, ms.craneRes)

	// skopeo inspect, one process per reference, on a sample.
	if p, err := exec.LookPath(o.skopeo); err != nil {
		ms.skopeoNote = "skopeo is not installed (apt-get install -y skopeo)"
	} else {
		r, err := loop(c, direct.refs, o.skopeoEvery, counted.refs, countEvery, func(ref string) (time.Duration, time.Duration, error) {
			return timed(p, "inspect", "--tls-verify=false", "--no-tags", "--format", "{{.Digest}}", "docker://"+ref)
		})
		if err != nil {
			return nil, err
		}
		r.name = "skopeo inspect, sequential loop (" + toolVersion(p, "--version") + ")"
		r.command = "for ref in …; do skopeo inspect --tls-verify=false --no-tags --format '{{.Digest}}' docker://$ref; done"
		if o.skopeoEvery > 1 {
			r.note = fmt.Sprintf("timed on every %d%s tag (%d of %d), scaled to %d", o.skopeoEvery, ordinal(o.skopeoEvery), o.n/o.skopeoEvery, o.n, o.n)
		}
		ms.skopeoRes = &r
		ms.results = append(ms.results, r)
	}

	return ms, nil
}

// print writes the table of runs and the ratios on stdout.
func (ms *measured) print(o options) {
	fmt.Printf("%d distinct tags, stowage --jobs %d, crane %s\n\n", o.n, o.jobs, toolVersion(o.crane, "version"))
	fmt.Printf("%-52s %10s %10s %10s %9s  %s\n", "run", "time", "CPU", "requests", "per ref", "requests by kind")
	for _, r := range append([]result{ms.vetRes}, ms.results...) {
		fmt.Printf("%-52s %10v %10v %10d %9.3f  %s\n", r.name, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), total(r.counts), r.perRef(), describe(r.counts))
	}
	fmt.Println()
	fmt.Printf("crane loop / stowage lock: %.1fx\n", ratio(ms.craneRes, ms.lockRes))
	fmt.Printf("crane loop / stowage bump: %.1fx\n", ratio(ms.craneRes, ms.bumpRes))
	if ms.skopeoRes != nil {
		fmt.Printf("skopeo loop / stowage lock: %.1fx\n", ratio(*ms.skopeoRes, ms.lockRes))
	}
	if ms.kbldRes != nil {
		fmt.Printf("kbld / stowage lock: %.1fx\n", ratio(*ms.kbldRes, ms.lockRes))
	} else {
		fmt.Println(ms.kbldNote)
	}
	bumpManifests := ms.bumpManifests()
	fmt.Printf("steady-state bump: %.3f manifest requests per reference (HEAD %d, GET %d), plus %d ping(s) for the run\n",
		float64(bumpManifests)/float64(o.n), ms.bumpRes.counts["HEAD manifest"], ms.bumpRes.counts["GET manifest"], ms.bumpRes.counts["ping"])
}

// bumpManifests are the manifest requests of the steady-state bump.
func (ms *measured) bumpManifests() int {
	return ms.bumpRes.counts["HEAD manifest"] + ms.bumpRes.counts["GET manifest"]
}

// writeSummary writes the figures hack/perf reads to o.json.
func (ms *measured) writeSummary(o options) error {
	sum := Summary{N: o.n, LockSeconds: ms.lockRes.wall.Seconds(), LockPerRef: ms.lockRes.perRef(), CraneRatio: ratio(ms.craneRes, ms.lockRes),
		KbldNote: ms.kbldNote, BumpManifestsRef: float64(ms.bumpManifests()) / float64(o.n), BumpPings: ms.bumpRes.counts["ping"]}
	if ms.kbldRes != nil {
		sum.KbldRatio, sum.KbldPerRef = ratio(*ms.kbldRes, ms.lockRes), ms.kbldRes.perRef()
	}
	if ms.skopeoRes != nil {
		sum.SkopeoRatio = ratio(*ms.skopeoRes, ms.lockRes)
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.json, append(b, '\n'), 0o644)
}

// writeMarkdown writes the report section to o.md: the table, the
// commands, the per-reference costs and the goals.
func (ms *measured) writeMarkdown(o options) error {
	bumpManifests := ms.bumpManifests()
	var b strings.Builder
	b.WriteString("## Registry: `lock` and `bump` against crane, skopeo and kbld\n\n")
	fmt.Fprintf(&b, "%d distinct tags (`HOST/bench/img:t0000` …, deterministic stand-in images, about half of them multi-arch\n"+
		"indexes) on Debian's docker-registry on 127.0.0.1. Every tool is timed against the registry directly, and its requests\n"+
		"are counted in a separate run through a counting reverse proxy on loopback (the loops: on every %d%s reference),\n"+
		"so the proxy's own cost is in no time. stowage runs with `--jobs %d` (the default); crane and skopeo are run once\n"+
		"per reference, one after another, as a script would; kbld resolves one Pod listing every reference. stowage and\n"+
		"kbld: median of %d runs; the loops: one run. CPU is user plus system time of the tool's processes (the registry's\n"+
		"is not counted).\n\n", o.n, ms.countEvery, ordinal(ms.countEvery), o.jobs, o.runs)
	b.WriteString("| tool | time | CPU | requests | per reference | requests by kind | stowage lock is faster by |\n|---|---:|---:|---:|---:|---|---:|\n")
	for _, r := range append(ms.results, ms.vetRes) {
		faster := fmt.Sprintf("%.1f×", ratio(r, ms.lockRes))
		if r.name == ms.lockRes.name || r.name == ms.vetRes.name || r.name == ms.bumpRes.name {
			faster = ""
		}
		name := r.name
		if r.note != "" {
			name += " — " + r.note
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %.3f | %s | %s |\n", name, secs(r.wall), secs(r.cpu), total(r.counts), r.perRef(), describe(r.counts), faster)
	}
	if ms.kbldRes == nil {
		fmt.Fprintf(&b, "| kbld — %s | | | | | | |\n", ms.kbldNote)
	}
	if ms.skopeoRes == nil {
		fmt.Fprintf(&b, "| skopeo — %s | | | | | | |\n", ms.skopeoNote)
	}
	b.WriteString("\nCommands (HOST is the registry for the timed runs and the proxy for the counted ones):\n\n")
	for _, r := range append(ms.results, ms.vetRes) {
		fmt.Fprintf(&b, "- %s: `%s`\n", r.name, r.command)
	}
	// The crane loop's wall is a process start per reference: under
	// load each waits for a CPU, so its wall ratio says more about the
	// load than about the work; its CPU per reference does not.
	perRef := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(o.n) }
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "\nMeasured on %s, load average %s at the end. One `crane digest` costs %.1f ms of wall and %.1f ms of CPU here (a process: start-up, a ping, a\n"+
		"HEAD); `stowage lock` %.2f ms of wall and %.2f ms of CPU per reference. By CPU the loop costs %.1f× the lock; by wall %.1f×, the\n"+
		"difference being the time each crane process waits for a CPU and for its own ping and connection, which a loop pays once per\n"+
		"reference and the lock once per run.\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.Join(strings.Fields(string(load))[:3], " "),
		perRef(ms.craneRes.wall), perRef(ms.craneRes.cpu), perRef(ms.lockRes.wall), perRef(ms.lockRes.cpu), cpuRatio(ms.craneRes, ms.lockRes), ratio(ms.craneRes, ms.lockRes))
	b.WriteString("\n| goal | measured | verdict |\n|---|---:|---|\n")
	fmt.Fprintf(&b, "| lock ≥ 20× faster than the crane digest loop (wall) | %.1f× | %s |\n", ratio(ms.craneRes, ms.lockRes), verdict(ratio(ms.craneRes, ms.lockRes) >= 20))
	fmt.Fprintf(&b, "| (no goal) crane digest loop against lock, by CPU | %.1f× (%.1f against %.2f ms per reference) | |\n", cpuRatio(ms.craneRes, ms.lockRes), perRef(ms.craneRes.cpu), perRef(ms.lockRes.cpu))
	if ms.kbldRes != nil {
		fmt.Fprintf(&b, "| lock ≥ 2× faster than kbld | %.1f× | %s |\n", ratio(*ms.kbldRes, ms.lockRes), verdict(ratio(*ms.kbldRes, ms.lockRes) >= 2))
	} else {
		fmt.Fprintf(&b, "| lock ≥ 2× faster than kbld | not measured: %s | — |\n", ms.kbldNote)
	}
	if ms.kbldRes != nil {
		fmt.Fprintf(&b, "| (no goal) steady-state bump against kbld, both HEADs only | %.1f× | |\n", ratio(*ms.kbldRes, ms.bumpRes))
	}
	if ms.skopeoRes != nil {
		fmt.Fprintf(&b, "| (no goal) lock against the skopeo inspect loop | %.1f× | |\n", ratio(*ms.skopeoRes, ms.lockRes))
	}
	fmt.Fprintf(&b, "| steady-state bump: exactly 1 request per unique reference | %.3f manifest requests per reference (HEAD %d, GET %d) plus %d ping for the run | %s |\n\n",
		float64(bumpManifests)/float64(o.n), ms.bumpRes.counts["HEAD manifest"], ms.bumpRes.counts["GET manifest"], ms.bumpRes.counts["ping"],
		verdict(bumpManifests == o.n))
	return os.WriteFile(o.md, []byte(b.String()), 0o644)
}

// repeat runs f on the direct site runs times and returns the median wall
// and CPU time, then once on the counted site (through the proxy) for the
// requests.
func repeat(runs int, c *counter, direct, counted site, f func(site) (time.Duration, time.Duration, error)) (result, error) {
	var walls, cpus []time.Duration
	for range max(runs, 1) {
		w, u, err := f(direct)
		if err != nil {
			return result{}, err
		}
		walls, cpus = append(walls, w), append(cpus, u)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	c.take()
	if _, _, err := f(counted); err != nil {
		return result{}, err
	}
	return result{wall: walls[len(walls)/2], cpu: cpus[len(cpus)/2], refs: len(counted.refs), counts: c.take()}, nil
}

// loop runs f on every every-th reference of refs, one after another, and
// scales the times to all of refs; then on every countEvery-th of counted
// (through the proxy) for the requests.
func loop(c *counter, refs []string, every int, counted []string, countEvery int, f func(string) (time.Duration, time.Duration, error)) (result, error) {
	every = max(every, 1)
	var wall, cpu time.Duration
	n := 0
	for i := 0; i < len(refs); i += every {
		w, u, err := f(refs[i])
		if err != nil {
			return result{}, err
		}
		wall, cpu, n = wall+w, cpu+u, n+1
	}
	scale := func(d time.Duration) time.Duration { return d * time.Duration(len(refs)) / time.Duration(n) }
	c.take()
	m := 0
	for i := 0; i < len(counted); i += countEvery {
		if _, _, err := f(counted[i]); err != nil {
			return result{}, err
		}
		m++
	}
	return result{wall: scale(wall), cpu: scale(cpu), refs: m, counts: c.take()}, nil
}

// site is the registry as the tools see it: directly (timed) or through
// the counting proxy (counted), with the references, the stowage config,
// the kbld Pod and the flags for that host.
type site struct {
	refs               []string
	dir, lockFile, pod string
	flags              []string
}

func newSite(tmp, name, host string, o options) site {
	st := site{
		dir:   filepath.Join(tmp, name, "config"),
		pod:   filepath.Join(tmp, name, "kbld-pod.yaml"),
		flags: []string{"--quiet", "--insecure-registry", host, "--jobs", fmt.Sprint(o.jobs)},
	}
	st.lockFile = filepath.Join(st.dir, "stowage.lock.yaml")
	for i := range o.n {
		st.refs = append(st.refs, fmt.Sprintf("%s/bench/img:t%04d", host, i))
	}
	return st
}

// timed runs a command and returns its wall time and its CPU time (user
// plus system).
func timed(bin string, args ...string) (time.Duration, time.Duration, error) {
	start := time.Now()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

func toolVersion(bin string, arg string) string {
	out, err := exec.Command(bin, arg).Output()
	if err != nil {
		return "?"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func ordinal(n int) string {
	if n%100 >= 11 && n%100 <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
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

// writePod writes the kbld input: one Pod whose containers use every
// reference (kbld resolves every "image" field it finds).
func writePod(path string, refs []string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bench\nspec:\n  containers:\n")
	for i, r := range refs {
		fmt.Fprintf(&b, "  - name: c%04d\n    image: %s\n", i, r)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
