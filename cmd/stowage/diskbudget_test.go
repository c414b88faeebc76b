package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
)

// diskConfig writes a config directory whose profile pre-pulls a 30 GB
// notebook image (and a 20 MB helper) onto nodes declared with disk, and
// its lock.
func diskConfig(t *testing.T, disk string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := `helper:
  image: reg.example/helper:1
images:
  notebook:
    reference: reg.example/notebook:1
profiles:
  lab:
    pullers:
      - name: notebooks
        namespace: prepull
        images: [notebook]
        nodeSelector: {pool: gpu}
` + disk
	l := &lock.Lock{}
	l.Put(lock.Entry{Name: "reg.example/helper:1", Reference: "reg.example/helper:1", Digest: "sha256:" + strings.Repeat("1", 64), Kind: lock.KindManifest, Size: 20_000_000})
	l.Put(lock.Entry{Name: "reg.example/notebook:1", Reference: "reg.example/notebook:1", Digest: "sha256:" + strings.Repeat("2", 64), Kind: lock.KindManifest, Size: 30_000_000_000})
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, v1alpha1.ImageLockFile), l.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVetDiskBudget: vet warns, on stderr and exit 0, when a node pool's
// declared disk cannot hold its images below the kubelet's image GC high
// threshold (30.02 GB compressed, about 120.08 GB on disk, against 150Gi ×
// 70%); says nothing of a pool that fits (150Gi × 85%) unless -v; and
// reports every pool in -o json.
func TestVetDiskBudget(t *testing.T) {
	t.Parallel()
	small := diskConfig(t, "        nodeDisk: {size: 150Gi}\n")
	stdout, stderr, code := runCLI(t, nil, "vet", small)
	want := "stowage: profile lab: node pool kubernetes.io/os=linux,pool=gpu: 2 images, 30.02GB compressed, about 120.08GB on disk; 150Gi disk × 85% = 136.90GB: fits"
	// 120.08 GB fits below 136.90 GB: no warning.
	if code != 0 || string(stdout) != "ok: profile lab: 2 images pre-pulled\n" || stderr != "" {
		t.Errorf("100Gi: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, stderr, code = runCLI(t, nil, "vet", "-v", small)
	if code != 0 || stderr != want+"\n" {
		t.Errorf("-v: exit %d, stderr\n%q\nwant\n%q", code, stderr, want+"\n")
	}

	tight := diskConfig(t, "        nodeDisk: {size: 150Gi, imageGCHighThresholdPercent: 70}\n")
	stdout, stderr, code = runCLI(t, nil, "vet", tight)
	want = "stowage: warning: profile lab: node pool kubernetes.io/os=linux,pool=gpu: 2 images, 30.02GB compressed, about 120.08GB on disk; 150Gi disk × 70% = 112.74GB: does not fit below the kubelet's image GC high threshold, the kubelet would remove pre-pulled images\n"
	if code != 0 || string(stdout) != "ok: profile lab: 2 images pre-pulled\n" || stderr != want {
		t.Errorf("70%%: exit %d, stdout %q, stderr\n%q\nwant\n%q", code, stdout, stderr, want)
	}

	stdout, _, code = runCLI(t, nil, "vet", tight, "-o", "json")
	var rep struct {
		DiskBudget []v1alpha1.DiskPool `json:"diskBudget"`
	}
	if err := json.Unmarshal(stdout, &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if len(rep.DiskBudget) != 1 {
		t.Fatalf("diskBudget %+v, want one pool", rep.DiskBudget)
	}
	p := rep.DiskBudget[0]
	v := p.Variants[0]
	if p.Profile != "lab" || p.Verdict != v1alpha1.DiskDoesNotFit || p.Disk.ImageGCHighThresholdPercent != 70 ||
		v.CompressedBytes != 30_020_000_000 || v.OnDiskBytes != 120_080_000_000 || v.LimitBytes != 112_742_891_520 {
		t.Errorf("pool %+v", p)
	}
}

// TestStatusDiskBudgetHostile: status against an API server on loopback
// that sends node capacities no real one would (10^30 bytes, a negative
// one, none) and kubelet configurations a real kubelet would not (a
// threshold beyond int64, one of 0, a body that is not JSON) beside a
// believable one: the report holds each node's capacity saturated or
// zero, believes only the 1..100 threshold and assumes 85% elsewhere,
// without a panic or a wrapped number.
func TestStatusDiskBudgetHostile(t *testing.T) {
	t.Parallel()
	dir := cliValidDir(t)
	nodes := `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[` +
		`{"metadata":{"name":"huge","labels":{"kubernetes.io/os":"linux"}},"status":{"capacity":{"ephemeral-storage":"1e30"},"allocatable":{"ephemeral-storage":"99999999999999999999Ei"}}},` +
		`{"metadata":{"name":"negative","labels":{"kubernetes.io/os":"linux"}},"status":{"capacity":{"ephemeral-storage":"-5Gi"}}},` +
		`{"metadata":{"name":"none","labels":{"kubernetes.io/os":"linux"}}},` +
		`{"metadata":{"name":"sane","labels":{"kubernetes.io/os":"linux"}},"status":{"capacity":{"ephemeral-storage":"100Gi"}}}]}`
	configz := map[string]string{
		"huge":     `{"kubeletconfig":{"imageGCHighThresholdPercent":99999999999999999999999}}`,
		"negative": `{"kubeletconfig":{"imageGCHighThresholdPercent":0}}`,
		"none":     `not json`,
		"sane":     `{"kubeletconfig":{"imageGCHighThresholdPercent":70}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/nodes" {
			fmt.Fprint(w, nodes)
			return
		}
		if name, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/proxy/configz"); ok && configz[name] != "" {
			fmt.Fprint(w, configz[name])
			return
		}
		emptyCluster(w, r)
	}))
	t.Cleanup(srv.Close)
	stdout, stderr, code := runBinary(t, nil, "status", dir, "--kubeconfig", apiKubeconfig(t, srv), "-o", "json")
	var rep v1alpha1.StatusReport
	if err := json.Unmarshal(stdout, &rep); err != nil || code != 1 {
		t.Fatalf("exit %d (want 1: the DaemonSets are absent), %v\n%s%s", code, err, stdout, stderr)
	}
	if len(rep.DiskBudget) != 1 || len(rep.DiskBudget[0].Nodes) != 4 {
		t.Fatalf("disk budget %+v", rep.DiskBudget)
	}
	type facts struct {
		capacity, allocatable int64
		percent               int
		read                  bool
		verdict               string
	}
	want := map[string]facts{
		"huge":     {math.MaxInt64, math.MaxInt64, 85, false, v1alpha1.DiskFits},
		"negative": {0, 0, 85, false, v1alpha1.DiskNoDisk},
		"none":     {0, 0, 85, false, v1alpha1.DiskNoDisk},
		"sane":     {107_374_182_400, 0, 70, true, v1alpha1.DiskFits},
	}
	for _, n := range rep.DiskBudget[0].Nodes {
		got := facts{n.CapacityBytes, n.AllocatableBytes, n.HighThresholdPercent, n.ThresholdRead, n.Verdict}
		if got != want[n.Node] || n.Images == 0 {
			t.Errorf("node %s: %+v with %d images, want %+v", n.Node, got, n.Images, want[n.Node])
		}
	}
	if n := rep.DiskBudget[0].Nodes[3]; n.LimitBytes != 75_161_927_680 {
		t.Errorf("sane node's limit %d, want 70%% of 100Gi", n.LimitBytes)
	}
}
