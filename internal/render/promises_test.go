package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// promisesConfig is a GPU environment with one Equal and one Exists
// toleration and two catalogue images listed out of order (they go to a
// DaemonSet of their own, without the GPU node selector), so that each
// promise below is visible in one render.
const promisesConfig = `
environments: gpu: {
	image: "ghcr.io/example-org/zeta:1.0"
	nodeSelector: "nvidia.com/gpu.present": "true"
	tolerations: [
		{key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule"},
		{key: "dedicated", operator: "Equal", value: "gpu", effect: "NoExecute", tolerationSeconds: 30},
	]
}
images: {
	mid: reference: "docker.io/library/busybox:1.36"
	alpha: reference: "quay.io/example/alpha:2"
}
profiles: lab: pullers: [{name: "gpu", namespace: "ml", environments: ["gpu"], images: ["mid", "alpha"]}]
`

// TestTolerationsExact: the DaemonSet tolerates exactly the environment's
// tolerations, an Equal one with its operator and value (rendering it as
// the broader Exists would let the pods onto every node tainted with the
// key), tolerationSeconds kept, nothing added.
func TestTolerationsExact(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", promisesConfig)
	var ds []*appsv1.DaemonSet
	for _, d := range daemonSets(mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})) {
		if d.Spec.Template.Spec.NodeSelector["nvidia.com/gpu.present"] == "true" {
			ds = append(ds, d)
		} else if len(d.Spec.Template.Spec.Tolerations) != 0 {
			t.Errorf("%s, off the GPU nodes, tolerates %+v", d.Name, d.Spec.Template.Spec.Tolerations)
		}
	}
	if len(ds) != 1 {
		t.Fatalf("%d DaemonSets on the GPU nodes, want 1", len(ds))
	}
	thirty := int64(30)
	want := []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &thirty},
		{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	got := ds[0].Spec.Template.Spec.Tolerations
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tolerations:\n%+v\nwant exactly\n%+v", got, want)
	}
}

// TestHelperInstalledWherePulledRun: the helper is copied to the very
// path every pulled container runs, on a volume both mount at the same
// place; a shell-less image has nothing else to run.
func TestHelperInstalledWherePulledRun(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", promisesConfig)
	all := daemonSets(mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")}))
	if len(all) != 2 {
		t.Fatalf("%d DaemonSets, want 2", len(all))
	}
	n := 0
	for _, ds := range all {
		n += helperWherePulledRun(t, ds)
	}
	if n != 3 {
		t.Errorf("%d pulled containers, want 3", n)
	}
}

// helperWherePulledRun checks TestHelperInstalledWherePulledRun's promise
// in ds and returns its number of pulled containers.
func helperWherePulledRun(t *testing.T, ds *appsv1.DaemonSet) int {
	t.Helper()
	install := ds.Spec.Template.Spec.InitContainers[0]
	if install.Name != "install-helper" || len(install.Command) < 3 || install.Command[1] != "install" {
		t.Fatalf("first init container %+v, want install-helper running the helper's install", install)
	}
	target := install.Command[len(install.Command)-1]
	mountOf := func(c corev1.Container) (corev1.VolumeMount, bool) {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(target, strings.TrimSuffix(m.MountPath, "/")+"/") {
				return m, true
			}
		}
		return corev1.VolumeMount{}, false
	}
	im, ok := mountOf(install)
	if !ok {
		t.Fatalf("install-helper writes %s, on no volume it mounts (%+v)", target, install.VolumeMounts)
	}
	p := pulled(ds)
	for _, c := range p {
		if len(c.Command) == 0 || c.Command[0] != target {
			t.Errorf("%s runs %v; the helper was copied to %s", c.Name, c.Command, target)
		}
		if m, ok := mountOf(c); !ok || m.Name != im.Name || m.MountPath != im.MountPath {
			t.Errorf("%s mounts %+v; install-helper wrote %s on volume %s at %s", c.Name, c.VolumeMounts, target, im.Name, im.MountPath)
		}
	}
	return len(p)
}

// TestContainersHardened: every container, init and main, runs with a
// read-only root file system, as a non-root user, without privilege
// escalation and with every capability dropped.
func TestContainersHardened(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", promisesConfig)
	var all []corev1.Container
	for _, ds := range daemonSets(mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})) {
		all = append(append(all, ds.Spec.Template.Spec.InitContainers...), ds.Spec.Template.Spec.Containers...)
	}
	if len(all) != 7 {
		t.Fatalf("%d containers, want 7 (two install-helper, three pulled, two wait)", len(all))
	}
	for _, c := range all {
		s := c.SecurityContext
		switch {
		case s == nil:
			t.Errorf("%s: no securityContext", c.Name)
		case s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem:
			t.Errorf("%s: readOnlyRootFilesystem %v, want true", c.Name, s.ReadOnlyRootFilesystem)
		case s.RunAsNonRoot == nil || !*s.RunAsNonRoot || s.RunAsUser == nil || *s.RunAsUser == 0:
			t.Errorf("%s: runAsNonRoot %v runAsUser %v", c.Name, s.RunAsNonRoot, s.RunAsUser)
		case s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation:
			t.Errorf("%s: allowPrivilegeEscalation %v, want false", c.Name, s.AllowPrivilegeEscalation)
		case s.Capabilities == nil || !slices.Equal(s.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(s.Capabilities.Add) > 0:
			t.Errorf("%s: capabilities %+v, want drop ALL only", c.Name, s.Capabilities)
		}
	}
}

// TestImagesListSorted: the records ConfigMap lists each pulled image
// once, pinned, one per line, sorted (the Submarine design's format),
// whatever order the config lists them in.
func TestImagesListSorted(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", promisesConfig)
	objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	list := configMap(t, objs, "gpu-records").Data["images.list"]
	if !strings.HasSuffix(list, "\n") {
		t.Errorf("images.list does not end with a newline: %q", list)
	}
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	var want []string
	for _, ds := range daemonSets(objs) {
		for _, c := range pulled(ds) {
			want = append(want, c.Image)
		}
	}
	slices.Sort(want)
	if !slices.Equal(lines, want) {
		t.Errorf("images.list:\n%s\nwant the pulled images sorted:\n%s", list, strings.Join(want, "\n"))
	}
	for _, l := range lines {
		if !strings.Contains(l, "@sha256:") {
			t.Errorf("images.list line %q is not pinned", l)
		}
	}
	if !slices.IsSorted(lines) || len(lines) != 3 {
		t.Errorf("images.list lines %q: want 3, sorted", lines)
	}
}
