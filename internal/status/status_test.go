package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// submarine renders the Submarine example (its committed lock, a
// placeholder Harbor password) and returns what status expects of it. Its
// DaemonSets, one per credential and node group:
// submarine/jupyter-image-puller (helper, jupyter, the helper again as the
// main container; no pull Secret) and
// submarine/jupyter-image-puller-submarine-dockerhub (helper,
// jupyter-chinese, helper) on every Linux node,
// submarine/jupyter-image-puller-jupyter-gpu (helper, jupyter-gpu, helper) on
// nodes labelled nvidia.com/gpu.present=true.
func submarine(t *testing.T) (*Expected, *lock.Lock) {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "submarine-notebooks")
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := placeholderRender(t, dir, cfg, "notebooks", l)
	if err != nil {
		t.Fatal(err)
	}
	var dss []*appsv1.DaemonSet
	for _, o := range objs {
		if ds, ok := o.Object.(*appsv1.DaemonSet); ok {
			dss = append(dss, ds)
		}
	}
	p, err := plan.Build(cfg, "notebooks", l)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := Expect(p, dss)
	if err != nil {
		t.Fatal(err)
	}
	return exp, l
}

const (
	dsMain = "submarine/jupyter-image-puller"
	dsGPU  = "submarine/jupyter-image-puller-jupyter-gpu"
	dsHub  = "submarine/jupyter-image-puller-submarine-dockerhub"
	gpuKey = "nvidia.com/gpu.present"
)

var now = time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)

// fixture is a cluster under construction.
type fixture struct {
	t   *testing.T
	exp *Expected
	c   *Cluster
}

func newFixture(t *testing.T, exp *Expected) *fixture {
	f := &fixture{t: t, exp: exp, c: &Cluster{DaemonSets: map[string]*appsv1.DaemonSet{}, Now: now}}
	// Every rendered DaemonSet is applied and current unless a case says
	// otherwise.
	for _, ds := range exp.DaemonSets {
		live := ds.DeepCopy()
		live.UID = types.UID("uid-" + ds.Name)
		live.Generation, live.Status.ObservedGeneration = 1, 1
		f.c.DaemonSets[ds.Namespace+"/"+ds.Name] = live
	}
	return f
}

// node adds a node with labels (k=v pairs) and the given image names in
// status.images.
func (f *fixture) node(name string, labels map[string]string, images ...string) *corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, im := range images {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{im}, SizeBytes: 1 << 20})
	}
	f.c.Nodes = append(f.c.Nodes, n)
	return &f.c.Nodes[len(f.c.Nodes)-1]
}

// pod adds the pod of DaemonSet key on node, its spec from the live
// template, every init container terminated and the main one running,
// each reporting the digest it was pulled by; edit changes it after.
func (f *fixture) pod(key, node string, edit func(p *corev1.Pod)) {
	ds := f.c.DaemonSets[key]
	if ds == nil {
		f.t.Fatalf("no DaemonSet %s", key)
	}
	yes := true
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + node, Namespace: ds.Namespace, UID: types.UID("pod-" + ds.Name + "-" + node),
			CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node
	for _, c := range p.Spec.InitContainers {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(f.t, c.Image),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
		})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(f.t, c.Image), Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
	if edit != nil {
		edit(&p)
	}
	f.c.Pods = append(f.c.Pods, p)
}

// imageID is what containerd's CRI reports for a pinned reference: the
// normalised repository with the digest it was pulled by.
func imageID(t *testing.T, pinned string) string {
	ref, err := imageref.Parse(pinned)
	if err != nil {
		t.Fatal(err)
	}
	return imageref.RepositoryName(ref.Repository) + "@" + ref.Digest
}

// initStatus returns p's status of the init container whose image starts
// with prefix.
func initStatus(t *testing.T, p *corev1.Pod, prefix string) *corev1.ContainerStatus {
	for i, c := range p.Spec.InitContainers {
		if strings.HasPrefix(c.Image, prefix) {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	t.Fatalf("pod %s has no init container with an image %s…", p.Name, prefix)
	return nil
}

// waiting sets cs to waiting with reason and message, not started.
func waiting(cs *corev1.ContainerStatus, reason, message string) {
	cs.ImageID = ""
	cs.Ready = false
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

// cell returns the state of the image whose name starts with prefix on
// node.
func cell(t *testing.T, rep *Report, prefix, node string) NodeImage {
	t.Helper()
	st := imageStatus(t, rep, prefix)
	for _, c := range st.OnNodes {
		if c.Node == node {
			return c
		}
	}
	t.Fatalf("image %s has no state on node %s: %+v", st.Name, node, st.OnNodes)
	return NodeImage{}
}

func imageStatus(t *testing.T, rep *Report, prefix string) ImageStatus {
	t.Helper()
	var found []ImageStatus
	for _, im := range rep.Images {
		if im.Name == prefix {
			return im
		}
		if strings.HasPrefix(im.Name, prefix) {
			found = append(found, im)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d images named %s…, want 1", len(found), prefix)
	}
	return found[0]
}

// The example's images as its site registry (Harbor) serves them.
const (
	jupyter = "harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0"
	chinese = "harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0-chinese"
	gpu     = "harbor.submarine.lab.internal:5000/apache/"
	helper  = "harbor.submarine.lab.internal:5000/mirror/ghcr.io/stowage/stowage-helper"
)

func TestExpectSubmarine(t *testing.T) {
	t.Parallel()
	exp, l := submarine(t)
	var names []string
	for _, im := range exp.Images {
		names = append(names, im.Name)
	}
	// The helper image is also every DaemonSet's main container (its wait
	// mode): one image for two containers.
	want := []string{gpu + "submarine:jupyter-notebook-gpu-0.7.0", jupyter + "-chinese", jupyter, helper + ":v0.1.0"}
	if !slices.Equal(names, want) {
		t.Fatalf("images = %q, want %q", names, want)
	}
	// The chinese image is pinned to its index: the lock's children count.
	for _, im := range exp.Images {
		// The lock is keyed by the original references; the images are
		// named at the site registry: find the entry by its digest.
		i := slices.IndexFunc(l.Entries, func(e lock.Entry) bool { return e.Digest == im.Digest })
		if i < 0 {
			t.Fatalf("%s: no lock entry with digest %s", im.Name, im.Digest)
		}
		e := l.Entries[i]
		wantAccept := []string{e.Digest}
		for _, p := range e.Platforms {
			wantAccept = append(wantAccept, p.Digest)
		}
		slices.Sort(wantAccept)
		if im.Digest != e.Digest || !slices.Equal(im.Accept, wantAccept) {
			t.Errorf("%s: digest %s accept %v, want %s and %v", im.Name, im.Digest, im.Accept, e.Digest, wantAccept)
		}
	}
	var got []string
	for _, ds := range exp.DaemonSets {
		got = append(got, ds.Name)
	}
	if want := []string{"jupyter-image-puller", "jupyter-image-puller-jupyter-gpu", "jupyter-image-puller-submarine-dockerhub"}; !slices.Equal(got, want) {
		t.Errorf("DaemonSets = %v, want %v", got, want)
	}
}

// TestEvaluate covers the states of an image on a node, each from the
// Kubernetes objects a real cluster returns.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	gpuNode := map[string]string{gpuKey: "true", corev1.LabelOSStable: "linux"}
	cpuNode := map[string]string{corev1.LabelOSStable: "linux"}
	const unauthorized = `failed to pull and unpack image "harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0@sha256:89f1": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://harbor.submarine.lab.internal:5000/service/token: 401 Unauthorized`

	tests := []struct {
		name  string
		build func(f *fixture)
		check func(t *testing.T, rep *Report)
		ready bool
	}{{
		name: "all present",
		build: func(f *fixture) {
			f.node("gpu-1", gpuNode)
			f.node("cpu-1", cpuNode)
			f.pod(dsMain, "gpu-1", nil)
			f.pod(dsMain, "cpu-1", nil)
			f.pod(dsHub, "gpu-1", nil)
			f.pod(dsHub, "cpu-1", nil)
			f.pod(dsGPU, "gpu-1", nil)
		},
		ready: true,
		check: func(t *testing.T, rep *Report) {
			st := imageStatus(t, rep, gpu)
			if st.State != Success || !slices.Equal(st.Nodes, []string{"gpu-1"}) || st.Message != "present on the 1 targeted node" {
				t.Errorf("gpu image = %+v", st)
			}
			if c := cell(t, rep, gpu, "cpu-1"); c.State != NotScheduled || c.Reason != "NodeSelector" ||
				c.Message != "node lacks the nodeSelector label nvidia.com/gpu.present=true" {
				t.Errorf("gpu image on cpu-1 = %+v", c)
			}
			for _, prefix := range []string{jupyter, helper} {
				if st := imageStatus(t, rep, prefix); st.State != Success || !slices.Equal(st.Nodes, []string{"cpu-1", "gpu-1"}) {
					t.Errorf("%s = %+v", prefix, st)
				}
			}
			if c := cell(t, rep, jupyter, "cpu-1"); c.Source != "container status" || c.DaemonSet != dsMain {
				t.Errorf("jupyter on cpu-1 = %+v", c)
			}
			// Who may use each copy offline: the public notebook any pod,
			// the Docker Hub one pods presenting its Secret's credentials.
			if o := imageStatus(t, rep, jupyter).OfflineUse; o == nil || !o.AnyPod || o.Summary != "any pod" {
				t.Errorf("jupyter offline use = %+v", o)
			}
			if o := imageStatus(t, rep, chinese).OfflineUse; o == nil || o.AnyPod || len(o.Secrets) != 1 || o.Secrets[0].Secret != "submarine-dockerhub" ||
				!strings.HasPrefix(o.Summary, "pods presenting credentials equal to Secret submarine-dockerhub (submarine-dockerhub in submarine, tenant-a, tenant-b, or any Secret with the same credentials") {
				t.Errorf("chinese offline use = %+v", o)
			}
			if b, _ := json.Marshal(imageStatus(t, rep, jupyter)); !strings.Contains(string(b), `"offlineUse":{"anyPod":true,`) {
				t.Errorf("JSON of jupyter: %s", b)
			}
			if !rep.Sources.Complete || len(rep.Sources.Notes) != 0 {
				t.Errorf("sources = %+v", rep.Sources)
			}
		},
	}, {
		name: "one 401 failed",
		build: func(f *fixture) {
			f.node("gpu-1", gpuNode)
			f.pod(dsMain, "gpu-1", nil)
			f.pod(dsGPU, "gpu-1", func(p *corev1.Pod) {
				// A kubelet restarted during the back-off: the message
				// lacks the error, the event has it.
				waiting(initStatus(t, p, gpu), "ImagePullBackOff", `Back-off pulling image "harbor…"`)
				waiting(&p.Status.ContainerStatuses[0], "PodInitializing", "")
				f.c.Events = append(f.c.Events, corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: "e1", Namespace: p.Namespace},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: p.UID, FieldPath: "spec.initContainers{pull-jupyter-gpu}"},
					Reason:         "Failed", Message: "Failed to pull image: " + unauthorized, Type: corev1.EventTypeWarning,
					LastTimestamp: metav1.NewTime(now.Add(-time.Minute)),
				})
			})
		},
		check: func(t *testing.T, rep *Report) {
			c := cell(t, rep, gpu, "gpu-1")
			if c.State != Failed || c.Reason != "ImagePullBackOff" || c.Message != "Failed to pull image: "+unauthorized || c.DaemonSet != dsGPU {
				t.Errorf("gpu image on gpu-1 = %+v", c)
			}
			st := imageStatus(t, rep, gpu)
			if st.State != Failure || !strings.Contains(st.Message, "failed on 1 of 1 targeted node; gpu-1: ImagePullBackOff: ") ||
				!strings.Contains(st.Message, "401 Unauthorized") || len(st.Nodes) != 0 {
				t.Errorf("gpu image = %+v", st)
			}
			// The main container (the helper image in wait mode) is held
			// back in this DaemonSet; the image is on the node all the same
			// (its install-helper ran, and the other DaemonSet's pod).
			if c := cell(t, rep, helper, "gpu-1"); c.State != Present {
				t.Errorf("helper on gpu-1 = %+v", c)
			}
		},
	}, {
		name: "node excluded by nodeSelector and by a taint",
		build: func(f *fixture) {
			f.node("cpu-1", cpuNode)
			n := f.node("gpu-tainted", gpuNode)
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule}}
			f.node("windows-1", map[string]string{corev1.LabelOSStable: "windows", gpuKey: "true"})
			f.pod(dsMain, "cpu-1", nil)
			f.pod(dsHub, "cpu-1", nil)
		},
		ready: true,
		check: func(t *testing.T, rep *Report) {
			if c := cell(t, rep, jupyter, "gpu-tainted"); c.State != NotScheduled || c.Reason != "Taint" ||
				c.Message != "taint dedicated=training:NoSchedule not tolerated" {
				t.Errorf("jupyter on gpu-tainted = %+v", c)
			}
			if c := cell(t, rep, jupyter, "windows-1"); c.State != NotScheduled || c.Message != "node lacks the nodeSelector label kubernetes.io/os=linux" {
				t.Errorf("jupyter on windows-1 = %+v", c)
			}
			// The GPU image's only candidate nodes are excluded: nothing
			// to wait for.
			if st := imageStatus(t, rep, gpu); st.State != Success || st.Message != "no node is targeted by the DaemonSets that pull this image" {
				t.Errorf("gpu image = %+v", st)
			}
		},
	}, {
		name: "pulling",
		build: func(f *fixture) {
			f.node("cpu-1", cpuNode)
			f.pod(dsMain, "cpu-1", func(p *corev1.Pod) {
				cs := initStatus(t, p, jupyter+"@")
				waiting(cs, "PodInitializing", "")
				waiting(&p.Status.ContainerStatuses[0], "PodInitializing", "")
				f.c.Events = append(f.c.Events, corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: "e2", Namespace: p.Namespace},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", UID: p.UID, FieldPath: "spec.initContainers{" + cs.Name + "}"},
					Reason:         "Pulling", Message: `Pulling image "` + cs.Image + `"`, LastTimestamp: metav1.NewTime(now),
				})
			})
			f.pod(dsHub, "cpu-1", func(p *corev1.Pod) {
				waiting(initStatus(t, p, chinese), "PodInitializing", "")
				waiting(&p.Status.ContainerStatuses[0], "PodInitializing", "")
			})
		},
		check: func(t *testing.T, rep *Report) {
			c := cell(t, rep, jupyter, "cpu-1")
			if c.State != Pulling || c.Reason != "Pulling" || !strings.HasPrefix(c.Message, `Pulling image "`+jupyter+`@sha256:`) {
				t.Errorf("jupyter on cpu-1 = %+v", c)
			}
			if c := cell(t, rep, chinese, "cpu-1"); c.State != Pulling || c.Reason != "PodInitializing" {
				t.Errorf("chinese on cpu-1 = %+v", c)
			}
			if st := imageStatus(t, rep, jupyter); st.State != InProgress || st.Message != "present on 0 of 1 targeted node" {
				t.Errorf("jupyter = %+v", st)
			}
			if st := imageStatus(t, rep, helper); st.State != Success {
				t.Errorf("helper = %+v", st)
			}
		},
	}, {
		name: "index and child digests",
		build: func(f *fixture) {
			f.node("cpu-1", cpuNode)
			f.node("cpu-2", cpuNode)
			childOf := func(t *testing.T, prefix string) (repo, child string) {
				for _, im := range f.exp.Images {
					if strings.HasPrefix(im.Name, prefix) {
						for _, d := range im.Accept {
							if d != im.Digest {
								return im.Repository, d
							}
						}
					}
				}
				t.Fatalf("no child digest for %s", prefix)
				return "", ""
			}
			repo, child := childOf(t, chinese)
			// cpu-1: the runtime reports the platform manifest it pulled.
			f.pod(dsHub, "cpu-1", func(p *corev1.Pod) { initStatus(t, p, chinese).ImageID = repo + "@" + child })
			// cpu-2: a digest the lock does not know, under the right
			// repository, and a child digest under another repository.
			f.pod(dsHub, "cpu-2", func(p *corev1.Pod) {
				cs := initStatus(t, p, chinese)
				waiting(cs, "PodInitializing", "")
				cs.ImageID = repo + "@sha256:" + strings.Repeat("0", 64)
			})
			f.c.Nodes[1].Status.Images = []corev1.ContainerImage{{Names: []string{"docker.io/someone/else@" + child}}}
		},
		check: func(t *testing.T, rep *Report) {
			if c := cell(t, rep, chinese, "cpu-1"); c.State != Present || c.Source != "container status" {
				t.Errorf("chinese on cpu-1 = %+v", c)
			}
			if c := cell(t, rep, chinese, "cpu-2"); c.State != Pulling {
				t.Errorf("chinese on cpu-2 = %+v", c)
			}
		},
	}, {
		name: "present from the node's image list, list capped",
		build: func(f *fixture) {
			var names []string
			for _, im := range f.exp.Images {
				if im.Name == jupyter {
					names = append(names, im.Repository+"@"+im.Digest)
				}
			}
			for i := len(names); i < NodeStatusMaxImages; i++ {
				names = append(names, fmt.Sprintf("docker.io/library/filler%d@sha256:%064d", i, i))
			}
			f.node("cpu-1", cpuNode, names...)
			// No pod yet on cpu-1.
		},
		check: func(t *testing.T, rep *Report) {
			if c := cell(t, rep, jupyter, "cpu-1"); c.State != Present || c.Source != sourceNode || c.DaemonSet != "" {
				t.Errorf("jupyter on cpu-1 = %+v", c)
			}
			if c := cell(t, rep, chinese, "cpu-1"); c.State != Pulling || c.Reason != "NoPod" {
				t.Errorf("chinese on cpu-1 = %+v", c)
			}
			if rep.Sources.Complete || len(rep.Sources.Notes) != 1 ||
				!strings.Contains(rep.Sources.Notes[0], "node cpu-1 lists 50 images, the kubelet's default nodeStatusMaxImages cap (50)") {
				t.Errorf("sources = %+v", rep.Sources)
			}
		},
	}, {
		name: "events past their TTL",
		build: func(f *fixture) {
			f.node("gpu-1", gpuNode)
			f.pod(dsMain, "gpu-1", nil)
			f.pod(dsGPU, "gpu-1", func(p *corev1.Pod) {
				p.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
				waiting(initStatus(t, p, gpu), "ImagePullBackOff", `Back-off pulling image "x"`)
			})
		},
		check: func(t *testing.T, rep *Report) {
			if rep.Sources.Complete || len(rep.Sources.Notes) != 1 ||
				!strings.Contains(rep.Sources.Notes[0], "pod submarine/jupyter-image-puller-jupyter-gpu-gpu-1 on node gpu-1 is older than the API server's event TTL") {
				t.Errorf("sources = %+v", rep.Sources)
			}
		},
	}, {
		name: "DaemonSet not applied, another one of an older render",
		build: func(f *fixture) {
			f.node("gpu-1", gpuNode)
			delete(f.c.DaemonSets, dsGPU)
			live := f.c.DaemonSets[dsMain]
			live.Spec.Template.Annotations = map[string]string{imagesHashAnnotation: "sha256:older"}
			for i := range live.Spec.Template.Spec.InitContainers {
				c := &live.Spec.Template.Spec.InitContainers[i]
				if strings.HasPrefix(c.Image, jupyter+"@") {
					c.Image = jupyter + "@sha256:" + strings.Repeat("1", 64)
				}
			}
			live.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 0, NumberReady: 1, ObservedGeneration: 1}
			f.pod(dsMain, "gpu-1", nil)
			hub := f.c.DaemonSets[dsHub]
			hub.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, ObservedGeneration: 1}
			f.pod(dsHub, "gpu-1", nil)
		},
		check: func(t *testing.T, rep *Report) {
			if c := cell(t, rep, gpu, "gpu-1"); c.State != Failed || c.Reason != "NotInCluster" || c.DaemonSet != dsGPU {
				t.Errorf("gpu image on gpu-1 = %+v", c)
			}
			if c := cell(t, rep, jupyter, "gpu-1"); c.State != Pulling || c.Reason != "OldTemplate" {
				t.Errorf("jupyter on gpu-1 = %+v", c)
			}
			if c := cell(t, rep, chinese, "gpu-1"); c.State != Present {
				t.Errorf("chinese on gpu-1 = %+v", c)
			}
			want := []Rollout{
				{Namespace: "submarine", Name: "jupyter-image-puller", InCluster: true, Observed: true, Desired: 1, Ready: 1,
					Message: "the cluster's pod template pins other images than this render: apply the rendered profile; 0 of 1 pods updated"},
				{Namespace: "submarine", Name: "jupyter-image-puller-jupyter-gpu", Message: "not in the cluster: apply the rendered profile"},
				{Namespace: "submarine", Name: "jupyter-image-puller-submarine-dockerhub", InCluster: true, Observed: true, Current: true, Desired: 1, Updated: 1, Ready: 1, Available: 1},
			}
			if !slices.Equal(rep.DaemonSets, want) {
				t.Errorf("rollouts = %+v\nwant %+v", rep.DaemonSets, want)
			}
		},
	}, {
		name: "nothing applied, no node",
		build: func(f *fixture) {
			clear(f.c.DaemonSets)
		},
		check: func(t *testing.T, rep *Report) {
			for _, im := range rep.Images {
				if im.State != Success || len(im.OnNodes) != 0 {
					t.Errorf("%s = %+v", im.Name, im)
				}
			}
			if len(rep.DaemonSets) != 3 || rep.DaemonSets[0].InCluster || rep.DaemonSets[1].InCluster || rep.DaemonSets[2].InCluster {
				t.Errorf("rollouts = %+v", rep.DaemonSets)
			}
			if b, _ := json.Marshal(rep); !strings.Contains(string(b), `"nodes":[]`) {
				t.Errorf("JSON without an empty node list: %s", b)
			}
		},
	}, {
		name: "pod cannot be scheduled",
		build: func(f *fixture) {
			f.node("cpu-1", cpuNode)
			f.pod(dsMain, "cpu-1", func(p *corev1.Pod) {
				p.Spec.NodeName = ""
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"cpu-1"}}}}},
				}}}
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory.",
				}}}
			})
		},
		check: func(t *testing.T, rep *Report) {
			if c := cell(t, rep, helper, "cpu-1"); c.State != Failed || c.Reason != "Unschedulable" || c.Message != "0/1 nodes are available: 1 Insufficient memory." {
				t.Errorf("helper on cpu-1 = %+v", c)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exp, _ := submarine(t)
			f := newFixture(t, exp)
			tc.build(f)
			rep := Evaluate(exp, f.c)
			if rep.Ready != tc.ready {
				b, _ := json.MarshalIndent(rep, "", "  ")
				t.Errorf("ready = %v, want %v:\n%s", rep.Ready, tc.ready, b)
			}
			tc.check(t, rep)
		})
	}
}

// TestEvaluateOrderIndependent: the report does not depend on the order
// the API server listed the objects in.
func TestEvaluateOrderIndependent(t *testing.T) {
	t.Parallel()
	exp, _ := submarine(t)
	build := func(reverse bool) []byte {
		f := newFixture(t, exp)
		f.node("gpu-1", map[string]string{gpuKey: "true", corev1.LabelOSStable: "linux"})
		f.node("cpu-1", map[string]string{corev1.LabelOSStable: "linux"})
		f.node("cpu-2", map[string]string{corev1.LabelOSStable: "linux"})
		f.pod(dsMain, "gpu-1", nil)
		f.pod(dsMain, "cpu-1", nil)
		f.pod(dsHub, "gpu-1", nil)
		f.pod(dsHub, "cpu-1", func(p *corev1.Pod) { waiting(initStatus(t, p, chinese), "ErrImagePull", "not found") })
		f.pod(dsGPU, "gpu-1", nil)
		if reverse {
			slices.Reverse(f.c.Nodes)
			slices.Reverse(f.c.Pods)
		}
		var buf bytes.Buffer
		if err := WriteTable(&buf, Evaluate(exp, f.c)); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b := build(false), build(true)
	if !bytes.Equal(a, b) {
		t.Errorf("reports differ by input order:\n%s\n---\n%s", a, b)
	}
	var lines []string
	for _, l := range strings.Split(string(a), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	for _, want := range []string{
		"profile notebooks: 1 of 4 images present on every targeted node, 3 nodes",
		"submarine/jupyter-image-puller 0 0 0 current",
		"harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0-chinese failure 1/3 0 sha256:7811b08e2c9f failed on 1 of 3 targeted nodes; cpu-1: ErrImagePull: not found",
		"harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0 success 1/1 2 sha256:89f1f07a0b42 present on the 1 targeted node",
		"harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0-chinese cpu-1 failed submarine/jupyter-image-puller-submarine-dockerhub ErrImagePull: not found",
		"harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0 cpu-2 pulling submarine/jupyter-image-puller NoPod: no pod of the DaemonSet on this node yet",
		"IMAGE OFFLINE USE",
		"harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0 any pod",
		"offline use: " + plan.KubeletRule,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("table lacks the line %q:\n%s", want, a)
		}
	}
	if bytes.Contains(a, []byte("not scheduled")) {
		t.Errorf("the table lists not-scheduled cells one by one:\n%s", a)
	}
}

// TestExpectExamples: every container image of every example's rendered
// DaemonSets is an image of its plan, so status can judge it (render and
// plan must agree on every pinned reference).
func TestExpectExamples(t *testing.T) {
	t.Parallel()
	for _, ex := range []string{"openpai-offline", "submarine-notebooks", "gpu-platform", "gitops-flux/config"} {
		dir := filepath.Join("..", "..", "examples", ex)
		cfg, err := schema.Load(dir, schema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := lock.Read(filepath.Join(dir, lock.FileName))
		if err != nil {
			t.Fatal(err)
		}
		for _, profile := range cfg.ProfileNames() {
			objs, err := placeholderRender(t, dir, cfg, profile, l)
			if err != nil {
				t.Fatal(err)
			}
			var dss []*appsv1.DaemonSet
			containers := map[string]bool{}
			for _, o := range objs {
				if ds, ok := o.Object.(*appsv1.DaemonSet); ok {
					dss = append(dss, ds)
					for _, c := range append(ds.Spec.Template.Spec.InitContainers, ds.Spec.Template.Spec.Containers...) {
						containers[c.Image] = true
					}
					// An artifact is an image volume, not a container.
					for _, v := range ds.Spec.Template.Spec.Volumes {
						if v.Image != nil {
							containers[v.Image.Reference] = true
						}
					}
				}
			}
			p, err := plan.Build(cfg, profile, l)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := Expect(p, dss)
			if err != nil {
				t.Fatalf("%s --profile %s: %v", ex, profile, err)
			}
			if len(exp.Images) != len(containers) || len(exp.DaemonSets) != len(dss) || len(dss) == 0 {
				t.Errorf("%s --profile %s: %d images for %d distinct container images, %d DaemonSets of %d",
					ex, profile, len(exp.Images), len(containers), len(exp.DaemonSets), len(dss))
			}
			t.Logf("%s --profile %s: %d images in %d DaemonSets", ex, profile, len(exp.Images), len(dss))
			for _, im := range exp.Images {
				if !containers[im.Reference] || !slices.Contains(im.Accept, im.Digest) || im.Repository == "" {
					t.Errorf("%s: %+v", ex, im)
				}
			}
		}
	}
}

// TestEvaluateNotObserved: status cannot pass before the DaemonSet
// controller has seen what was applied. A GPU DaemonSet whose generation
// the controller has not observed targets no node of a CPU-only cluster as
// far as the objects say, yet its image is pulling (not success), the
// rollout says not observed, and the profile is not ready; once observed,
// the same cluster is ready (the image is on no targeted node, as
// placed). A DaemonSet just created (observedGeneration 0) holds the
// profile back too, though its pods look complete.
func TestEvaluateNotObserved(t *testing.T) {
	t.Parallel()
	exp, _ := submarine(t)
	cpuNode := map[string]string{corev1.LabelOSStable: "linux"}
	build := func(gen, observed int64) *Report {
		f := newFixture(t, exp)
		f.node("cpu-1", cpuNode)
		f.pod(dsMain, "cpu-1", nil)
		f.pod(dsHub, "cpu-1", nil)
		ds := f.c.DaemonSets[dsGPU]
		ds.Generation, ds.Status.ObservedGeneration = gen, observed
		return Evaluate(f.exp, f.c)
	}
	rep := build(2, 1)
	st := imageStatus(t, rep, gpu)
	want := "DaemonSet " + dsGPU + " not yet observed by its controller (status.observedGeneration behind metadata.generation); present on 0 of 0 targeted nodes so far"
	if rep.Ready || st.State != InProgress || st.Message != want {
		t.Errorf("unobserved: ready %v, gpu image %s: %s\nwant %s", rep.Ready, st.State, st.Message, want)
	}
	for _, r := range rep.DaemonSets {
		if got, want := r.Observed, r.Namespace+"/"+r.Name != dsGPU; got != want {
			t.Errorf("rollout %s/%s observed %v, want %v", r.Namespace, r.Name, got, want)
		}
		if r.Namespace+"/"+r.Name == dsGPU && !strings.Contains(r.Message, "generation 2 not yet observed by the DaemonSet controller (observed 1)") {
			t.Errorf("rollout %s message %q", dsGPU, r.Message)
		}
	}
	if st := imageStatus(t, rep, jupyter); st.State != Success {
		t.Errorf("jupyter, pulled by an observed DaemonSet: %+v", st)
	}
	rep = build(2, 2)
	if st := imageStatus(t, rep, gpu); !rep.Ready || st.State != Success || st.Message != "no node is targeted by the DaemonSets that pull this image" {
		t.Errorf("observed: ready %v, gpu image %+v", rep.Ready, st)
	}
	if rep = build(1, 0); rep.Ready {
		t.Errorf("just created (observedGeneration 0): ready")
	}
}

// placeholderRender renders profile of cfg with l through the public
// pipeline as status and vet do: placeholder passwords, the trust files
// read from dir.
func placeholderRender(t *testing.T, dir string, cfg *v1alpha1.Config, profile string, l *lock.Lock) ([]render.Object, error) {
	t.Helper()
	pw, trust, err := render.ReadNeeded(dir, cfg, profile, nil, render.Placeholders(false))
	if err != nil {
		return nil, err
	}
	return render.Render(render.Input{Config: cfg, Lock: l.Object(), Profile: profile, Passwords: pw, Trust: trust})
}
