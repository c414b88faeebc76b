package plan_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/schema"
)

// access renders profile of cfg (placeholder passwords) and returns the
// plan's Access over the rendered DaemonSets, keyed by the reference
// without its digest.
func access(t *testing.T, cfg *v1alpha1.Config, l *lock.Lock) map[string]plan.ImageAccess {
	t.Helper()
	p, err := plan.Build(cfg, "", l)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string][]byte{}
	for _, s := range p.PasswordSources() {
		pw[s.Source] = []byte("placeholder")
	}
	objs, err := render.Render(render.Input{Plan: p, Config: cfg, Lock: l, Passwords: pw})
	if err != nil {
		t.Fatal(err)
	}
	var dss []*appsv1.DaemonSet
	for _, o := range objs {
		if ds, ok := o.Object.(*appsv1.DaemonSet); ok {
			dss = append(dss, ds)
		}
	}
	out := map[string]plan.ImageAccess{}
	for _, a := range plan.Access(p, dss) {
		name, _, _ := strings.Cut(a.Reference, "@")
		out[name] = a
	}
	return out
}

// TestAccessSubmarine: the example's public notebook is open to any pod;
// each private one only to pods presenting its Secret's credentials; the
// helper, which every pod runs from the site registry, is pulled without
// credentials by the public pod and with each Secret by the others.
func TestAccessSubmarine(t *testing.T) {
	t.Parallel()
	dir := "../../examples/submarine-notebooks"
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	got := access(t, cfg, l)
	const harbor = "harbor.submarine.lab.internal:5000"
	tenants := []string{"submarine", "tenant-a", "tenant-b"}
	hub := plan.Credential{Secret: "submarine-dockerhub", Registry: harbor, Namespaces: tenants}
	robot := plan.Credential{Secret: "stowage-pull-harbor-submarine-lab-internal-d1c90a46", Registry: harbor, Rendered: true, Namespaces: tenants}
	for _, tc := range []struct {
		name      string
		anyPod    bool
		anonymous []string
		secrets   []plan.SecretAccess
		summary   string
	}{
		{name: harbor + "/dockerhub/apache/submarine:jupyter-notebook-0.7.0", anyPod: true,
			anonymous: []string{"submarine/jupyter-image-puller"}, secrets: []plan.SecretAccess{}, summary: "any pod"},
		{name: harbor + "/dockerhub/apache/submarine:jupyter-notebook-0.7.0-chinese", anonymous: []string{},
			secrets: []plan.SecretAccess{{PullCredential: hub, DaemonSets: []string{"submarine/jupyter-image-puller-submarine-dockerhub"}}},
			summary: "pods presenting credentials equal to Secret submarine-dockerhub (submarine-dockerhub in submarine, tenant-a, tenant-b, or any Secret with the same credentials for " + harbor + ")"},
		{name: harbor + "/apache/submarine:jupyter-notebook-gpu-0.7.0", anonymous: []string{},
			secrets: []plan.SecretAccess{{PullCredential: robot, DaemonSets: []string{"submarine/jupyter-image-puller-jupyter-gpu"}}}},
		{name: harbor + "/mirror/ghcr.io/stowage/stowage-helper:v0.1.0", anonymous: []string{"submarine/jupyter-image-puller"},
			secrets: []plan.SecretAccess{
				{PullCredential: robot, DaemonSets: []string{"submarine/jupyter-image-puller-jupyter-gpu"}},
				{PullCredential: hub, DaemonSets: []string{"submarine/jupyter-image-puller-submarine-dockerhub"}},
			}},
	} {
		a, ok := got[tc.name]
		if !ok {
			t.Errorf("%s: no access; have %v", tc.name, got)
			continue
		}
		if a.AnyPod != tc.anyPod || !reflect.DeepEqual(a.Anonymous, tc.anonymous) || !reflect.DeepEqual(a.Secrets, tc.secrets) {
			t.Errorf("%s: access = %+v\nwant anyPod %v anonymous %v secrets %+v", tc.name, a, tc.anyPod, tc.anonymous, tc.secrets)
		}
		if tc.summary != "" && a.Summary != tc.summary {
			t.Errorf("%s: summary %q\nwant %q", tc.name, a.Summary, tc.summary)
		}
	}
	if h := got[harbor+"/mirror/ghcr.io/stowage/stowage-helper:v0.1.0"]; !strings.HasPrefix(h.Summary, "any pod on the nodes of submarine/jupyter-image-puller; pods presenting credentials equal to Secret stowage-pull-") {
		t.Errorf("helper summary = %q", h.Summary)
	}
	if len(got) != 4 {
		t.Errorf("%d images, want 4: %v", len(got), got)
	}
}

// TestAccessNoSite: without a site registry a private image's Secret
// covers only its own registry, so the helper (from ghcr.io) in the
// private image's pod is pulled without credentials too.
func TestAccessNoSite(t *testing.T) {
	t.Parallel()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
environments: gpu: {image: "harbor.lab.internal:5000/team/gpu:1@sha256:` + strings.Repeat("a", 64) + `", auth: secret: "harbor-pull"}
helper: image: "ghcr.io/stowage/stowage-helper:v0.1.0@sha256:` + strings.Repeat("b", 64) + `"
profiles: lab: pullers: [{name: "notebooks", namespace: "submarine", environments: ["gpu"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := access(t, cfg, &lock.Lock{})
	if h := got["ghcr.io/stowage/stowage-helper:v0.1.0"]; !h.AnyPod || !reflect.DeepEqual(h.Anonymous, []string{"submarine/notebooks"}) {
		t.Errorf("helper access = %+v, want any pod", h)
	}
	g := got["harbor.lab.internal:5000/team/gpu:1"]
	want := []plan.SecretAccess{{PullCredential: plan.Credential{Secret: "harbor-pull", Registry: "harbor.lab.internal:5000", Namespaces: []string{"submarine"}},
		DaemonSets: []string{"submarine/notebooks"}}}
	if g.AnyPod || !reflect.DeepEqual(g.Secrets, want) {
		t.Errorf("gpu access = %+v, want only harbor-pull", g)
	}
}

// TestPulledWith is the kubelet's lookup: a Secret's credentials are used
// for the images of its registry only.
func TestPulledWith(t *testing.T) {
	t.Parallel()
	hub := &plan.Credential{Secret: "hub", Registry: "https://index.docker.io/v1/"}
	harbor := &plan.Credential{Secret: "harbor", Registry: "harbor.lab:5000"}
	for _, tc := range []struct {
		image string
		want  *plan.Credential
	}{
		{"busybox:1", hub},
		{"docker.io/library/busybox:1", hub},
		{"harbor.lab:5000/x/y:1", harbor},
		{"harbor.lab/x/y:1", nil},
		{"ghcr.io/x/y:1", nil},
	} {
		u := usesOf(t, tc.image)
		if got := plan.PulledWith([]*plan.Credential{hub, harbor}, u.PullRef()); got != tc.want {
			t.Errorf("PulledWith(%s) = %+v, want %+v", tc.image, got, tc.want)
		}
	}
}

// usesOf returns the use of image as the only environment of a puller.
func usesOf(t *testing.T, image string) *plan.Use {
	t.Helper()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
environments: e: image: "` + image + `"
profiles: lab: pullers: [{name: "p", namespace: "n", environments: ["e"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.Pullers[0].Uses[0]
}
