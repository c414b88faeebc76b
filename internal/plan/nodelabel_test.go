package plan

import (
	"maps"
	"testing"

	"github.com/stowage/stowage/schema"
)

// TestBuildByNodeLabel: an environment and an image chosen by node label
// are one use per label value, each with its reference, the entry's own
// nodeSelector plus {label: value}, and the value in what names it; All
// lists every reference, which is what lock resolves.
func TestBuildByNodeLabel(t *testing.T) {
	t.Parallel()
	const kernel = "feature.node.kubernetes.io/kernel-version.full"
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/c.cue", Data: []byte(`
environments: driver: {
	nodeSelector: "nvidia.com/gpu.present": "true"
	byNodeLabel: {
		label: "` + kernel + `"
		references: {
			"6.8.0-1015-aws":    "nvcr.io/nvidia/driver:550.54.15-6.8.0-1015-aws"
			"5.15.0-91-generic": "nvcr.io/nvidia/driver:550.54.15-5.15.0-91-generic"
		}
	}
}
images: validator: byNodeLabel: {label: "nvidia.com/gpu.product", references: "Tesla-T4": "nvcr.io/nvidia/validator:t4"}
profiles: p: pullers: [{name: "gpu", namespace: "n", environments: ["driver"], images: ["validator"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		item, written string
		sel           map[string]string
	}{
		{`environment "driver" for ` + kernel + `=5.15.0-91-generic`, "nvcr.io/nvidia/driver:550.54.15-5.15.0-91-generic",
			map[string]string{"nvidia.com/gpu.present": "true", kernel: "5.15.0-91-generic"}},
		{`environment "driver" for ` + kernel + `=6.8.0-1015-aws`, "nvcr.io/nvidia/driver:550.54.15-6.8.0-1015-aws",
			map[string]string{"nvidia.com/gpu.present": "true", kernel: "6.8.0-1015-aws"}},
		{`image "validator" for nvidia.com/gpu.product=Tesla-T4`, "nvcr.io/nvidia/validator:t4",
			map[string]string{"nvidia.com/gpu.product": "Tesla-T4"}},
	}
	uses := p.Pullers[0].Uses
	if len(uses) != len(want) {
		t.Fatalf("%d uses, want %d", len(uses), len(want))
	}
	for i, w := range want {
		u := uses[i]
		if u.Item() != w.item || u.Ref.Written != w.written || !maps.Equal(u.NodeSelector, w.sel) {
			t.Errorf("use %d: %s %s %v; want %s %s %v", i, u.Item(), u.Ref.Written, u.NodeSelector, w.item, w.written, w.sel)
		}
	}
	// The environment's own selector is not changed by its choices.
	if sel := cfg.Environments["driver"].NodeSelector; len(sel) != 1 {
		t.Errorf("environment nodeSelector changed: %v", sel)
	}
	all, err := All(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, img := range all.Images {
		keys = append(keys, img.Key)
	}
	wantKeys := []string{"ghcr.io/stowage/stowage-helper:v0.1.0", "nvcr.io/nvidia/driver:550.54.15-5.15.0-91-generic",
		"nvcr.io/nvidia/driver:550.54.15-6.8.0-1015-aws", "nvcr.io/nvidia/validator:t4"}
	if len(keys) != len(wantKeys) {
		t.Fatalf("All keys %v, want %v", keys, wantKeys)
	}
	for i := range keys {
		if keys[i] != wantKeys[i] {
			t.Errorf("All keys %v, want %v", keys, wantKeys)
			break
		}
	}
}
