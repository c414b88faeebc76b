package node

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/stowage/stowage/internal/helperimage"
	"github.com/stowage/stowage/internal/lock"
)

// lanesEnv runs TestLanesBenchmark (make bench-lanes): "1", or a file to
// write its markdown table to. Unset, the benchmark is skipped: it is a
// measurement, not a test of .ci/run.
const lanesEnv = "STOWAGE_BENCH_LANES"

// laneMaxParallel is the kubelet's maxParallelImagePulls in the benchmark
// (with serializeImagePulls: false).
const laneMaxParallel = 4

// laneHelperRef is the helper image of the benchmark's pullers.
const laneHelperRef = siteHost + "/stowage/stowage-helper:v0.1.0"

// laneImages are the benchmark's images: a notebook platform's set, each a
// shared base layer (the static pause, its entrypoint) and a layer of
// incompressible bytes of its size, 960 MB in all.
var laneImages = []struct {
	name string
	mb   int
}{
	{"llm-runtime", 320}, {"cuda-base", 240}, {"notebook-gpu", 160},
	{"pytorch", 120}, {"notebook", 80}, {"tools", 40},
}

// randomLayer is a layer holding one file of size bytes from a ChaCha8
// stream seeded with seed: incompressible, the same on every run, never
// held in memory. Gzip at level 0 (stored blocks) keeps the bytes as they
// are, as a registry holding already-compressed layers serves them.
func randomLayer(t *testing.T, path string, size int64, seed uint64) v1.Layer {
	t.Helper()
	open := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o444, Size: size, Typeflag: tar.TypeReg}); err != nil {
				pw.CloseWithError(err)
				return
			}
			var key [32]byte
			binary.LittleEndian.PutUint64(key[:], seed)
			src := rand.NewChaCha8(key)
			if _, err := io.CopyN(tw, src, size); err != nil {
				pw.CloseWithError(err)
				return
			}
			pw.CloseWithError(tw.Close())
		}()
		return pr, nil
	}
	l, err := tarball.LayerFromOpener(open, tarball.WithCompressionLevel(gzip.NoCompression))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// writeLanesConfig writes one puller of every benchmark image per lane
// count: profile "lanes-N" has the puller "models" with lanes: N.
func writeLanesConfig(t *testing.T, counts []int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("images:\n")
	var names []string
	for _, im := range laneImages {
		fmt.Fprintf(&b, "  %s:\n    reference: %q\n", im.name, siteHost+"/platform/"+im.name+":1.0")
		names = append(names, im.name)
	}
	b.WriteString("profiles:\n")
	for _, n := range counts {
		fmt.Fprintf(&b, "  lanes-%d:\n    helper:\n      image: %q\n    pullers:\n    - name: models\n      namespace: models\n      images: [%s]\n", n, laneHelperRef, strings.Join(names, ", "))
		if n > 1 {
			fmt.Fprintf(&b, "      lanes: %d\n", n)
		}
	}
	return writeConfigDir(t, b.String())
}

// TestLanesBenchmark measures what lanes buy (docs/benchmarks.md, "Pull
// lanes"): for 1, 2 and 4 lanes, each on a fresh cluster (a namespace of
// its own, containerd empty) whose kubelet pulls in parallel
// (serializeImagePulls: false, maxParallelImagePulls laneMaxParallel), the
// time from `kubectl apply` of the rendered puller until every image is in
// containerd, and until every DaemonSet is Ready. The images come from a
// docker-registry on the namespace's loopback; its storage is kept between
// the clusters, so they are pushed once.
func TestLanesBenchmark(t *testing.T) {
	what := os.Getenv(lanesEnv)
	if what == "" {
		t.Skipf("a benchmark: set %s=1 (or a file for its table) to run it (make bench-lanes)", lanesEnv)
	}
	requireParts(t)
	counts := []int{1, 2, 4}
	bins := buildBinaries(t)
	data := t.TempDir()
	cfgDir := writeLanesConfig(t, counts)
	var l *lock.Lock
	type result struct {
		lanes             int
		dss               int
		present, ready    time.Duration
		loadStart, loadAt string
	}
	var results []result
	var total int64
	for i, n := range counts {
		t.Run(fmt.Sprintf("lanes-%d", n), func(t *testing.T) {
			ns := newNamespace(t)
			startRegistryData(t, ns, siteHost, "", false, data)
			if i == 0 {
				start := time.Now()
				p := &pusher{ns: ns}
				pauseBin := readFile(t, bins.pause)
				amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
				base := image(t, amd64, []string{"/pause"}, file{"pause", 0o555, pauseBin})
				p.push(t, siteHost+"/k8s/pause:3.10", base)
				helper, err := helperimage.Build(context.Background(), helperimage.Options{ModuleDir: ".."})
				if err != nil {
					t.Fatal(err)
				}
				p.pushIndex(t, laneHelperRef, helper)
				for k, im := range laneImages {
					size := int64(im.mb) << 20
					img, err := mutate.AppendLayers(base, randomLayer(t, "data/"+im.name, size, uint64(k+1)))
					if err != nil {
						t.Fatal(err)
					}
					p.push(t, siteHost+"/platform/"+im.name+":1.0", img)
					total += size
				}
				t.Logf("pushed %d images (%d MiB of layers) in %v", len(laneImages), total>>20, time.Since(start).Round(time.Second))
				ns.run(t, []string{"DOCKER_CONFIG=" + filepath.Join(ns.state, "docker-config")}, bins.stowage, "lock", cfgDir, "--insecure-registry", siteHost)
				l = readLock(t, cfgDir)
			}
			c := startClusterWith(t, ns, siteHost+"/k8s/pause:3.10", []string{siteHost}, clusterOptions{kubelet: func(kc *kubeletv1beta1.KubeletConfiguration) {
				par := int32(laneMaxParallel)
				serial := false
				kc.SerializeImagePulls = &serial
				kc.MaxParallelImagePulls = &par
			}})
			out := filepath.Join(t.TempDir(), "out")
			ns.run(t, nil, bins.stowage, "render", cfgDir, "--profile", fmt.Sprintf("lanes-%d", n), "--output-dir", out)
			dss := renderedDaemonSets(t, out)
			if len(dss) != n {
				t.Fatalf("lanes: %d renders %d DaemonSets", n, len(dss))
			}
			var want []string
			for _, e := range l.Entries {
				if strings.Contains(e.Reference, "/platform/") {
					want = append(want, repoOf(t, e.Reference)+"@"+e.Digest)
				}
			}
			c.kubectl(t, "create", "namespace", "models")
			r := result{lanes: n, dss: len(dss), loadStart: loadAvg()}
			start := time.Now()
			c.kubectl(t, "apply", "--server-side", "-k", out)
			waitFor(t, 10*time.Minute, "every image in containerd", func() (bool, string) {
				images := c.ctrImages(t)
				var missing []string
				for _, w := range want {
					if !images[w] {
						missing = append(missing, w)
					}
				}
				return len(missing) == 0, fmt.Sprintf("missing %v", missing)
			})
			r.present = time.Since(start)
			c.waitAll(t, out, 10*time.Minute)
			r.ready = time.Since(start)
			r.loadAt = loadAvg()
			results = append(results, r)
			t.Logf("lanes %d (%d DaemonSets): every image present %.1fs, every DaemonSet Ready %.1fs (load %s → %s)", n, r.dss, r.present.Seconds(), r.ready.Seconds(), r.loadStart, r.loadAt)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| lanes | DaemonSets | apply to every image present | apply to every DaemonSet Ready | load average at the start → end |\n|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d | %d | %.1f s | %.1f s | %s → %s |\n", r.lanes, r.dss, r.present.Seconds(), r.ready.Seconds(), r.loadStart, r.loadAt)
	}
	fmt.Printf("pull lanes, %d images, %d MiB of incompressible layers, kubelet serializeImagePulls: false, maxParallelImagePulls: %d:\n%s", len(laneImages), total>>20, laneMaxParallel, b.String())
	if what != "1" {
		if err := os.WriteFile(what, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
