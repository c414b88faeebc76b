package imageset

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFromChartGolden: the GPU-operator-shaped chart lists its
// Deployment's init container and container, its DaemonSet's container,
// the validator image an env var names, and the driver, toolkit and
// device plugin maps its ClusterPolicy carries on (the driver with its
// per-kernel tag); not the switched-off MIG manager, the unused values
// map, or the helm test pod. Twice the same bytes.
func TestFromChartGolden(t *testing.T) {
	t.Parallel()
	set, source, err := FromChart("testdata/gpu-operator", ChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if source != "chart gpu-operator-mini 0.1.0" {
		t.Errorf("source %q", source)
	}
	var refs []string
	for _, im := range set {
		refs = append(refs, im.Reference)
	}
	want := []string{
		"nvcr.io/nvidia/k8s/container-toolkit:v1.15.0-ubuntu20.04",
		"nvcr.io/nvidia/cuda:12.4.1-base-ubi8",
		"nvcr.io/nvidia/driver:550.54.15-ubuntu22.04",
		"nvcr.io/nvidia/gpu-operator:v24.3.0",
		"nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.3.0",
		"nvcr.io/nvidia/k8s-device-plugin:v0.15.0-ubi8",
		"registry.k8s.io/nfd/node-feature-discovery:v0.15.4",
	}
	if !slices.Equal(refs, want) {
		t.Errorf("references\n%v\nwant\n%v", refs, want)
	}
	for _, f := range Formats {
		b, err := Encode(set, f, source)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "gpu-operator."+f, b)
		again, _, err := FromChart("testdata/gpu-operator", ChartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b2, _ := Encode(again, f, source); string(b2) != string(b) {
			t.Errorf("a second run gives other bytes:\n%s\n%s", b, b2)
		}
	}
}

// TestFromChartValues: a values file and --set change the driver tag.
func TestFromChartValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    ChartOptions
		want string
	}{
		{ChartOptions{ValueFiles: []string{"testdata/kernel-535.yaml"}}, "nvcr.io/nvidia/driver:535.161.08-ubuntu22.04"},
		{ChartOptions{ValueFiles: []string{"testdata/kernel-535.yaml"}, Set: []string{"driver.version=550.90.07-rhel9.4"}}, "nvcr.io/nvidia/driver:550.90.07-rhel9.4"},
	} {
		set, _, err := FromChart("testdata/gpu-operator", c.o)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(set, func(im Image) bool { return im.Name == "driver" })
		if i < 0 || set[i].Reference != c.want {
			t.Errorf("%+v: driver %v, want %s", c.o, set, c.want)
		}
	}
	// Switching the MIG manager on reports it.
	set, _, err := FromChart("testdata/gpu-operator", ChartOptions{Set: []string{"migManager.enabled=true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(set, func(im Image) bool {
		return im.Name == "k8s-mig-manager" && im.Reference == "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.7.0-ubuntu20.04"
	}) {
		t.Errorf("migManager.enabled=true: %v", set)
	}
}

// TestFromChartArchive: the same chart packed as a .tgz gives the same set.
func TestFromChartArchive(t *testing.T) {
	t.Parallel()
	dir, _, err := FromChart("testdata/gpu-operator", ChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(t.TempDir(), "gpu-operator-mini-0.1.0.tgz")
	if err := packChart(t, "testdata/gpu-operator", tgz); err != nil {
		t.Fatal(err)
	}
	got, _, err := FromChart(tgz, ChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dir, got) {
		t.Errorf("archive %v, directory %v", got, dir)
	}
}

// TestFromChartRefuses: a chart that does not render, a rendered image
// that is no reference, a missing chart, an oversized values file.
func TestFromChartRefuses(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxValuesBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		chart string
		o     ChartOptions
		want  string
	}{
		{"testdata/broken-chart", ChartOptions{}, "chart testdata/broken-chart: rendering: "},
		{"testdata/broken-chart", ChartOptions{Set: []string{"image.repository=Example.com/App"}}, `chart testdata/broken-chart: Deployment broken spec.template.spec.containers[0].image: image "Example.com/App": `},
		{"testdata/no-such-chart", ChartOptions{}, "chart testdata/no-such-chart: "},
		{"testdata/gpu-operator", ChartOptions{ValueFiles: []string{big}}, "larger than 4194304 bytes, the limit of a values file"},
	} {
		_, _, err := FromChart(c.chart, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.chart, c.o, err, c.want)
		}
	}
	_, _, err := FromChart("testdata/broken-chart", ChartOptions{})
	if err == nil || !strings.Contains(err.Error(), "image.repository is required") {
		t.Errorf("the template's own message is lost: %v", err)
	}
}

// TestValueImages: the three shapes of image maps charts use compose as
// their templates do; numbers as templates print them (1.10 is 1.1), a
// digest in the version field as a digest reference; enabled: false, on
// the map or on a section above it, and maps whose image is a map are not
// images themselves.
func TestValueImages(t *testing.T) {
	t.Parallel()
	vals := map[string]any{
		"driver": map[string]any{"repository": "nvcr.io/nvidia", "image": "driver", "version": "550.54.15-ubuntu22.04"},
		"app": map[string]any{"image": map[string]any{
			"registry": "docker.io", "repository": "bitnami/nginx", "tag": "1.27.0", "digest": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		}},
		"off":   map[string]any{"enabled": false, "repository": "example.com/off", "tag": "1"},
		"plain": map[string]any{"image": "busybox"},
		"num":   map[string]any{"repository": "example.com/n", "tag": 1.5},
		"eight": map[string]any{"repository": "example.com/e", "version": float64(8)},
		"ten":   map[string]any{"repository": "example.com/t", "tag": 1.10},
		"set":   map[string]any{"repository": "example.com/s", "tag": int64(3)},
		"pinned": map[string]any{"repository": "nvcr.io/nvidia", "image": "driver",
			"version": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		"section": map[string]any{"enabled": false, "component": map[string]any{"repository": "example.com/sub", "tag": "1"}},
	}
	var got []string
	for _, vi := range ValueImages(vals) {
		got = append(got, vi.Path+"="+vi.Reference)
	}
	want := []string{
		"app.image=docker.io/bitnami/nginx:1.27.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"driver=nvcr.io/nvidia/driver:550.54.15-ubuntu22.04",
		"eight=example.com/e:8",
		"num=example.com/n:1.5",
		"pinned=nvcr.io/nvidia/driver@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"plain=busybox",
		"set=example.com/s:3",
		"ten=example.com/t:1.1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
}

// TestFromChartBounds: a chart directory of more than MaxChartFiles files,
// or an archive larger than MaxChartBytes, is refused before Helm loads it.
func TestFromChartBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := 0; i <= MaxChartFiles; i++ {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := FromChart(dir, ChartOptions{}); err == nil || !strings.Contains(err.Error(), "more than 10000 files, the limit of a chart") {
		t.Errorf("many files: %v", err)
	}
	tgz := filepath.Join(t.TempDir(), "big.tgz")
	if err := os.WriteFile(tgz, make([]byte, MaxChartBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := FromChart(tgz, ChartOptions{}); err == nil || !strings.Contains(err.Error(), "the limit of a chart archive") {
		t.Errorf("big archive: %v", err)
	}
}
