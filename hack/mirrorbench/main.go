// Command mirrorbench measures `stowage mirror` against the floor — a
// minimal copy of the set's unique blobs (each blob a GET from the source
// streamed into a POST and one PUT at the site, 8 at once, no manifests)
// — and against `skopeo sync --preserve-digests` (its blob-info cache
// cleared first, then warm) and a sequential `crane copy` loop, between
// two Debian docker-registry instances on 127.0.0.1, and writes the
// markdown section of docs/benchmarks.md (make bench; make bench-mirror
// runs it alone and puts the section into docs/benchmarks.md in place).
//
// The synthetic set: -n images (default 50), each one manifest with a
// config, one of -bases shared base layers (default 10 of 25 MB) and a
// layer of its own (default 1 MB), plus a helper and a pause image: about
// 300 MB of unique blobs; every byte from a ChaCha8 stream seeded by the
// layer's name, so the same flags give the same digests. Separately, one
// image with a -big-mb layer measures stowage's peak resident memory while
// that layer streams. Layers are generated as they are pushed (never held
// in memory) and everything is written under one temporary directory that
// is removed at the end.
//
// Every copy goes through the same counting reverse proxy in front of the
// site registry, which counts requests and uploaded blob bytes. stowage
// and the floor run paired, three rounds, each into an empty prefix of the
// site (a registry checks blobs per repository, but stowage would mount
// from the earlier prefixes, so each stowage round goes to a site of its
// own: the site registry is emptied between rounds); the medians are
// compared. -ports LO-HI puts the source, the site and the proxy on fixed
// ports of 127.0.0.1 (three of the range) instead of free ones.
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
	"net"
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

	"github.com/stowage/stowage/internal/testing/registrytest"
)

type options struct {
	stowage, crane, skopeo string
	n, bases               int
	baseMB, ownMB, bigMB   int
	md, splice             string
	jobs                   int
	onlyStowage            bool
	ports                  string
}

func main() {
	var o options
	flag.StringVar(&o.stowage, "stowage", "bin/stowage", "the stowage binary")
	flag.StringVar(&o.crane, "crane", "bin/crane", "the crane binary (make crane)")
	flag.StringVar(&o.skopeo, "skopeo", "skopeo", "the skopeo binary (apt-get install skopeo)")
	flag.IntVar(&o.n, "n", 50, "images in the set")
	flag.IntVar(&o.bases, "bases", 10, "shared base layers")
	flag.IntVar(&o.baseMB, "base-mb", 25, "size of a base layer, MB (10^6 bytes)")
	flag.IntVar(&o.ownMB, "own-mb", 1, "size of each image's own layer, MB")
	flag.IntVar(&o.bigMB, "big-mb", 1000, "size of the layer streamed for the memory measurement, MB")
	flag.IntVar(&o.jobs, "jobs", 8, "stowage mirror --jobs (and the floor's workers)")
	flag.BoolVar(&o.onlyStowage, "only-stowage", false, "time stowage mirror and the floor alone (no crane, skopeo or large layer): for trying changes")
	flag.StringVar(&o.ports, "ports", "", "LO-HI: listen on fixed ports of 127.0.0.1 from this range (source, site, proxy) instead of free ones")
	flag.StringVar(&o.md, "md", "", "write the markdown section here")
	flag.StringVar(&o.splice, "splice", "", "replace the mirror section of this markdown file (docs/benchmarks.md) with the new one")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

// portRange reads -ports: three ports from LO (source, site, proxy), all
// within HI; zeros without the flag.
func portRange(spec string) ([3]int, error) {
	var out [3]int
	if spec == "" {
		return out, nil
	}
	var lo, hi int
	if _, err := fmt.Sscanf(spec, "%d-%d", &lo, &hi); err != nil || lo < 1 || hi > 65535 || hi-lo < 2 {
		return out, fmt.Errorf("-ports %q: want LO-HI with at least 3 ports, e.g. 5300-5309", spec)
	}
	return [3]int{lo, lo + 1, lo + 2}, nil
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

// counter is a reverse proxy counting the blob bytes uploaded through it,
// and keeping a timeline of the requests since its reset (timeline).
type counter struct {
	host     string
	bytes    atomic.Int64
	posts    atomic.Int64
	mounts   atomic.Int64
	requests atomic.Int64

	// since is the reset's time (UnixNano); the others are offsets from
	// it (nanoseconds, 0 for none yet): the first request's arrival, the
	// first upload's POST (a blob upload, not a mount), the end of the
	// last upload's PUT and the end of the last answer.
	since                                      atomic.Int64
	firstReq, firstUpload, lastUpload, lastEnd atomic.Int64
}

// timeline is when a run's requests reached the site, from its start.
type timeline struct {
	firstReq, firstUpload, lastUpload, lastEnd time.Duration
}

// at is the offset of now from the reset, at least 1 ns.
func (c *counter) at() int64 { return max(time.Now().UnixNano()-c.since.Load(), 1) }

func setFirst(v *atomic.Int64, t int64) { v.CompareAndSwap(0, t) }

func setLast(v *atomic.Int64, t int64) {
	for {
		old := v.Load()
		if old >= t || v.CompareAndSwap(old, t) {
			return
		}
	}
}

func startCounter(target string, port int) (*counter, func(), error) {
	u, err := url.Parse("http://" + target)
	if err != nil {
		return nil, nil, err
	}
	c := &counter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		setFirst(&c.firstReq, c.at())
		upload := strings.Contains(r.URL.Path, "/blobs/uploads")
		if upload {
			if r.Method == http.MethodPost {
				c.posts.Add(1)
				if r.URL.Query().Get("mount") != "" {
					c.mounts.Add(1)
				} else {
					setFirst(&c.firstUpload, c.at())
				}
			}
			if r.Body != nil {
				r.Body = &countBody{ReadCloser: r.Body, n: &c.bytes}
			}
		}
		rp.ServeHTTP(w, r)
		end := c.at()
		if upload && r.Method == http.MethodPut {
			setLast(&c.lastUpload, end)
		}
		setLast(&c.lastEnd, end)
	}))
	if port != 0 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return nil, nil, err
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
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

func (c *counter) reset() {
	c.bytes.Store(0)
	c.posts.Store(0)
	c.mounts.Store(0)
	c.requests.Store(0)
	for _, v := range []*atomic.Int64{&c.firstReq, &c.firstUpload, &c.lastUpload, &c.lastEnd} {
		v.Store(0)
	}
	c.since.Store(time.Now().UnixNano())
}

// result is one tool's run.
type result struct {
	tool, command           string
	wall, cpu               time.Duration
	noCPU                   bool  // CPU not measured apart (in-process)
	maxRSS                  int64 // bytes
	bytes                   int64
	posts, mounts, requests int64
	// tl is when its requests reached the site (from the proxy).
	tl  timeline
	err error
	// when and load are the time the row was measured (UTC) and the
	// load average then (1, 5, 15 minutes).
	when time.Time
	load string
}

// stamp records the time and the load average of a row just measured.
func (r *result) stamp() {
	r.when = time.Now().UTC()
	data, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); len(f) >= 3 {
		r.load = strings.Join(f[:3], " ")
	}
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

// blobRef is one unique blob of the set and a repository holding it at the
// source.
type blobRef struct {
	repo string
	d    v1.Descriptor
}

// floorCopy is the minimal blob copy: every unique blob a GET from the
// source streamed into a POST and one PUT (a monolithic upload) at the
// site under prefix, jobs at once, the largest first, no manifests, no
// HEADs, plain net/http.
func floorCopy(src, site, prefix string, blobs []blobRef, jobs int) error {
	client := &http.Client{Timeout: 10 * time.Minute}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan blobRef)
	)
	one := func(b blobRef) error {
		get, err := client.Get("http://" + src + "/v2/" + b.repo + "/blobs/" + b.d.Digest.String())
		if err != nil {
			return err
		}
		defer get.Body.Close()
		if get.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", b.d.Digest, get.Status)
		}
		post, err := client.Post("http://"+site+"/v2/"+prefix+"/"+b.repo+"/blobs/uploads/", "", nil)
		if err != nil {
			return err
		}
		post.Body.Close()
		loc, err := post.Location()
		if err != nil || post.StatusCode != http.StatusAccepted {
			return fmt.Errorf("POST: %s %v", post.Status, err)
		}
		q := loc.Query()
		q.Set("digest", b.d.Digest.String())
		loc.RawQuery = q.Encode()
		req, err := http.NewRequest(http.MethodPut, loc.String(), get.Body)
		if err != nil {
			return err
		}
		req.ContentLength = b.d.Size
		req.Header.Set("Content-Type", "application/octet-stream")
		put, err := client.Do(req)
		if err != nil {
			return err
		}
		put.Body.Close()
		if put.StatusCode != http.StatusCreated {
			return fmt.Errorf("PUT %s: %s", b.d.Digest, put.Status)
		}
		return nil
	}
	for range jobs {
		wg.Go(func() {
			for b := range next {
				if err := one(b); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	// The largest first, as stowage orders its uploads, so that neither
	// copy ends with a few large blobs running alone.
	sorted := append([]blobRef(nil), blobs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].d.Size > sorted[j].d.Size })
	for _, b := range sorted {
		next <- b
	}
	close(next)
	wg.Wait()
	return first
}

// uniqueBlobs lists the set's distinct blobs, each with the first
// repository holding it.
func uniqueBlobs(set []img) ([]blobRef, error) {
	seen := map[v1.Hash]bool{}
	var out []blobRef
	for _, s := range set {
		m, err := s.image.Manifest()
		if err != nil {
			return nil, err
		}
		for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			if !seen[d.Digest] {
				seen[d.Digest] = true
				out = append(out, blobRef{repo: s.repo, d: d})
			}
		}
	}
	return out, nil
}

// siteRegistry is the site docker-registry, emptied by restarting it on a
// new directory at the same port (so the proxy in front keeps its target).
type siteRegistry struct {
	work string
	port int
	n    int
	d    *registrytest.Distribution
	Host string
}

func (s *siteRegistry) fresh() error {
	if s.d != nil {
		s.d.Stop()
		os.RemoveAll(s.d.Dir)
	}
	s.n++
	d, err := registrytest.StartDistribution(filepath.Join(s.work, fmt.Sprintf("site-%d", s.n)), registrytest.Options{Port: s.port})
	if err != nil {
		return err
	}
	s.d, s.Host = d, d.Host
	if s.port == 0 {
		fmt.Sscanf(d.Host, "127.0.0.1:%d", &s.port)
	}
	return nil
}

func (s *siteRegistry) stop() {
	if s.d != nil {
		s.d.Stop()
	}
}

// skopeoCache is where skopeo keeps its blob-info cache (which blobs it
// saw where, for mounts and for skipping known blobs): as root
// /var/lib/containers/cache, else $HOME/.local/share/containers/cache.
func skopeoCache(home string) string {
	if os.Geteuid() == 0 {
		return "/var/lib/containers/cache"
	}
	return filepath.Join(home, ".local/share/containers/cache")
}

// clearSkopeoCache removes skopeo's blob-info cache files from dir.
func clearSkopeoCache(dir string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "blob-info-cache-v1*"))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return nil
}

func run(o options) error {
	for _, b := range []string{o.stowage, o.crane} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s: %w (make build crane)", b, err)
		}
	}
	ports, err := portRange(o.ports)
	if err != nil {
		return err
	}
	skopeo, skopeoErr := exec.LookPath(o.skopeo)
	work, err := os.MkdirTemp("", "stowage-mirrorbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	src, err := registrytest.StartDistribution(filepath.Join(work, "src"), registrytest.Options{Port: ports[0]})
	if err != nil {
		return err
	}
	defer src.Stop()
	dst := &siteRegistry{work: work, port: ports[1]}
	if err := dst.fresh(); err != nil {
		return err
	}
	defer dst.stop()
	proxy, stopProxy, err := startCounter(dst.Host, ports[2])
	if err != nil {
		return err
	}
	defer stopProxy()

	// The set.
	set, err := makeSet(o, src.Host)
	if err != nil {
		return err
	}
	unique, err := uniqueBytes(set)
	if err != nil {
		return err
	}
	blobs, err := uniqueBlobs(set)
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
	b := &bench{o: o, work: work, src: src.Host, dst: dst, proxy: proxy, dir: dir, set: set,
		ins: []string{"--insecure-registry", src.Host, "--insecure-registry", proxy.host}, jobs: fmt.Sprint(o.jobs)}

	in := reportIn{unique: unique}
	// The plan alone.
	var planned int64
	in.planWall, in.planRequests, planned, err = b.plan()
	if err != nil {
		return err
	}
	in.planned = planned
	floor, stow, err := b.rounds(blobs)
	if err != nil {
		return err
	}
	results := []result{floor, stow}
	// The steady state: the same again.
	rerun := b.mirror("stowage", "stowage mirror, rerun (everything present)", "the same command again", "stowage mirror, rerun")
	results = append(results, rerun)
	if in.startup, err = startupCPU(o); err != nil {
		return err
	}
	// Into a new prefix of a site that holds the blobs under SITE/stowage.
	prefixB := b.mirror("stowage-b", "stowage mirror, new prefix of a site holding the blobs", "stowage mirror DIR --to SITE/stowage-b … (after the copy into SITE/stowage)", "stowage mirror, new prefix")
	results = append(results, prefixB)
	if o.onlyStowage {
		for _, r := range results {
			fmt.Printf("%s: %s, %s CPU, %d requests, %s sent, err %v; requests at the site: first %s, first upload %s, last upload done %s, last answer %s\n",
				r.tool, sec(r.wall), sec(r.cpu), r.requests, mb(r.bytes), r.err, sec(r.tl.firstReq), sec(r.tl.firstUpload), sec(r.tl.lastUpload), sec(r.tl.lastEnd))
		}
		return nil
	}
	// skopeo sync --preserve-digests from a YAML list: its blob-info
	// cache cleared (cold), then into a new prefix with the cache warm,
	// then the warm copy again (steady state).
	if skopeoErr == nil {
		rs, cacheDir, err := b.skopeoSync(skopeo)
		if err != nil {
			return err
		}
		results = append(results, rs...)
		in.skopeoCold, in.skopeoWarm, in.skopeoCache = &results[len(results)-3], &results[len(results)-2], cacheDir
	}
	// crane copy, one image after another, into an empty site.
	cr, err := b.craneLoop()
	if err != nil {
		return err
	}
	results = append(results, cr)
	// Memory while a large layer streams.
	if in.big, err = b.bigLayer(); err != nil {
		return err
	}
	in.rs, in.floor, in.stowage, in.rerun, in.prefixB, in.crane, in.skopeoErr = results, &results[0], &results[1], &rerun, &prefixB, &results[len(results)-1], skopeoErr
	md := report(o, in)
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

// makeSet generates o.n images (o.bases shared base layers of o.baseMB
// MB, own layers of o.ownMB MB) plus a helper and a pause image, and
// pushes them to the source registry host.
func makeSet(o options, host string) ([]img, error) {
	log.Printf("generating and pushing %d images (%d shared base layers of %d MB, own layers of %d MB)", o.n, o.bases, o.baseMB, o.ownMB)
	var bases []v1.Layer
	for i := range o.bases {
		l, err := newGenLayer(fmt.Sprintf("base-%d", i), int64(o.baseMB)*1e6)
		if err != nil {
			return nil, err
		}
		bases = append(bases, l)
	}
	var set []img
	for i := range o.n {
		own, err := newGenLayer(fmt.Sprintf("own-%d", i), int64(o.ownMB)*1e6)
		if err != nil {
			return nil, err
		}
		im, err := image(bases[i%o.bases], own)
		if err != nil {
			return nil, err
		}
		set = append(set, img{repo: fmt.Sprintf("bench/img-%03d", i), tag: "v1", image: im})
	}
	for _, s := range []string{"helper", "pause"} {
		l, err := newGenLayer(s, 1000)
		if err != nil {
			return nil, err
		}
		im, err := image(l)
		if err != nil {
			return nil, err
		}
		set = append(set, img{repo: "bench/" + s, tag: "v1", image: im})
	}
	if err := push(host, set); err != nil {
		return nil, err
	}
	return set, nil
}

// bench is one benchmark's registries and config: the source registry
// host src, the site registry dst behind the counting proxy, the config
// dir of set with its lock, and the flags every stowage mirror gets.
type bench struct {
	o     options
	work  string
	src   string
	dst   *siteRegistry
	proxy *counter
	dir   string
	set   []img
	ins   []string
	jobs  string
}

// counted records in r what the proxy saw since its reset.
func (b *bench) counted(r *result) {
	r.bytes, r.posts, r.mounts, r.requests = b.proxy.bytes.Load(), b.proxy.posts.Load(), b.proxy.mounts.Load(), b.proxy.requests.Load()
	p := b.proxy
	r.tl = timeline{time.Duration(p.firstReq.Load()), time.Duration(p.firstUpload.Load()), time.Duration(p.lastUpload.Load()), time.Duration(p.lastEnd.Load())}
	r.stamp()
}

// plan times `stowage mirror --dry-run` alone: its wall time, its
// requests and the bytes it plans to move.
func (b *bench) plan() (time.Duration, int64, int64, error) {
	b.proxy.reset()
	planWall, _, _, planOut, err := timed(nil, b.o.stowage, append([]string{"mirror", b.dir, "--to", b.proxy.host + "/stowage", "--dry-run", "-o", "json", "--jobs", b.jobs}, b.ins...)...)
	planRequests := b.proxy.requests.Load()
	if err != nil {
		return 0, 0, 0, err
	}
	var plan struct{ Bytes int64 }
	if err := json.Unmarshal(planOut, &plan); err != nil {
		return 0, 0, 0, err
	}
	return planWall, planRequests, plan.Bytes, nil
}

// rounds runs three rounds, each the floor (a minimal copy of blobs) then
// stowage, each into an empty site: paired, so both see the same load.
// It returns the median of each.
func (b *bench) rounds(blobs []blobRef) (floor, stow result, err error) {
	var floors, stows []result
	for i := 1; i <= 3; i++ {
		if err := b.dst.fresh(); err != nil {
			return floor, stow, err
		}
		b.proxy.reset()
		log.Printf("round %d: the floor", i)
		start := time.Now()
		err := floorCopy(b.src, b.proxy.host, "floor", blobs, b.o.jobs)
		f := result{wall: time.Since(start), noCPU: true, err: err}
		b.counted(&f)
		floors = append(floors, f)
		if err := b.dst.fresh(); err != nil {
			return floor, stow, err
		}
		b.proxy.reset()
		log.Printf("round %d: stowage mirror", i)
		wall, cpu, rss, _, err := timed(nil, b.o.stowage, append([]string{"mirror", b.dir, "--to", b.proxy.host + "/stowage", "--quiet", "--jobs", b.jobs}, b.ins...)...)
		r := result{wall: wall, cpu: cpu, maxRSS: rss, err: err}
		b.counted(&r)
		stows = append(stows, r)
	}
	floor = medianResult(floors)
	floor.tool = "floor: minimal blob copy of the unique blobs" + floor.tool
	floor.command = fmt.Sprintf("in-process: per unique blob, the largest first, GET SRC/v2/REPO/blobs/D → POST SITE/v2/floor/REPO/blobs/uploads/ + PUT ?digest=D with the body; %d at once; no manifests", b.o.jobs)
	stow = medianResult(stows)
	stow.tool = "stowage mirror, empty site" + stow.tool
	stow.command = fmt.Sprintf("stowage mirror DIR --to SITE/stowage --insecure-registry SRC --insecure-registry SITE --quiet --jobs %d", b.o.jobs)
	return floor, stow, nil
}

// medianResult is the result of median wall time of rs, with the first
// error of any, its tool naming the range.
func medianResult(rs []result) result {
	sorted := append([]result(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].wall < sorted[j].wall })
	m := sorted[len(sorted)/2]
	for _, r := range rs {
		if r.err != nil && m.err == nil {
			m.err = r.err
		}
	}
	m.tool = fmt.Sprintf(" (median of %d, %s to %s)", len(rs), sec(sorted[0].wall), sec(sorted[len(sorted)-1].wall))
	return m
}

// mirror times one stowage mirror into SITE/prefix of the site as it
// is, as tool and command say (logged as what).
func (b *bench) mirror(prefix, tool, command, what string) result {
	b.proxy.reset()
	log.Print(what)
	wall, cpu, rss, _, err := timed(nil, b.o.stowage, append([]string{"mirror", b.dir, "--to", b.proxy.host + "/" + prefix, "--quiet", "--jobs", b.jobs}, b.ins...)...)
	r := result{tool: tool, command: command, wall: wall, cpu: cpu, maxRSS: rss, err: err}
	b.counted(&r)
	return r
}

// startupCPU is start-up alone, for the rerun's share: the median CPU of
// 5 runs of `stowage version`.
func startupCPU(o options) (time.Duration, error) {
	var ups []time.Duration
	for range 5 {
		_, c, _, _, err := timed(nil, o.stowage, "version")
		if err != nil {
			return 0, err
		}
		ups = append(ups, c)
	}
	sort.Slice(ups, func(i, j int) bool { return ups[i] < ups[j] })
	return ups[len(ups)/2], nil
}

// skopeoSync runs skopeo sync --preserve-digests of the set from a YAML
// list three times: its blob-info cache cleared into an empty site
// (cold), into a new prefix with the cache warm, and that again (steady
// state). It returns the three results and the cache directory.
func (b *bench) skopeoSync(skopeo string) ([]result, string, error) {
	var results []result
	if err := b.dst.fresh(); err != nil {
		return nil, "", err
	}
	var y strings.Builder
	fmt.Fprintf(&y, "%s:\n  tls-verify: false\n  images:\n", b.src)
	for _, s := range b.set {
		fmt.Fprintf(&y, "    %s: [%q]\n", s.repo, s.tag)
	}
	yml := filepath.Join(b.work, "sync.yaml")
	if err := os.WriteFile(yml, []byte(y.String()), 0o644); err != nil {
		return nil, "", err
	}
	home := filepath.Join(b.work, "skopeo-home")
	os.MkdirAll(home, 0o755)
	cacheDir := skopeoCache(home)
	if err := clearSkopeoCache(cacheDir); err != nil {
		return nil, "", err
	}
	version := skopeoVersion(skopeo)
	for _, step := range []struct{ name, prefix string }{
		{"cold: blob-info cache cleared, empty site", "skopeo"},
		{"warm: cache from the cold run, new prefix of that site", "skopeo-b"},
		{"rerun of the warm copy (everything present)", "skopeo-b"},
	} {
		b.proxy.reset()
		log.Printf("skopeo sync, %s", step.name)
		args := []string{"sync", "--src", "yaml", "--dest", "docker", "--dest-tls-verify=false", "--preserve-digests", yml, b.proxy.host + "/" + step.prefix}
		wall, cpu, rss, _, err := timed([]string{"HOME=" + home}, skopeo, args...)
		r := result{tool: "skopeo sync --preserve-digests, " + step.name + " (" + version + ")",
			command: "skopeo " + strings.Join(args[:len(args)-2], " ") + " sync.yaml SITE/" + step.prefix,
			wall:    wall, cpu: cpu, maxRSS: rss, err: err}
		b.counted(&r)
		results = append(results, r)
	}
	return results, cacheDir, nil
}

// craneLoop copies the set with crane copy, one image after another,
// into an empty site.
func (b *bench) craneLoop() (result, error) {
	var cr result
	if err := b.dst.fresh(); err != nil {
		return cr, err
	}
	b.proxy.reset()
	log.Printf("crane copy loop")
	cr.tool, cr.command = "crane copy, sequential loop (empty site)", "for each image: crane copy --insecure SRC/REPO:TAG SITE/crane/REPO:TAG"
	for _, s := range b.set {
		w, c, rss, _, err := timed(nil, b.o.crane, "copy", "--insecure", b.src+"/"+s.repo+":"+s.tag, b.proxy.host+"/crane/"+s.repo+":"+s.tag)
		cr.wall += w
		cr.cpu += c
		cr.maxRSS = max(cr.maxRSS, rss)
		if err != nil && cr.err == nil {
			cr.err = err
		}
	}
	b.counted(&cr)
	return cr, nil
}

// bigLayer measures memory while a large layer streams: one image with
// an o.bigMB MB layer mirrored into an empty site.
func (b *bench) bigLayer() (result, error) {
	o := b.o
	log.Printf("memory: one image with a %d MB layer", o.bigMB)
	bigLayer, err := newGenLayer("big", int64(o.bigMB)*1e6)
	if err != nil {
		return result{}, err
	}
	bigImg, err := image(bigLayer)
	if err != nil {
		return result{}, err
	}
	big := []img{{repo: "big/one", tag: "v1", image: bigImg}, b.set[len(b.set)-2], b.set[len(b.set)-1]}
	if err := push(b.src, big[:1]); err != nil {
		return result{}, err
	}
	bigDir := filepath.Join(b.work, "big")
	if err := writeConfig(bigDir, b.src, big); err != nil {
		return result{}, err
	}
	if _, _, _, out, err := timed(nil, o.stowage, "lock", bigDir, "--insecure-registry", b.src, "--quiet"); err != nil {
		return result{}, fmt.Errorf("%v %s", err, out)
	}
	if err := b.dst.fresh(); err != nil {
		return result{}, err
	}
	b.proxy.reset()
	wall, cpu, rss, _, err := timed(nil, o.stowage, append([]string{"mirror", bigDir, "--to", b.proxy.host + "/big", "--quiet"}, b.ins...)...)
	return result{tool: fmt.Sprintf("stowage mirror, one %d MB layer", o.bigMB), wall: wall, cpu: cpu, maxRSS: rss, bytes: b.proxy.bytes.Load(), err: err}, nil
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

const heading = "## Mirror: `stowage mirror` against the floor, `skopeo sync --preserve-digests` and a `crane copy` loop"

// reportIn is what report writes.
type reportIn struct {
	unique, planned                       int64
	planWall                              time.Duration
	planRequests                          int64
	rs                                    []result
	big                                   result
	floor, stowage, rerun, prefixB, crane *result
	skopeoCold, skopeoWarm                *result
	skopeoErr                             error
	skopeoCache                           string
	startup                               time.Duration // CPU of `stowage version`
}

func report(o options, in reportIn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", heading)
	fmt.Fprintf(&b, "Written by `make bench-mirror` (`go run ./hack/mirrorbench`) on %s, %d cores, %s; each row gives the time (UTC) it was measured\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "and the load average (1, 5, 15 min) then. The set: %d images and a helper and a pause image on Debian's docker-registry on 127.0.0.1, each a config,\n", o.n)
	fmt.Fprintf(&b, "one of %d shared base layers (%d MB) and a layer of its own (%d MB), bytes from a seeded ChaCha8 stream: %s of unique blobs in %d images.\n", o.bases, o.baseMB, o.ownMB, mb(in.unique), o.n+2)
	fmt.Fprintf(&b, "Every copy goes to a second docker-registry (emptied before each copy into an empty site) through the same counting reverse proxy, which\n")
	fmt.Fprintf(&b, "counts the requests and the blob bytes uploaded. The floor and stowage run paired, three rounds, medians compared. CPU is the tool's\n")
	fmt.Fprintf(&b, "user plus system time (the floor runs inside the harness, beside the proxy: not measured apart). skopeo's blob-info cache is %s\n", in.skopeoCache)
	fmt.Fprintf(&b, "(root's; an empty HOME does not move it): cleared before the cold run, kept for the warm one.\n\n")
	fmt.Fprintf(&b, "| tool | command | measured (UTC), load | time | CPU | peak memory | blob bytes sent | uploads started (mount asked) | requests to the site |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range in.rs {
		status := ""
		if r.err != nil {
			status = " — **failed**: " + strings.SplitN(r.err.Error(), "\n", 2)[0]
		}
		cpu, rss := sec(r.cpu), mb(r.maxRSS)
		if r.noCPU {
			cpu, rss = "—", "—"
		}
		fmt.Fprintf(&b, "| %s%s | `%s` | %s, %s | %s | %s | %s | %s | %d (%d) | %d |\n", r.tool, status, r.command, r.when.Format("15:04"), r.load, sec(r.wall), cpu, rss, mb(r.bytes), r.posts, r.mounts, r.requests)
	}
	if in.skopeoErr != nil {
		fmt.Fprintf(&b, "\nskopeo is not installed (`apt-get install -y skopeo`): left out.\n")
	}
	fmt.Fprintf(&b, "\n`stowage mirror --dry-run` planned %s of unique blobs to move (the independent sum over the set's manifests: %s) in %s, with %d requests to the site.\n\n", mb(in.planned), mb(in.unique), sec(in.planWall), in.planRequests)
	fmt.Fprintf(&b, "| goal | measured | verdict |\n|---|---:|---|\n")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	var missed []string
	goal := func(name, measured string, ok bool, why string) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, measured, verdict(ok))
		if !ok && why != "" {
			missed = append(missed, "- "+name+": "+why)
		}
	}
	s, f := in.stowage, in.floor
	ratio := s.wall.Seconds() / f.wall.Seconds()
	goal("wall ≤ 1.3× the floor (minimal blob copy of the unique bytes)", fmt.Sprintf("%.2f× (%s against %s)", ratio, sec(s.wall), sec(f.wall)), ratio <= 1.3 && s.err == nil,
		fmt.Sprintf("of stowage's %s, the plan alone (the dry run: a HEAD per image and blob, the source's manifests read) takes %s; the floor sends no HEAD, no manifest and no verification, %d requests against stowage's %d. "+
			"The requests of the median run reached the site (counted by the proxy, from the process start): the first at %s (start-up, the config evaluated in its child process, the lock read), the first blob upload at %s (the plan before it: a HEAD per image and per blob and repository at the site, the manifests and the attachment lookups at the source), "+
			"the last upload done at %s, the last answer at %s (the tags and the verification after the last blob), the exit at %s: from the first upload to the last answer %s, %.2f× the floor's %s",
			sec(s.wall), sec(in.planWall), f.requests, s.requests,
			sec(s.tl.firstReq), sec(s.tl.firstUpload), sec(s.tl.lastUpload), sec(s.tl.lastEnd), sec(s.wall), sec(s.tl.lastEnd-s.tl.firstUpload), (s.tl.lastEnd-s.tl.firstUpload).Seconds()/f.wall.Seconds(), sec(f.wall)))
	if c := in.skopeoCold; c != nil {
		goal("requests ≤ skopeo's on the same plan (cold)", fmt.Sprintf("%d against %d", s.requests, c.requests), s.requests <= c.requests && s.err == nil, "")
		r := c.wall.Seconds() / s.wall.Seconds()
		goal("faster than skopeo sync --preserve-digests (cold)", fmt.Sprintf("%.2f× (%s against %s)", r, sec(s.wall), sec(c.wall)), r > 1 && s.err == nil, "")
	}
	goal("bytes moved = unique blob bytes", fmt.Sprintf("%d sent, %d unique", s.bytes, in.unique), s.bytes == in.unique && s.err == nil, "")
	p := in.prefixB
	goal("new prefix of a site holding the blobs: 0 bytes uploaded", fmt.Sprintf("%d bytes, %d mounts asked, %s", p.bytes, p.mounts, sec(p.wall)), p.bytes == 0 && p.err == nil, "")
	if w := in.skopeoWarm; w != nil {
		goal("new prefix: faster than skopeo with a warm cache", fmt.Sprintf("%s against %s", sec(p.wall), sec(w.wall)), p.wall < w.wall && p.err == nil, "")
	}
	rr := in.rerun
	goal(fmt.Sprintf("rerun ≤ 0.2 s for %d images (HEADs only)", o.n+2), fmt.Sprintf("%s, %d requests, %d bytes", sec(rr.wall), rr.requests, rr.bytes), rr.wall <= 200*time.Millisecond && rr.bytes == 0 && rr.err == nil,
		fmt.Sprintf("%s of CPU in the process, of which start-up alone (`stowage version`, median of 5) is %s; the rest reads the config and lock and sends the %d requests (a ping, a HEAD per image) on %d workers; the wall beyond the CPU is waiting for the registry and, at load %s on %d cores, for a CPU. "+
			"The first request reached the site at %s (start-up twice: the process, then the config's evaluation in a child process of the same binary, which runs every initialiser of it again; the lock read), the last answer at %s: %s for the requests, %s before them. "+
			"The HEAD per image is the verification of a present image (its tag resolves to the locked digest), and the ping the one per registry and run",
			sec(rr.cpu), sec(in.startup), rr.requests, o.jobs, rr.load, runtime.NumCPU(),
			sec(rr.tl.firstReq), sec(rr.tl.lastEnd), sec(rr.tl.lastEnd-rr.tl.firstReq), sec(rr.tl.firstReq)))
	if c := in.crane; c != nil {
		r := c.wall.Seconds() / s.wall.Seconds()
		goal("≥ 3× faster than the crane copy loop", fmt.Sprintf("%.1f× (%s against %s)", r, sec(s.wall), sec(c.wall)), r >= 3 && s.err == nil, "")
	}
	big := in.big
	goal(fmt.Sprintf("peak RSS < 200 MB while a %d MB layer streams", o.bigMB), fmt.Sprintf("%s (%s sent in %s)", mb(big.maxRSS), mb(big.bytes), sec(big.wall)), big.maxRSS < 200e6 && big.err == nil && big.bytes >= int64(o.bigMB)*1e6, "")
	if len(missed) > 0 {
		fmt.Fprintf(&b, "\nMissed, with what was measured:\n\n%s\n", strings.Join(missed, "\n"))
	}
	b.WriteString("\n")
	return b.String()
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
	h, i := heading, strings.Index(s, heading)
	if i < 0 {
		// The section's heading before the floor and skopeo's cache
		// were measured.
		h = "## Mirror: `stowage mirror` against a `crane copy` loop and `skopeo sync`"
		i = strings.Index(s, h)
	}
	if i >= 0 {
		rest := s[i+len(h):]
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
	i = strings.Index(s, "## Go benchmarks")
	if i < 0 {
		return errors.New(path + ": no \"## Go benchmarks\" section to put the mirror section before")
	}
	return os.WriteFile(path, []byte(s[:i]+md+s[i:]), 0o644)
}
