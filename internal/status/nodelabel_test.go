package status

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/schema"
)

const kernelLabel = "feature.node.kubernetes.io/kernel-version.full"

// TestNodeGroupStatus: an environment whose driver image a kernel label
// chooses is reported per node group: for each kernel, the nodes carrying
// it and those holding its driver; a node of one kernel is not scheduled
// for the other kernel's driver, and a driver missing on one node of its
// group keeps the profile from being ready.
func TestNodeGroupStatus(t *testing.T) {
	t.Parallel()
	drivers := map[string]string{
		"5.15.0-91-generic": "nvcr.io/nvidia/driver:550.54.15-5.15.0-91-generic",
		"6.8.0-1015-aws":    "nvcr.io/nvidia/driver:550.54.15-6.8.0-1015-aws",
	}
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
environments: driver: byNodeLabel: {
	label: "` + kernelLabel + `"
	references: {
		"5.15.0-91-generic": "` + drivers["5.15.0-91-generic"] + `"
		"6.8.0-1015-aws":    "` + drivers["6.8.0-1015-aws"] + `"
	}
}
profiles: gpu: pullers: [{name: "drivers", namespace: "gpu-operator", environments: ["driver"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{}
	for _, ref := range []string{drivers["5.15.0-91-generic"], drivers["6.8.0-1015-aws"], "ghcr.io/stowage/stowage-helper:v0.1.0"} {
		e, err := offlineimage.Entry(ref)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(e)
	}
	p, err := plan.Build(cfg, "gpu", l)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(render.Input{Plan: p, Config: cfg, Profile: "gpu", Lock: l})
	if err != nil {
		t.Fatal(err)
	}
	var dss []*appsv1.DaemonSet
	for _, o := range objs {
		if ds, ok := o.Object.(*appsv1.DaemonSet); ok {
			dss = append(dss, ds)
		}
	}
	exp, err := Expect(p, dss)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, exp)
	node := func(name, kernel string) {
		f.node(name, map[string]string{"kubernetes.io/os": "linux", kernelLabel: kernel})
	}
	node("gpu-a", "5.15.0-91-generic")
	node("gpu-b", "5.15.0-91-generic")
	node("gpu-c", "6.8.0-1015-aws")
	f.node("cpu-1", map[string]string{"kubernetes.io/os": "linux"})
	f.pod("gpu-operator/drivers-5-15-0-91-generic-212095", "gpu-a", nil)
	f.pod("gpu-operator/drivers-5-15-0-91-generic-212095", "gpu-b", func(p *corev1.Pod) {
		waiting(initStatus(t, p, "nvcr.io/nvidia/driver"), "ErrImagePull", "not found")
	})
	f.pod("gpu-operator/drivers-6-8-0-1015-aws-fd386b", "gpu-c", nil)
	rep := Evaluate(f.exp, f.c)
	if rep.Ready {
		t.Error("ready with the 5.15 driver failing on gpu-b")
	}
	for kernel, want := range map[string]v1alpha1.NodeGroup{
		"5.15.0-91-generic": {Label: kernelLabel, Value: "5.15.0-91-generic", Nodes: []string{"gpu-a", "gpu-b"}, Holding: []string{"gpu-a"}},
		"6.8.0-1015-aws":    {Label: kernelLabel, Value: "6.8.0-1015-aws", Nodes: []string{"gpu-c"}, Holding: []string{"gpu-c"}},
	} {
		st := rep.Image(drivers[kernel])
		if st == nil {
			t.Fatalf("no status for %s", drivers[kernel])
		}
		if len(st.NodeGroups) != 1 {
			t.Fatalf("%s: node groups %+v, want one", kernel, st.NodeGroups)
		}
		g := st.NodeGroups[0]
		if g.Label != want.Label || g.Value != want.Value || !slices.Equal(g.Nodes, want.Nodes) || !slices.Equal(g.Holding, want.Holding) {
			t.Errorf("%s: node group %+v, want %+v", kernel, g, want)
		}
		// The other kernel's node and the CPU node are not scheduled.
		for _, n := range []string{"gpu-a", "gpu-b", "gpu-c", "cpu-1"} {
			c := st.On(n)
			if in := slices.Contains(want.Nodes, n); c == nil || (c.State == NotScheduled) == in {
				t.Errorf("%s on %s: %+v (in the group: %v)", kernel, n, c, in)
			}
		}
	}
	if st := rep.Image("ghcr.io/stowage/stowage-helper:v0.1.0"); st == nil || st.NodeGroups != nil {
		t.Errorf("the helper image has node groups: %+v", st)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"NODE GROUP                                                        IMAGE                                              HOLDING  WITHOUT IT",
		kernelLabel + "=5.15.0-91-generic  " + drivers["5.15.0-91-generic"] + "  1/2      gpu-b",
		kernelLabel + "=6.8.0-1015-aws     " + drivers["6.8.0-1015-aws"] + "     1/1      -",
	} {
		if !strings.Contains(buf.String(), line+"\n") {
			t.Errorf("table lacks line %q:\n%s", line, buf.String())
		}
	}
}
