package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/dnslabel"
)

// kernelLabel is Node Feature Discovery's full kernel version label.
const kernelLabel = "feature.node.kubernetes.io/kernel-version.full"

// nodeLabelConfig chooses the GPU driver per kernel and a validator per
// GPU product, beside an image every GPU node pulls. Two kernel values
// differ only in punctuation (their DNS labels would be equal) and one is
// 63 characters long (its name does not fit).
const nodeLabelConfig = `
environments: driver: {
	byNodeLabel: {
		label: "feature.node.kubernetes.io/kernel-version.full"
		references: {
			"5.15.0-91-generic": "nvcr.io/nvidia/driver:550.54.15-5.15.0-91-generic"
			"5-15-0-91-generic": "nvcr.io/nvidia/driver:550.54.15-5-15-0-91-generic"
			"6.8.0-1015-aws":    "nvcr.io/nvidia/driver:550.54.15-6.8.0-1015-aws"
			"6.8.0-1015-aws-with-a-long-local-version-suffix-for-the-tests.1": "nvcr.io/nvidia/driver:550.54.15-long"
		}
	}
	tolerations: [{key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule"}]
}
images: {
	validator: byNodeLabel: {
		label: "nvidia.com/gpu.product"
		references: {
			"NVIDIA-A100-SXM4-80GB": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.0-a100"
			"Tesla-T4":              "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.0-t4"
		}
	}
	toolkit: reference: "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0-ubuntu20.04"
}
profiles: gpu: pullers: [{
	name:      "gpu-operator-images"
	namespace: "gpu-operator"
	nodeSelector: "nvidia.com/gpu.present": "true"
	environments: ["driver"]
	images: ["validator", "toolkit"]
}]
`

// TestNodeLabelDaemonSets renders a byNodeLabel choice: one DaemonSet per
// label value, its nodeSelector the puller's plus {label: value}, pulling
// that value's reference alone; names are DNS labels of at most 63
// characters, distinct even for values whose DNS label is the same; the
// records ConfigMap lists every reference. The stream is compared with
// testdata/nodelabel.golden.yaml (-update rewrites it).
func TestNodeLabelDaemonSets(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", nodeLabelConfig)
	l := lockFor(t, cfg, "")
	objs := mustRender(t, Input{Config: cfg, Lock: l})
	type ds struct {
		selector map[string]string
		refs     []string
	}
	got := map[string]ds{}
	for _, d := range daemonSets(objs) {
		if len(d.Name) > maxLabel || dnslabel.Sanitize(d.Name, maxLabel) != d.Name {
			t.Errorf("DaemonSet name %q is not a DNS-1123 label of at most %d characters", d.Name, maxLabel)
		}
		var refs []string
		for _, c := range d.Spec.Template.Spec.InitContainers[1:] {
			ref, _, _ := strings.Cut(c.Image, "@")
			refs = append(refs, ref)
		}
		got[d.Name] = ds{d.Spec.Template.Spec.NodeSelector, refs}
	}
	base := map[string]string{"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
	with := func(k, v string) map[string]string {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	// A value that is a DNS label names its DaemonSet as it is; any other
	// value's name ends in 6 hex digits of sha256 of the value (made a
	// label, NUL, the value), so that it depends on the value alone.
	hashed := func(v string) string {
		s := dnslabel.Sanitize(v, maxLabel)
		sum := sha256.Sum256([]byte(s + "\x00" + v))
		return "gpu-operator-images-" + s + "-" + hex.EncodeToString(sum[:])[:6]
	}
	want := map[string]ds{
		"gpu-operator-images": {base, []string{"nvcr.io/nvidia/k8s/container-toolkit:v1.17.0-ubuntu20.04"}},
		"gpu-operator-images-5-15-0-91-generic": {with(kernelLabel, "5-15-0-91-generic"),
			[]string{"nvcr.io/nvidia/driver:550.54.15-5-15-0-91-generic"}},
		hashed("5.15.0-91-generic"): {with(kernelLabel, "5.15.0-91-generic"),
			[]string{"nvcr.io/nvidia/driver:550.54.15-5.15.0-91-generic"}},
		hashed("6.8.0-1015-aws"): {with(kernelLabel, "6.8.0-1015-aws"),
			[]string{"nvcr.io/nvidia/driver:550.54.15-6.8.0-1015-aws"}},
		hashed("NVIDIA-A100-SXM4-80GB"): {with("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
			[]string{"nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.0-a100"}},
		hashed("Tesla-T4"): {with("nvidia.com/gpu.product", "Tesla-T4"),
			[]string{"nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.0-t4"}},
	}
	// The value too long for a name is cut: found by its selector.
	for name, d := range got {
		if _, ok := want[name]; ok {
			continue
		}
		if v := d.selector[kernelLabel]; v == "6.8.0-1015-aws-with-a-long-local-version-suffix-for-the-tests.1" {
			if !strings.HasPrefix(name, "gpu-operator-images-") {
				t.Errorf("DaemonSet %s for %s=%s: want the puller's name as prefix", name, kernelLabel, v)
			}
			want[name] = ds{with(kernelLabel, v), []string{"nvcr.io/nvidia/driver:550.54.15-long"}}
		}
	}
	if len(got) != 7 {
		t.Errorf("got %d DaemonSets %v, want 7 (one per label value and one for the rest)", len(got), slices.Sorted(maps.Keys(got)))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no DaemonSet %s", name)
			continue
		}
		if !maps.Equal(g.selector, w.selector) || !slices.Equal(g.refs, w.refs) {
			t.Errorf("DaemonSet %s: nodeSelector %v pulls %v; want %v pulls %v", name, g.selector, g.refs, w.selector, w.refs)
		}
	}
	list := configMap(t, objs, "gpu-operator-images-records").Data["images.list"]
	if n := strings.Count(list, "\n"); n != 7 {
		t.Errorf("images.list has %d lines, want the 7 references:\n%s", n, list)
	}

	// The same config renders the same bytes, and the golden file.
	enc := encode(t, objs)
	if again := encode(t, mustRender(t, Input{Config: cfg, Lock: l})); !bytes.Equal(enc, again) {
		t.Error("two renders of one config differ")
	}
	golden := filepath.Join("testdata", "nodelabel.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantBytes, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/render -run TestNodeLabelDaemonSets -update writes it)", err)
	}
	if !bytes.Equal(enc, wantBytes) {
		t.Errorf("render differs from %s (-update rewrites it); got:\n%s", golden, enc)
	}
}
