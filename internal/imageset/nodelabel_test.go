package imageset

import (
	"strings"
	"testing"
)

const kernelLabel = "feature.node.kubernetes.io/kernel-version.full"

// TestFromChartByNodeLabel: the GPU-operator-shaped chart rendered once
// per kernel, each with its values file setting the precompiled driver's
// tag: the driver becomes a byNodeLabel choice of the two kernels' tags,
// every other image (the same in both renders) a plain entry; as images
// and as environments, YAML and CUE, golden, and the same bytes twice.
func TestFromChartByNodeLabel(t *testing.T) {
	t.Parallel()
	values := []NodeValue{
		{Value: "6.8.0-1015-aws", File: "testdata/kernel-6.8.0-1015-aws.yaml"},
		{Value: "5.15.0-91-generic", File: "testdata/kernel-5.15.0-91-generic.yaml"},
	}
	set, source, err := FromChartByNodeLabel("testdata/gpu-operator", ChartOptions{}, kernelLabel, values)
	if err != nil {
		t.Fatal(err)
	}
	if source != "chart gpu-operator-mini 0.1.0, per "+kernelLabel+" (2 values)" {
		t.Errorf("source %q", source)
	}
	var choices int
	for _, im := range set {
		if im.ByNodeLabel == nil {
			if strings.Contains(im.Reference, "/driver:") {
				t.Errorf("the driver %s is a plain image", im.Reference)
			}
			continue
		}
		choices++
		c := im.ByNodeLabel
		if im.Name != "driver" || im.Reference != "" || c.Label != kernelLabel || len(c.References) != 2 ||
			c.References["5.15.0-91-generic"] != "nvcr.io/nvidia/driver:550-5.15.0-91-generic-ubuntu22.04" ||
			c.References["6.8.0-1015-aws"] != "nvcr.io/nvidia/driver:550-6.8.0-1015-aws-ubuntu22.04" {
			t.Errorf("choice %s %+v", im.Name, c)
		}
	}
	if choices != 1 || len(set) != 7 {
		t.Errorf("%d images, %d by node label; want 7 and 1: %+v", len(set), choices, set)
	}
	for _, kind := range Kinds {
		for _, f := range Formats {
			b, err := EncodeAs(set, f, kind, source)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "gpu-operator-by-kernel-"+kind+"."+f, b)
		}
	}
	again, _, err := FromChartByNodeLabel("testdata/gpu-operator", ChartOptions{}, kernelLabel, []NodeValue{values[1], values[0]})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := EncodeAs(set, "yaml", "environments", source)
	b, _ := EncodeAs(again, "yaml", "environments", source)
	if string(a) != string(b) {
		t.Errorf("the values in another order give other bytes:\n%s\n%s", a, b)
	}

	// Hostile or malformed flag values are refused naming the argument.
	for arg, want := range map[string]string{
		kernelLabel + "=5.15.0-91-generic":                      "want LABEL=VALUE:FILE",
		"bad label=5.15:f.yaml":                                 `label "bad label" is not a valid label key`,
		kernelLabel + "=5.15.0 91\u202egeneric:f.yaml":          "is not a valid label value",
		kernelLabel + "=" + strings.Repeat("5", 64) + ":f.yaml": "must be no more than 63 bytes",
	} {
		if _, _, err := ParseNodeValue(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseNodeValue(%q) = %v, want %q", arg, err, want)
		}
	}
	if l, v, err := ParseNodeValue(kernelLabel + "=5.15.0-91-generic:k/5.15.yaml"); err != nil || l != kernelLabel || v.Value != "5.15.0-91-generic" || v.File != "k/5.15.yaml" {
		t.Errorf("ParseNodeValue: %q %+v %v", l, v, err)
	}
	if _, _, err := FromChartByNodeLabel("testdata/gpu-operator", ChartOptions{}, kernelLabel, []NodeValue{values[0], values[0]}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a value twice: %v", err)
	}
}

// TestParseNodeValues: the arguments of --per-node-label together: one
// label, each value once, no "-" file, none or at least two values.
func TestParseNodeValues(t *testing.T) {
	t.Parallel()
	a, b := kernelLabel+"=5.15:a.yaml", kernelLabel+"=6.8:b.yaml"
	label, values, err := ParseNodeValues([]string{a, b})
	if err != nil || label != kernelLabel || len(values) != 2 || values[0] != (NodeValue{"5.15", "a.yaml"}) || values[1] != (NodeValue{"6.8", "b.yaml"}) {
		t.Fatalf("two values: %q %v %v", label, values, err)
	}
	if label, values, err := ParseNodeValues(nil); err != nil || label != "" || values != nil {
		t.Errorf("none: %q %v %v", label, values, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{a}, `"` + a + `": the one value of ` + kernelLabel + " given"},
		{[]string{a, "nvidia.com/gpu.product=x:c.yaml"}, "but an earlier one names " + kernelLabel},
		{[]string{a, kernelLabel + "=6.8:-"}, "only --values reads standard input"},
		{[]string{a, kernelLabel + "=5.15:c.yaml"}, `value "5.15" is given twice`},
		{[]string{a, "bad"}, "want LABEL=VALUE:FILE"},
	} {
		if _, _, err := ParseNodeValues(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}
