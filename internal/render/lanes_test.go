package render

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// lanesConfig is a gated puller of five images in three lanes.
const lanesConfig = `
images: {
	a: reference: "registry.example/a:1"
	b: reference: "registry.example/b:1"
	c: reference: "registry.example/c:1"
	d: reference: "registry.example/d:1"
	e: reference: "registry.example/e:1"
}
profiles: lab: pullers: [{
	name:      "big"
	namespace: "prepull"
	images: ["a", "b", "c", "d", "e"]
	lanes:     3
	startup: taint: {key: "stowage.dev/images", effect: "NoSchedule"}
}]
`

// TestLanes: lanes: 3 splits the puller into DaemonSets big-l1..big-l3,
// the images balanced by their locked bytes, largest first onto the
// lightest lane (ties to the first lane): sizes a 10, b 9, c 5, d 4 and
// e 4 GiB give l1 {a} (10), l2 {b, e} (13), l3 {c, d} (9); every lane's
// helper is told all three parts, so the startup taint is
// lifted only when all lanes on the node are done.
func TestLanes(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", lanesConfig)
	l := lockFor(t, cfg, "")
	sizes := map[string]int64{"a": 10 << 30, "b": 9 << 30, "c": 5 << 30, "d": 4 << 30, "e": 4 << 30}
	for i := range l.Entries {
		base := l.Entries[i].Name[strings.LastIndex(l.Entries[i].Name, "/")+1:]
		base, _, _ = strings.Cut(base, ":")
		l.Entries[i].Size = sizes[base]
		l.Entries[i].Platforms = nil
	}
	objs := mustRender(t, Input{Config: cfg, Lock: l})
	got := map[string][]string{}
	for _, ds := range daemonSets(objs) {
		for _, c := range ds.Spec.Template.Spec.InitContainers[1:] {
			got[ds.Name] = append(got[ds.Name], strings.TrimPrefix(c.Name, "pull-"))
		}
		cmd := ds.Spec.Template.Spec.Containers[0].Command
		i := slices.Index(cmd, "--parts")
		var parts []startupPart
		if i < 0 || json.Unmarshal([]byte(cmd[i+1]), &parts) != nil || len(parts) != 3 {
			t.Errorf("%s: the helper is not told the three lanes: %q", ds.Name, cmd)
		}
	}
	// a (10) -> l1; b (9) -> l2; c (5) -> l3; d (4) -> l3 (loads 10, 9,
	// 5); e (4) -> l2 (loads 10, 9, 9: the first lightest).
	want := map[string][]string{"big-l1": {"a"}, "big-l2": {"b", "e"}, "big-l3": {"c", "d"}}
	if len(got) != len(want) {
		t.Fatalf("DaemonSets %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s pulls %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// lanesNodeLabelConfig is a puller of three images and a driver chosen
// per kernel (byNodeLabel, two values) in three lanes: four images per
// node, so vet accepts the three lanes.
const lanesNodeLabelConfig = `
environments: driver: byNodeLabel: {
	label: "feature.node.kubernetes.io/kernel-version.full"
	references: {
		"k1": "registry.example/driver:k1"
		"k2": "registry.example/driver:k2"
	}
}
images: {
	a: reference: "registry.example/a:1"
	b: reference: "registry.example/b:1"
	c: reference: "registry.example/c:1"
}
profiles: lab: pullers: [{
	name:      "gpu"
	namespace: "prepull"
	environments: ["driver"]
	images: ["a", "b", "c"]
	lanes:     3
}]
`

// TestLanesPerDaemonSet: lanes count the images of each rendered
// DaemonSet, not the puller's. The node group every node pulls (a, b, c)
// is split into gpu-l1..gpu-l3 (a 3, b 2, c 1 GiB: one each); each kernel's DaemonSet holds one driver
// image, so it gets one lane (gpu-k1-l1, gpu-k2-l1) and no lane is empty.
func TestLanesPerDaemonSet(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", lanesNodeLabelConfig)
	l := lockFor(t, cfg, "")
	sizes := map[string]int64{"a": 3 << 30, "b": 2 << 30, "c": 1 << 30, "driver": 5 << 30}
	for i := range l.Entries {
		base := l.Entries[i].Name[strings.LastIndex(l.Entries[i].Name, "/")+1:]
		base, _, _ = strings.Cut(base, ":")
		l.Entries[i].Size = sizes[base]
		l.Entries[i].Platforms = nil
	}
	objs := mustRender(t, Input{Config: cfg, Lock: l})
	got := map[string][]string{}
	for _, ds := range daemonSets(objs) {
		for _, c := range ds.Spec.Template.Spec.InitContainers[1:] {
			ref, _, _ := strings.Cut(c.Image, "@")
			got[ds.Name] = append(got[ds.Name], ref[strings.LastIndex(ref, "/")+1:])
		}
	}
	want := map[string][]string{
		"gpu-l1": {"a:1"}, "gpu-l2": {"b:1"}, "gpu-l3": {"c:1"},
		"gpu-k1-l1": {"driver:k1"}, "gpu-k2-l1": {"driver:k2"},
	}
	if len(got) != len(want) {
		t.Fatalf("DaemonSets %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s pulls %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
