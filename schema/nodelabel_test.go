package schema

import (
	"strings"
	"testing"
)

// TestByNodeLabelLocated: a byNodeLabel choice's mistakes are each
// reported at their field, a label value being hostile input checked as
// Kubernetes checks label values, and a good one decodes.
func TestByNodeLabelLocated(t *testing.T) {
	const prof = "profiles: p: pullers: [{name: \"a\", namespace: \"n\", environments: [\"d\"]}]\n"
	const kernel = "feature.node.kubernetes.io/kernel-version.full"
	for _, c := range []struct{ env, want string }{
		{"environments: d: {image: \"busybox:1\", byNodeLabel: {label: \"" + kernel + "\", references: {\"5.15.0-91-generic\": \"busybox:2\"}}}\n",
			"cfg/c.cue:3:39: environments.d.byNodeLabel: give either image or byNodeLabel, not both"},
		{"environments: d: byNodeLabel: {references: {\"5.15.0-91-generic\": \"busybox:2\"}}\n",
			"cfg/c.cue:3:18: environments.d.byNodeLabel.label: label is required and missing: write label: followed by a non-empty string"},
		{"environments: d: {platforms: [\"linux/amd64\"]}\n",
			"cfg/c.cue:3:15: environments.d: image or byNodeLabel is required"},
		{"environments: d: byNodeLabel: {label: \"bad label\", references: {\"5.15.0-91-generic\": \"busybox:2\"}}\n",
			"cfg/c.cue:3:32: environments.d.byNodeLabel.label: byNodeLabel label \"bad label\" is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
		{"environments: d: byNodeLabel: {label: \"" + kernel + "\", references: {}}\n",
			"cfg/c.cue:3:89: environments.d.byNodeLabel.references: byNodeLabel needs at least one label value and its reference"},
		{"environments: d: byNodeLabel: {label: \"" + kernel + "\", references: {\"5.15.0 91\\u202egeneric\": \"busybox:2\"}}\n",
			"environments.d.byNodeLabel.references.\"5.15.0 91\\u202egeneric\": label value \"5.15.0 91\\u202egeneric\" is not a valid label value"},
		{"environments: d: byNodeLabel: {label: \"" + kernel + "\", references: {\"5.15.0-91-generic\": \"Busybox::2\"}}\n",
			"cfg/c.cue:3:102: environments.d.byNodeLabel.references.\"5.15.0-91-generic\": image \"Busybox::2\": repository path component"},
		{"environments: d: {nodeSelector: \"" + kernel + "\": \"6.8.0\", byNodeLabel: {label: \"" + kernel + "\", references: {\"5.15.0-91-generic\": \"busybox:2\"}}}\n",
			"cfg/c.cue:3:33: environments.d.nodeSelector.\"" + kernel + "\": nodeSelector sets " + kernel + "=\"6.8.0\", the label byNodeLabel chooses the reference by; leave it to byNodeLabel"},
		{"environments: d: {platforms: [\"linux/arm64\"], byNodeLabel: {label: \"kubernetes.io/arch\", references: {amd64: \"busybox:2\"}}}\n",
			"cfg/c.cue:3:19: environments.d.platforms: a single platform places the image by kubernetes.io/arch"},
	} {
		_, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + prof + c.env)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\nerr = %v\nwant it to hold %s", c.env, err, c.want)
		}
	}

	// The puller's nodeSelector may not set the label to another value.
	_, err := LoadFiles("cfg", []File{{Name: "cfg/c.yaml", Data: []byte(
		"images: {v: {byNodeLabel: {label: nvidia.com/gpu.product, references: {Tesla-T4: 'validator:t4', NVIDIA-A100-SXM4-80GB: 'validator:a100'}}}}\n" +
			"profiles: {p: {pullers: [{name: a, namespace: n, images: [v], nodeSelector: {nvidia.com/gpu.product: Tesla-T4}}]}}\n")}}, Options{})
	want := `cfg/c.yaml:2:78: profiles.p.pullers[0].nodeSelector."nvidia.com/gpu.product": nodeSelector nvidia.com/gpu.product="Tesla-T4" conflicts with image "v", whose byNodeLabel pre-pulls a reference on the nodes labelled nvidia.com/gpu.product="NVIDIA-A100-SXM4-80GB" each; leave the label out of the puller's nodeSelector`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}

	cfg, err := LoadFiles("cfg", []File{{Name: "cfg/c.yaml", Data: []byte(
		"environments: {d: {byNodeLabel: {label: " + kernel + ", references: {6.8.0-1015-aws: 'nvcr.io/nvidia/driver:550-6.8.0-1015-aws', 5.15.0-91-generic: 'nvcr.io/nvidia/driver:550-5.15.0-91-generic'}}}}\n" +
			"profiles: {p: {pullers: [{name: a, namespace: n, environments: [d]}]}}\n")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Environments["d"].ByNodeLabel
	if b == nil || b.Label != kernel || strings.Join(b.Values(), " ") != "5.15.0-91-generic 6.8.0-1015-aws" ||
		strings.Join(cfg.Environments["d"].References(), " ") != "nvcr.io/nvidia/driver:550-5.15.0-91-generic nvcr.io/nvidia/driver:550-6.8.0-1015-aws" {
		t.Errorf("byNodeLabel = %+v", b)
	}
}
