package imageset

import (
	"strings"
	"testing"
)

// TestFromChartOperator: on the operator-style fixture chart, a numeric
// version and tag yield their images as Helm prints them (8; 1.10 as 1.1,
// with a note saying so), a digest in the version field a digest
// reference, a section switched off as a whole (sandbox) none of its
// components; every entry says where it came from, the value-map finds
// are marked, and the driver carries the run-time OS note. The golden
// file holds the whole output.
func TestFromChartOperator(t *testing.T) {
	t.Parallel()
	set, source, err := FromChart("testdata/operator-chart", ChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, im := range set {
		got = append(got, im.Name+"="+im.Reference)
	}
	want := []string{
		"container-toolkit=nvcr.io/nvidia/k8s/container-toolkit@sha256:f0fef762982f7a136253b823b788d573d3a63f6e4c4727dddd99beb5887fcd25",
		"driver=nvcr.io/nvidia/driver:550.54.15",
		"ml-operator=ghcr.io/example-org/ml-operator:8",
		"validator=nvcr.io/nvidia/cloud-native/validator:1.1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("set:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	byName := map[string]Image{}
	for _, im := range set {
		byName[im.Name] = im
	}
	if op := byName["ml-operator"]; op.Heuristic || len(op.From) != 2 || op.From[0] != "Deployment ml-operator spec.template.spec.containers[0].image" {
		t.Errorf("ml-operator: heuristic %v, from %q", op.Heuristic, op.From)
	}
	if d := byName["driver"]; !d.Heuristic || !d.OSSuffix || !strings.Contains(d.Note, "completes this tag at run time with the node's OS") ||
		len(d.From) != 1 || d.From[0] != "values driver, carried by ClusterPolicy cluster-policy" {
		t.Errorf("driver: %+v", d)
	}
	if v := byName["validator"]; !strings.Contains(v.Note, "values validator.tag is written 1.10, a YAML number Helm prints as 1.1") || v.OSSuffix {
		t.Errorf("validator: %+v", v)
	}
	for _, f := range Formats {
		b, err := Encode(set, f, source)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "operator-chart."+f, b)
	}
}

// TestFromChartCapabilities: a mode that requires an API fails to render
// without --api-versions naming it, and renders with it; --kube-version
// is the version the templates see.
func TestFromChartCapabilities(t *testing.T) {
	t.Parallel()
	on := []string{"dra.enabled=true", "upgradeCRD.enabled=true"}
	_, _, err := FromChart("testdata/operator-chart", ChartOptions{Set: on})
	if err == nil || !strings.Contains(err.Error(), "dra.enabled needs the resource.nvidia.com/v1beta1 API") {
		t.Fatalf("without --api-versions: %v", err)
	}
	set, _, err := FromChart("testdata/operator-chart", ChartOptions{Set: on, APIVersions: []string{"resource.nvidia.com/v1beta1"}, KubeVersion: "v1.33.2"})
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	for _, im := range set {
		refs[im.Reference] = true
	}
	for _, want := range []string{"ghcr.io/example-org/dra-controller:v0.2.0", "registry.k8s.io/kubectl:v1.33.2"} {
		if !refs[want] {
			t.Errorf("no %s in %v", want, set)
		}
	}
	if _, _, err := FromChart("testdata/operator-chart", ChartOptions{KubeVersion: "one"}); err == nil || !strings.Contains(err.Error(), `--kube-version "one"`) {
		t.Errorf("a bad --kube-version: %v", err)
	}
}

// TestFromChartPerOS: with --per-node-label values that are OS suffixes,
// the driver whose tag the operator completes at run time becomes one
// reference per OS; the other images stay single.
func TestFromChartPerOS(t *testing.T) {
	t.Parallel()
	set, _, err := FromChartByNodeLabel("testdata/operator-chart", ChartOptions{}, "example.org/os", []NodeValue{
		{Value: "ubuntu22.04", File: "testdata/os-ubuntu22.04.yaml"},
		{Value: "rhel9.4", File: "testdata/os-rhel9.4.yaml"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range set {
		switch {
		case im.Name == "driver":
			c := im.ByNodeLabel
			if c == nil || c.References["ubuntu22.04"] != "nvcr.io/nvidia/driver:550.54.15-ubuntu22.04" || c.References["rhel9.4"] != "nvcr.io/nvidia/driver:550.54.15-rhel9.4" {
				t.Errorf("driver: %+v", c)
			}
		case im.ByNodeLabel != nil:
			t.Errorf("%s chosen by node label: %+v", im.Name, im.ByNodeLabel)
		}
	}
}
