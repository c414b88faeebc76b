package status

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/schema"
)

// modelRef is the artifact of artifactExpected.
const modelRef = "ghcr.io/models/llama-3-8b:q4"

// artifactExpected renders a profile pre-pulling one model artifact (an
// image volume of DaemonSet serving/models) and returns what status
// expects, with the artifact's pinned reference and lock entry.
func artifactExpected(t *testing.T) (*Expected, string, lock.Entry) {
	t.Helper()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
images: model: {reference: "` + modelRef + `", artifact: true}
profiles: gpu: pullers: [{name: "models", namespace: "serving", images: ["model"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{}
	for _, ref := range []string{modelRef, "ghcr.io/stowage/stowage-helper:v0.1.0"} {
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
	e, _ := l.Lookup("ghcr.io/models/llama-3-8b:q4")
	return exp, modelRef + "@" + e.Digest, e
}

// TestArtifactStatus reads an artifact's image volume: present from the
// volume's digest in pod status (ImageVolumeWithDigest on) or from the
// node's status.images; mounted without either it is unverified, with a
// note, never present; a failed pull of the volume, reported on the
// container mounting it, fails.
func TestArtifactStatus(t *testing.T) {
	t.Parallel()
	exp, pinned, e := artifactExpected(t)
	var found bool
	for _, im := range exp.Images {
		if im.Reference == pinned {
			found = true
			if !im.Artifact {
				t.Errorf("image %s is not marked an artifact", pinned)
			}
		}
	}
	if !found {
		t.Fatalf("status does not expect the artifact %s", pinned)
	}
	const ds = "serving/models"
	withRef := func(ref string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			cs := initStatus(t, p, "ghcr.io/stowage/stowage-helper")
			// The helper's own install container comes first; the
			// artifact's init container is the one mounting pull-model.
			for i := range p.Status.InitContainerStatuses {
				if p.Status.InitContainerStatuses[i].Name == "pull-model" {
					cs = &p.Status.InitContainerStatuses[i]
				}
			}
			cs.VolumeMounts = []corev1.VolumeMountStatus{{Name: "pull-model", MountPath: render.ArtifactDir, ReadOnly: true}}
			if ref != "" {
				cs.VolumeMounts[0].VolumeStatus = &corev1.VolumeStatus{Image: &corev1.ImageVolumeStatus{ImageRef: ref}}
			}
		}
	}
	for _, tc := range []struct {
		name       string
		nodeImages []string
		edit       func(p *corev1.Pod)
		state      State
		source     string
		note       bool
	}{
		{name: "volume-status-repo-digest", edit: withRef("ghcr.io/models/llama-3-8b@" + e.Digest), state: Present, source: "volume status"},
		{name: "volume-status-bare-digest", edit: withRef(e.Digest), state: Present, source: "volume status"},
		{name: "node-status-images", nodeImages: []string{"ghcr.io/models/llama-3-8b@" + e.Digest}, edit: withRef(""), state: Present, source: "node status.images"},
		{name: "no-digest-reported", edit: withRef(""), state: Unverified, note: true},
		{name: "config-digest-is-no-proof", edit: withRef("sha256:" + strings.Repeat("4", 64)), state: Unverified, note: true},
		{name: "other-repository", edit: withRef("ghcr.io/models/other@" + e.Digest), state: Unverified, note: true},
		{name: "pull-failed", edit: func(p *corev1.Pod) {
			withRef("")(p)
			for i := range p.Status.InitContainerStatuses {
				cs := &p.Status.InitContainerStatuses[i]
				if cs.Name == "pull-model" {
					cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to pull and unpack image: 404"}}
				}
			}
		}, state: Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, exp)
			f.node("gpu-1", map[string]string{"kubernetes.io/os": "linux"}, tc.nodeImages...)
			f.pod(ds, "gpu-1", tc.edit)
			rep := Evaluate(f.exp, f.c)
			st := rep.Image(pinned)
			if st == nil {
				t.Fatalf("no status for %s", pinned)
			}
			if !st.Artifact {
				t.Error("the report does not mark the artifact")
			}
			cell := st.On("gpu-1")
			if cell == nil || cell.State != tc.state || cell.Source != tc.source {
				t.Fatalf("cell = %+v, want state %q source %q", cell, tc.state, tc.source)
			}
			var note bool
			for _, n := range rep.Sources.Notes {
				if strings.Contains(n, "artifact "+modelRef) && strings.Contains(n, "ImageVolumeWithDigest") {
					note = true
				}
			}
			if note != tc.note || rep.Sources.Complete == tc.note {
				t.Errorf("note %v complete %v, want note %v: %q", note, rep.Sources.Complete, tc.note, rep.Sources.Notes)
			}
			if want := tc.state == Present; rep.Ready != want || (st.State == Success) != want {
				t.Errorf("ready %v, summary %s (%s); want ready %v", rep.Ready, st.State, st.Message, want)
			}
			if tc.state == Failed && cell.Reason != "ErrImagePull" {
				t.Errorf("reason %q, want ErrImagePull", cell.Reason)
			}
		})
	}
}
