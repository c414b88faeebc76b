// Command mirrorbench measures `stowage mirror` against a sequential
// `crane copy` loop and `skopeo sync`, between two Debian docker-registry
// instances on 127.0.0.1, and writes the markdown section of
// docs/benchmarks.md (make bench; make bench-mirror runs it alone and puts
// the section into docs/benchmarks.md in place).
//
// The synthetic set: -n images (default 200), each one manifest with a
// config, one of -bases shared base layers (default 10 of 25 MB) and a
// layer of its own (default 4 MB), plus a helper and a pause image; every
// byte from a ChaCha8 stream seeded by the layer's name, so the same flags
// give the same digests. Separately, one image with a 1 GB layer measures
// stowage's peak resident memory while that layer streams. Layers are
// generated as they are pushed (never held in memory) and everything is
// written under one temporary directory that is removed at the end.
//
// Each tool copies the set once through a counting reverse proxy in front of
// the site registry (the same proxy for every tool), which counts the blob
// bytes uploaded; skopeo gets an empty HOME, so its blob cache starts
// empty.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/registry/registrytest"
)

type options struct {
	stowage, crane, skopeo string
	n, bases               int
	baseMB, ownMB, bigMB   int
	md, splice             string
	jobs                   int
	onlyStowage            bool
}

func main() {
	var o options
	flag.StringVar(&o.stowage, "stowage", "bin/stowage", "the stowage binary")
	flag.StringVar(&o.crane, "crane", "bin/crane", "the crane binary (make crane)")
	flag.StringVar(&o.skopeo, "skopeo", "skopeo", "the skopeo binary (apt-get install skopeo)")
	flag.IntVar(&o.n, "n", 200, "images in the set")
	flag.IntVar(&o.bases, "bases", 10, "shared base layers")
	flag.IntVar(&o.baseMB, "base-mb", 25, "size of a base layer, MB (10^6 bytes)")
	flag.IntVar(&o.ownMB, "own-mb", 4, "size of each image's own layer, MB")
	flag.IntVar(&o.bigMB, "big-mb", 1000, "size of the layer streamed for the memory measurement, MB")
	flag.IntVar(&o.jobs, "jobs", 8, "stowage mirror --jobs")
	flag.BoolVar(&o.onlyStowage, "only-stowage", false, "time stowage mirror alone (no crane, skopeo or large layer): for trying changes")
	flag.StringVar(&o.md, "md", "", "write the markdown section here")
	flag.StringVar(&o.splice, "splice", "", "replace the mirror section of this markdown file (docs/benchmarks.md) with the new one")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

// genLayer is a layer whose bytes come from a ChaCha8 stream seeded by its
// name: nothing is held in memory. Its media type is an uncompressed OCI
// layer, so its diff ID is its digest.
type genLayer struct {
	seed   string
	size   int64
	digest v1.Hash
}

func newGenLayer(seed string, size int64) (*genLayer, error) {
	l := &genLayer{seed: seed, size: size}
	h := sha256.New()
	rc, _ := l.Compressed()
	if _, err := io.Copy(h, rc); err != nil {
		return nil, err
	}
	l.digest = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
	return l, nil
}

type genReader struct {
	r    *rand.ChaCha8
	left int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, _ := g.r.Read(p)
	g.left -= int64(n)
	return n, nil
}

func (l *genLayer) Digest() (v1.Hash, error) { return l.digest, nil }
func (l *genLayer) DiffID() (v1.Hash, error) { return l.digest, nil }
func (l *genLayer) Compressed() (io.ReadCloser, error) {
	var seed [32]byte
	s := sha256.Sum256([]byte(l.seed))
	copy(seed[:], s[:])
	return io.NopCloser(&genReader{r: rand.NewChaCha8(seed), left: l.size}), nil
}
func (l *genLayer) Uncompressed() (io.ReadCloser, error) { return l.Compressed() }
func (l *genLayer) Size() (int64, error)                 { return l.size, nil }
func (l *genLayer) MediaType() (types.MediaType, error)  { return types.OCIUncompressedLayer, nil }

func image(layers ...v1.Layer) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	return mutate.AppendLayers(img, layers...)
}

// counter is a reverse proxy counting the blob bytes uploaded through it.
type counter struct {
	host     string
	bytes    atomic.Int64
	posts    atomic.Int64
	mounts   atomic.Int64
	requests atomic.Int64
}

func startCounter(target string) (*counter, func(), error) {
	u, err := url.Parse("http://" + target)
	if err != nil {
		return nil, nil, err
	}
	c := &counter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if strings.Contains(r.URL.Path, "/blobs/uploads") {
			if r.Method == http.MethodPost {
				c.posts.Add(1)
				if r.URL.Query().Get("mount") != "" {
					c.mounts.Add(1)
				}
			}
			if r.Body != nil {
				r.Body = &countBody{ReadCloser: r.Body, n: &c.bytes}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	c.host = strings.TrimPrefix(srv.URL, "http://")
	return c, srv.Close, nil
}

type countBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (c *counter) reset() { c.bytes.Store(0); c.posts.Store(0); c.mounts.Store(0); c.requests.Store(0) }

// result is one tool's run.
type result struct {
	tool, command           string
	wall, cpu               time.Duration
	maxRSS                  int64 // bytes
	bytes                   int64
	posts, mounts, requests int64
	err                     error
}

// timed runs a command, returning wall time, CPU (user+system of it and its
// children) and its peak resident set: the VmHWM of /proc/PID/status, read
// every 10 ms while it runs (the high-water mark of the exec'd program
// itself; wait4's ru_maxrss would count this process's memory too, since
// the child starts sharing it before exec).
func timed(env []string, name string, args ...string) (time.Duration, time.Duration, int64, []byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, nil, err
	}
	done := make(chan struct{})
	var hwm atomic.Int64
	go func() {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v := vmHWM(status); v > hwm.Load() {
				hwm.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	wall := time.Since(start)
	var cpu time.Duration
	if st := cmd.ProcessState; st != nil {
		cpu = st.UserTime() + st.SystemTime()
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return wall, cpu, hwm.Load(), out.Bytes(), err
}

// vmHWM reads the VmHWM line of a /proc/PID/status file, in bytes; 0 when
// the process is gone or has not exec'd yet.
func vmHWM(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

type img struct {
	repo  string // path under the registry, e.g. bench/img-000
	tag   string
	image v1.Image
}

func run(o options) error {
	for _, b := range []string{o.stowage, o.crane} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s: %w (make build crane)", b, err)
		}
	}
	skopeo, skopeoErr := exec.LookPath(o.skopeo)
	work, err := os.MkdirTemp("", "stowage-mirrorbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	src, err := registrytest.StartDistribution(filepath.Join(work, "src"), registrytest.Options{})
	if err != nil {
		return err
	}
	defer src.Stop()
	dst, err := registrytest.StartDistribution(filepath.Join(work, "site"), registrytest.Options{})
	if err != nil {
		return err
	}
	defer dst.Stop()
	proxy, stopProxy, err := startCounter(dst.Host)
	if err != nil {
		return err
	}
	defer stopProxy()

	// The set.
	log.Printf("generating and pushing %d images (%d shared base layers of %d MB, own layers of %d MB)", o.n, o.bases, o.baseMB, o.ownMB)
	var bases []v1.Layer
	for i := range o.bases {
		l, err := newGenLayer(fmt.Sprintf("base-%d", i), int64(o.baseMB)*1e6)
		if err != nil {
			return err
		}
		bases = append(bases, l)
	}
	var set []img
	for i := range o.n {
		own, err := newGenLayer(fmt.Sprintf("own-%d", i), int64(o.ownMB)*1e6)
		if err != nil {
			return err
		}
		im, err := image(bases[i%o.bases], own)
		if err != nil {
			return err
		}
		set = append(set, img{repo: fmt.Sprintf("bench/img-%03d", i), tag: "v1", image: im})
	}
	for _, s := range []string{"helper", "pause"} {
		l, err := newGenLayer(s, 1000)
		if err != nil {
			return err
		}
		im, err := image(l)
		if err != nil {
			return err
		}
		set = append(set, img{repo: "bench/" + s, tag: "v1", image: im})
	}
	if err := push(src.Host, set); err != nil {
		return err
	}
	unique, err := uniqueBytes(set)
	if err != nil {
		return err
	}
	dir := filepath.Join(work, "config")
	if err := writeConfig(dir, src.Host, set); err != nil {
		return err
	}
	if _, _, _, out, err := timed(nil, o.stowage, "lock", dir, "--insecure-registry", src.Host, "--quiet"); err != nil {
		return fmt.Errorf("%v %s", err, out)
	}

	var results []result
	ins := []string{"--insecure-registry", src.Host, "--insecure-registry", proxy.host}
	// stowage: plan, copy, steady-state rerun.
	proxy.reset()
	planWall, _, _, planOut, err := timed(nil, o.stowage, append([]string{"mirror", dir, "--to", proxy.host + "/stowage", "--dry-run", "-o", "json", "--jobs", fmt.Sprint(o.jobs)}, ins...)...)
	planRequests := proxy.requests.Load()
	if err != nil {
		return err
	}
	var plan struct{ Bytes int64 }
	if err := json.Unmarshal(planOut, &plan); err != nil {
		return err
	}
	// Three copies into empty prefixes of the site (a registry checks
	// blobs per repository, so each copy sends every byte again): the
	// median is reported, with the range, since one run on a shared
	// machine is noisy. Then a rerun of the last one: the steady state.
	var runs []result
	for i := 1; i <= 3; i++ {
		proxy.reset()
		log.Printf("stowage mirror, run %d", i)
		args := append([]string{"mirror", dir, "--to", fmt.Sprintf("%s/stowage-%d", proxy.host, i), "--quiet", "--jobs", fmt.Sprint(o.jobs)}, ins...)
		wall, cpu, rss, _, err := timed(nil, o.stowage, args...)
		runs = append(runs, result{wall: wall, cpu: cpu, maxRSS: rss, bytes: proxy.bytes.Load(), posts: proxy.posts.Load(), mounts: proxy.mounts.Load(), requests: proxy.requests.Load(), err: err})
	}
	sorted := append([]result(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].wall < sorted[j].wall })
	med := sorted[1]
	med.tool = fmt.Sprintf("stowage mirror (empty site; median of 3, %s to %s)", sec(sorted[0].wall), sec(sorted[2].wall))
	med.command = fmt.Sprintf("stowage mirror DIR --to SITE/stowage-N --insecure-registry … --quiet --jobs %d", o.jobs)
	for _, r := range runs {
		if r.err != nil && med.err == nil {
			med.err = r.err
		}
	}
	results = append(results, med)
	proxy.reset()
	log.Printf("stowage mirror, rerun")
	wall, cpu, rss, _, err := timed(nil, o.stowage, append([]string{"mirror", dir, "--to", proxy.host + "/stowage-3", "--quiet", "--jobs", fmt.Sprint(o.jobs)}, ins...)...)
	results = append(results, result{tool: "stowage mirror (rerun, steady state)", command: "the same, again into SITE/stowage-3",
		wall: wall, cpu: cpu, maxRSS: rss, bytes: proxy.bytes.Load(), posts: proxy.posts.Load(), mounts: proxy.mounts.Load(), requests: proxy.requests.Load(), err: err})
	if o.onlyStowage {
		for _, r := range results {
			fmt.Printf("%s: %s, %s CPU, %d requests, %s sent, err %v\n", r.tool, sec(r.wall), sec(r.cpu), r.requests, mb(r.bytes), r.err)
		}
		return nil
	}
	// crane copy, one image after another.
	proxy.reset()
	log.Printf("crane copy loop")
	var cr result
	cr.tool, cr.command = "crane copy, sequential loop", "for each image: crane copy --insecure SRC/REPO:TAG SITE/crane/REPO:TAG"
	for _, s := range set {
		w, c, rss, _, err := timed(nil, o.crane, "copy", "--insecure", src.Host+"/"+s.repo+":"+s.tag, proxy.host+"/crane/"+s.repo+":"+s.tag)
		cr.wall += w
		cr.cpu += c
		cr.maxRSS = max(cr.maxRSS, rss)
		if err != nil && cr.err == nil {
			cr.err = err
		}
	}
	cr.bytes, cr.posts, cr.mounts, cr.requests = proxy.bytes.Load(), proxy.posts.Load(), proxy.mounts.Load(), proxy.requests.Load()
	results = append(results, cr)
	// skopeo sync from a YAML list, with an empty blob cache.
	if skopeoErr == nil {
		proxy.reset()
		log.Printf("skopeo sync")
		var y strings.Builder
		fmt.Fprintf(&y, "%s:\n  tls-verify: false\n  images:\n", src.Host)
		for _, s := range set {
			fmt.Fprintf(&y, "    %s: [%q]\n", s.repo, s.tag)
		}
		yml := filepath.Join(work, "sync.yaml")
		if err := os.WriteFile(yml, []byte(y.String()), 0o644); err != nil {
			return err
		}
		home := filepath.Join(work, "skopeo-home")
		os.MkdirAll(home, 0o755)
		wall, cpu, rss, _, err := timed([]string{"HOME=" + home}, skopeo, "sync", "--src", "yaml", "--dest", "docker", "--dest-tls-verify=false", yml, proxy.host+"/skopeo")
		results = append(results, result{tool: "skopeo sync (" + skopeoVersion(skopeo) + ")", command: "skopeo sync --src yaml --dest docker --dest-tls-verify=false sync.yaml SITE/skopeo",
			wall: wall, cpu: cpu, maxRSS: rss, bytes: proxy.bytes.Load(), posts: proxy.posts.Load(), mounts: proxy.mounts.Load(), requests: proxy.requests.Load(), err: err})
	}
	// Memory while a large layer streams.
	log.Printf("memory: one image with a %d MB layer", o.bigMB)
	bigLayer, err := newGenLayer("big", int64(o.bigMB)*1e6)
	if err != nil {
		return err
	}
	bigImg, err := image(bigLayer)
	if err != nil {
		return err
	}
	big := []img{{repo: "big/one", tag: "v1", image: bigImg}, set[len(set)-2], set[len(set)-1]}
	if err := push(src.Host, big[:1]); err != nil {
		return err
	}
	bigDir := filepath.Join(work, "big")
	if err := writeConfig(bigDir, src.Host, big); err != nil {
		return err
	}
	if _, _, _, out, err := timed(nil, o.stowage, "lock", bigDir, "--insecure-registry", src.Host, "--quiet"); err != nil {
		return fmt.Errorf("%v %s", err, out)
	}
	proxy.reset()
	wall, cpu, rss, _, err = timed(nil, o.stowage, append([]string{"mirror", bigDir, "--to", proxy.host + "/big", "--quiet"}, ins...)...)
	bigRes := result{tool: fmt.Sprintf("stowage mirror, one %d MB layer", o.bigMB), wall: wall, cpu: cpu, maxRSS: rss, bytes: proxy.bytes.Load(), err: err}

	md := report(o, unique, plan.Bytes, planWall, planRequests, results, bigRes, skopeoErr)
	if o.md != "" {
		if err := os.WriteFile(o.md, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if o.splice != "" {
		if err := splice(o.splice, md); err != nil {
			return err
		}
	}
	fmt.Print(md)
	return nil
}

func skopeoVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "version unknown"
	}
	return strings.TrimSpace(string(out))
}

// push writes the images to host on 4 goroutines.
func push(host string, set []img) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan img)
	)
	for range 4 {
		wg.Go(func() {
			for s := range next {
				ref, err := name.NewTag(host+"/"+s.repo+":"+s.tag, name.Insecure)
				if err == nil {
					err = remote.Write(ref, s.image)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, s := range set {
		next <- s
	}
	close(next)
	wg.Wait()
	return first
}

// uniqueBytes is the sum of the sizes of the distinct blobs of the set.
func uniqueBytes(set []img) (int64, error) {
	seen := map[v1.Hash]int64{}
	for _, s := range set {
		m, err := s.image.Manifest()
		if err != nil {
			return 0, err
		}
		seen[m.Config.Digest] = m.Config.Size
		for _, l := range m.Layers {
			seen[l.Digest] = l.Size
		}
	}
	var n int64
	for _, s := range seen {
		n += s
	}
	return n, nil
}

// writeConfig writes a config directory with one profile pulling every
// image but the last two, which are the helper and pause.
func writeConfig(dir, host string, set []img) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("images:\n")
	var keys []string
	for i, s := range set[:len(set)-2] {
		k := fmt.Sprintf("img-%03d", i)
		keys = append(keys, k)
		fmt.Fprintf(&b, "  %s: {reference: %q}\n", k, host+"/"+s.repo+":"+s.tag)
	}
	h, p := set[len(set)-2], set[len(set)-1]
	fmt.Fprintf(&b, "profiles:\n  bench:\n    helper: {image: %q, pause: %q}\n    pullers:\n    - name: all\n      namespace: bench\n      images: [%s]\n",
		host+"/"+h.repo+":"+h.tag, host+"/"+p.repo+":"+p.tag, strings.Join(keys, ", "))
	return os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(b.String()), 0o644)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
func sec(d time.Duration) string {
	return fmt.Sprintf("%.2f s", d.Seconds())
}

const heading = "## Mirror: `stowage mirror` against a `crane copy` loop and `skopeo sync`"

func report(o options, unique, planned int64, planWall time.Duration, planRequests int64, rs []result, big result, skopeoErr error) string {
	var b strings.Builder
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "%s\n\n", heading)
	fmt.Fprintf(&b, "Written by `make bench` (`go run ./hack/mirrorbench`) on %s, %d cores, %s; load average when it ended: %s.\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version(), strings.Join(strings.Fields(string(load))[:3], ", "))
	fmt.Fprintf(&b, "The set: %d images and a helper and a pause image on Debian's docker-registry on 127.0.0.1, each a config, one of %d shared\n", o.n, o.bases)
	fmt.Fprintf(&b, "base layers (%d MB) and a layer of its own (%d MB), bytes from a seeded ChaCha8 stream: %s of unique blobs. Each tool copies\n", o.baseMB, o.ownMB, mb(unique))
	fmt.Fprintf(&b, "the whole set once into an empty site (a second docker-registry) through the same counting reverse proxy, which counts the\n")
	fmt.Fprintf(&b, "blob bytes uploaded. stowage: the median of three copies; the loops and skopeo: one run each (minutes); CPU is the tool's user plus system time.\n\n")
	fmt.Fprintf(&b, "| tool | time | CPU | peak memory | blob bytes sent | against unique blob bytes | uploads started (mount asked) | requests to the site |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var stowage, rerun, crane, skopeo *result
	for i := range rs {
		r := &rs[i]
		switch {
		case strings.HasPrefix(r.tool, "stowage mirror (empty"):
			stowage = r
		case strings.HasPrefix(r.tool, "stowage mirror (rerun"):
			rerun = r
		case strings.HasPrefix(r.tool, "crane"):
			crane = r
		case strings.HasPrefix(r.tool, "skopeo"):
			skopeo = r
		}
		status := ""
		if r.err != nil {
			status = " — **failed**: " + strings.SplitN(r.err.Error(), "\n", 2)[0]
		}
		fmt.Fprintf(&b, "| %s%s | %s | %s | %s | %s | %.2f× | %d (%d) | %d |\n", r.tool, status, sec(r.wall), sec(r.cpu), mb(r.maxRSS), mb(r.bytes), float64(r.bytes)/float64(unique), r.posts, r.mounts, r.requests)
	}
	fmt.Fprintf(&b, "\n`stowage mirror --dry-run` planned %s of unique blobs to move (the independent sum over the set's manifests: %s) in %s, with %d requests to the site.\n\n", mb(planned), mb(unique), sec(planWall), planRequests)
	fmt.Fprintf(&b, "Commands:\n\n")
	for _, r := range rs {
		if r.command != "" {
			fmt.Fprintf(&b, "- %s: `%s`\n", r.tool, r.command)
		}
	}
	if skopeoErr != nil {
		fmt.Fprintf(&b, "- skopeo: not installed (`apt-get install skopeo`), left out\n")
	}
	fmt.Fprintf(&b, "\n| goal | measured | verdict |\n|---|---:|---|\n")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	if stowage != nil && crane != nil {
		ratio := crane.wall.Seconds() / stowage.wall.Seconds()
		fmt.Fprintf(&b, "| mirror ≥ 3× faster than the crane copy loop | %.1f× (%s against %s) | %s |\n", ratio, sec(stowage.wall), sec(crane.wall), verdict(ratio >= 3 && stowage.err == nil))
	}
	if stowage != nil && skopeo != nil {
		ratio := skopeo.wall.Seconds() / stowage.wall.Seconds()
		fmt.Fprintf(&b, "| mirror faster than skopeo sync | %.1f× (%s against %s) | %s |\n", ratio, sec(stowage.wall), sec(skopeo.wall), verdict(ratio > 1 && stowage.err == nil))
	}
	if stowage != nil {
		fmt.Fprintf(&b, "| bytes moved = unique blob bytes | %d sent, %d unique (crane: %d, skopeo: %s) | %s |\n", stowage.bytes, unique, crane.bytes, skopeoBytes(skopeo), verdict(stowage.bytes == unique))
	}
	if rerun != nil {
		fmt.Fprintf(&b, "| steady-state rerun moves 0 blob bytes | %d bytes, %d uploads, %s | %s |\n", rerun.bytes, rerun.posts, sec(rerun.wall), verdict(rerun.bytes == 0 && rerun.posts == 0 && rerun.err == nil))
	}
	fmt.Fprintf(&b, "| peak RSS < 200 MB while a %d MB layer streams | %s (%s sent in %s) | %s |\n", o.bigMB, mb(big.maxRSS), mb(big.bytes), sec(big.wall), verdict(big.maxRSS < 200e6 && big.err == nil && big.bytes >= int64(o.bigMB)*1e6))
	if big.err != nil {
		fmt.Fprintf(&b, "\nThe large-layer run failed: %s\n", strings.SplitN(big.err.Error(), "\n", 2)[0])
	}
	b.WriteString("\n")
	return b.String()
}

func skopeoBytes(r *result) string {
	if r == nil {
		return "not run"
	}
	return fmt.Sprint(r.bytes)
}

// splice replaces the section starting with heading in the file at path
// (up to the next "## " heading or "<!-- " marker) with md, or inserts md before
// "## Go benchmarks" when the file has no such section.
func splice(path, md string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	if i := strings.Index(s, heading); i >= 0 {
		rest := s[i+len(heading):]
		// The section ends at the next heading or at hack/perf's marker
		// of the hand-written part, whichever comes first.
		j := strings.Index(rest, "\n## ")
		if k := strings.Index(rest, "\n<!-- "); k >= 0 && (j < 0 || k < j) {
			j = k
		}
		if j < 0 {
			return os.WriteFile(path, []byte(s[:i]+md), 0o644)
		}
		return os.WriteFile(path, []byte(s[:i]+md+rest[j+1:]), 0o644)
	}
	i := strings.Index(s, "## Go benchmarks")
	if i < 0 {
		return errors.New(path + ": no \"## Go benchmarks\" section to put the mirror section before")
	}
	return os.WriteFile(path, []byte(s[:i]+md+s[i:]), 0o644)
}
