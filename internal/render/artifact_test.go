package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stowage/stowage/internal/plan"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

// artifactConfig pre-pulls a model artifact beside a runnable image, on a
// site registry, so the artifact's image volume names the site reference.
const artifactConfig = `
site: registry: "registry.site:5000"
images: {
	llama: {
		reference: "ghcr.io/models/llama-3-8b:q4"
		artifact:  true
	}
	server: reference: "docker.io/vllm/vllm-openai:v0.9.0"
}
profiles: gpu: pullers: [{
	name:      "models"
	namespace: "serving"
	images: ["llama", "server"]
}]
`

// TestArtifactVolume renders a catalogue image marked artifact: it is
// mounted as an image volume pinned to its digest (pullPolicy
// IfNotPresent) by an init container that runs the helper image, never
// run as a container image; it is listed in the records like any image.
// The whole stream is compared with testdata/artifact.golden.yaml (-update
// rewrites it).
func TestArtifactVolume(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", artifactConfig)
	l := lockFor(t, cfg, "")
	objs := mustRender(t, Input{Config: cfg, Lock: l})
	dss := daemonSets(objs)
	if len(dss) != 1 {
		t.Fatalf("got %d DaemonSets, want 1", len(dss))
	}
	spec := dss[0].Spec.Template.Spec
	e, _ := l.Lookup("ghcr.io/models/llama-3-8b:q4")
	want := "registry.site:5000/ghcr.io/models/llama-3-8b:q4@" + e.Digest
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Image != nil {
			if vol != nil {
				t.Fatalf("two image volumes: %s and %s", vol.Name, spec.Volumes[i].Name)
			}
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil {
		t.Fatalf("no image volume among %d volumes", len(spec.Volumes))
	}
	if vol.Name != "pull-llama" || vol.Image.Reference != want || vol.Image.PullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image volume = %s %+v, want pull-llama {Reference:%s PullPolicy:IfNotPresent}", vol.Name, *vol.Image, want)
	}
	helper := spec.InitContainers[0].Image
	var mounted bool
	for _, c := range slices2(spec.InitContainers, spec.Containers) {
		if c.Image == want {
			t.Errorf("container %s runs the artifact %s as its image", c.Name, want)
		}
		for _, m := range c.VolumeMounts {
			if m.Name != vol.Name {
				continue
			}
			mounted = true
			if c.Name != "pull-llama" || c.Image != helper || !m.ReadOnly || m.MountPath != ArtifactDir {
				t.Errorf("container %s (image %s) mounts %s at %s read-only %v; want pull-llama, the helper image %s, %s, read-only",
					c.Name, c.Image, m.Name, m.MountPath, m.ReadOnly, helper, ArtifactDir)
			}
			if got := strings.Join(c.Command, " "); got != HelperBinary+" pulled "+want {
				t.Errorf("pull-llama command = %q", got)
			}
		}
	}
	if !mounted {
		t.Error("no container mounts the artifact's image volume")
	}
	if list := configMap(t, objs, "models-records").Data["images.list"]; !strings.Contains(list, want+"\n") {
		t.Errorf("images.list lacks %s:\n%s", want, list)
	}

	got := encode(t, objs)
	golden := filepath.Join("testdata", "artifact.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantBytes, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/render -run TestArtifactVolume -update writes it)", err)
	}
	if !bytes.Equal(got, wantBytes) {
		t.Errorf("render differs from %s (-update rewrites it); got:\n%s", golden, got)
	}
}

// TestArtifactConflict refuses one puller naming the same image as an
// artifact and as a runnable image.
func TestArtifactConflict(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
images: {
	model: {reference: "ghcr.io/models/llama-3-8b:q4", artifact: true}
	same: reference: "ghcr.io/models/llama-3-8b:q4"
}
profiles: p: pullers: [{name: "m", namespace: "serving", images: ["model", "same"]}]
`)
	_, err := plan.Build(cfg, "", nil)
	want := `puller serving/m: image "model" (ghcr.io/models/llama-3-8b:q4) is an artifact and image "same" (ghcr.io/models/llama-3-8b:q4) runs the same image ghcr.io/models/llama-3-8b:q4 as a container`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
}

func slices2(a, b []corev1.Container) []corev1.Container {
	return append(append([]corev1.Container(nil), a...), b...)
}
