package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/internal/testing/kubecheck"
)

// pods maps each DaemonSet's name to its imagePullSecrets (nil for none)
// and checks what every pod must hold whatever its credential: the helper
// copy as the first init container, and a valid name.
func pods(t *testing.T, objs []Object) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, ds := range daemonSets(objs) {
		out[ds.Name] = pullSecretNames(ds)
		if msgs := validation.IsDNS1123Label(ds.Name); len(msgs) > 0 {
			t.Errorf("DaemonSet name %q: %v", ds.Name, msgs)
		}
		if ic := ds.Spec.Template.Spec.InitContainers; len(ic) == 0 || ic[0].Name != "install-helper" {
			t.Errorf("DaemonSet %s: the first init container is not install-helper", ds.Name)
		}
	}
	stream, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	if err := kubecheck.CheckAll(stream); err != nil {
		t.Errorf("the rendered stream fails the Kubernetes checks: %v", err)
	}
	return out
}

// pulledImages lists the images a DaemonSet's pulled-image init containers name
// (the helper left out), sorted.
func pulledImages(ds *appsv1.DaemonSet) []string {
	var out []string
	for _, c := range ds.Spec.Template.Spec.InitContainers {
		if c.Name != "install-helper" {
			out = append(out, c.Image)
		}
	}
	slices.Sort(out)
	return out
}

// TestCredentialSplit: a pod pulls only images of one credential, so the
// kubelet records no credential for an image that needs none
// (KubeletEnsureSecretPulledImages lets every pod use those offline).
func TestCredentialSplit(t *testing.T) {
	t.Run("public and private with a site: two pods", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
site: registry: "site.lab.internal:5000/mirror"
environments: {
	open: image: "team/open:1"
	tools: image: "quay.io/team/tools:2"
	gpu: {image: "harbor.lab.internal:5000/team/gpu:1", auth: {username: "robot", password: "env:HARBOR"}}
}
profiles: lab: pullers: [{name: "notebooks", namespace: "submarine", environments: ["open", "gpu", "tools"]}]
`)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
			Passwords: map[string][]byte{"env:HARBOR": []byte("s3cret")}})
		s := secrets(objs)
		if len(s) != 1 {
			t.Fatalf("rendered %d Secrets, want 1", len(s))
		}
		// The Secret is for the site registry, where the node pulls from.
		if _, ok := decodeDockerConfig(t, s[0])["site.lab.internal:5000"]; !ok {
			t.Errorf("the Secret holds no credentials for the site registry")
		}
		private := classBase("notebooks", s[0].Name)
		want := map[string][]string{"notebooks": nil, private: {s[0].Name}}
		if got := pods(t, objs); !reflect.DeepEqual(got, want) {
			t.Fatalf("DaemonSets and imagePullSecrets = %v, want %v", got, want)
		}
		for _, ds := range daemonSets(objs) {
			imgs := pulledImages(ds)
			switch ds.Name {
			case "notebooks":
				if len(imgs) != 2 || !strings.Contains(imgs[0], "/team/open:1@") || !strings.Contains(imgs[1], "/team/tools:2@") {
					t.Errorf("public DaemonSet pulls %v, want the open and tools images", imgs)
				}
			default:
				if len(imgs) != 1 || !strings.HasPrefix(imgs[0], "site.lab.internal:5000/mirror/harbor.lab.internal_5000/team/gpu:1@") {
					t.Errorf("private DaemonSet pulls %v, want only the gpu image from the site", imgs)
				}
			}
		}
		// The records ConfigMap stays one per puller.
		if got := configMap(t, objs, "notebooks-records").Data["images.list"]; strings.Count(got, "\n") != 3 {
			t.Errorf("images.list = %q, want the 3 images", got)
		}
	})

	twoCredentials := func(order []string) string {
		return `
environments: {
	open: image: "team/open:1"
	hub: {image: "team/hub:1", auth: secret: "hub-pull"}
	gpu: {image: "harbor.lab.internal:5000/team/gpu:1", auth: {username: "robot", password: "env:HARBOR"}}
	gpu2: {image: "harbor.lab.internal:5000/team/gpu2:1", auth: {username: "robot", password: "env:HARBOR"}}
}
profiles: lab: pullers: [{name: "a-puller-name-that-is-long-enough-to-need-cutting", namespace: "ns", tenants: ["t"], environments: ["` +
			strings.Join(order, `", "`) + `"]}]
`
	}
	var first map[string][]string
	for _, order := range [][]string{{"open", "hub", "gpu", "gpu2"}, {"gpu2", "gpu", "hub", "open"}, {"hub", "gpu2", "open", "gpu"}} {
		t.Run("two credentials and public images: three pods, order "+strings.Join(order, ","), func(t *testing.T) {
			cfg := loadConfig(t, "cfg/config.cue", twoCredentials(order))
			objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
				Passwords: map[string][]byte{"env:HARBOR": []byte("s3cret")}})
			got := pods(t, objs)
			if len(got) != 3 {
				t.Fatalf("DaemonSets = %v, want 3", got)
			}
			secretsSeen := map[string]bool{}
			for name, ps := range got {
				if len(ps) > 1 {
					t.Errorf("DaemonSet %s presents %v, want at most one Secret", name, ps)
				}
				for _, s := range ps {
					if secretsSeen[s] {
						t.Errorf("Secret %s presented by two DaemonSets", s)
					}
					secretsSeen[s] = true
				}
			}
			if got["a-puller-name-that-is-long-enough-to-need-cutting"] != nil {
				t.Errorf("the puller's own DaemonSet presents %v, want no Secret (it pulls the public image)", got["a-puller-name-that-is-long-enough-to-need-cutting"])
			}
			if !secretsSeen["hub-pull"] || len(secretsSeen) != 2 {
				t.Errorf("Secrets presented = %v, want hub-pull and the rendered one", secretsSeen)
			}
			// Both gpu images share one credential: one pod.
			for _, ds := range daemonSets(objs) {
				if ps := pullSecretNames(ds); len(ps) == 1 && ps[0] != "hub-pull" && len(pulledImages(ds)) != 2 {
					t.Errorf("DaemonSet %s pulls %v, want both harbor images", ds.Name, pulledImages(ds))
				}
			}
			if first == nil {
				first = got
			} else if !reflect.DeepEqual(got, first) {
				t.Errorf("input order changed the DaemonSets: %v, first %v", got, first)
			}
		})
	}

	t.Run("a group of one credential keeps its name", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: gpu: {image: "harbor.lab.internal:5000/team/gpu:1", auth: secret: "harbor-pull"}
profiles: lab: pullers: [{name: "notebooks", namespace: "submarine", environments: ["gpu"]}]
`)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
		if got, want := pods(t, objs), map[string][]string{"notebooks": {"harbor-pull"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("DaemonSets = %v, want %v", got, want)
		}
	})
}

func TestClassBase(t *testing.T) {
	for _, tc := range []struct{ base, secret, want string }{
		{"p", "hub-pull", "p-hub-pull"},
		{"p", "stowage-pull-quay-io-1a2b3c4d", "p-quay-io-1a2b3c4d"},
		// The registry's leading words and the name's own 8 hex digits.
		{"p", "stowage-pull-harbor-submarine-lab-internal-d1c90a46", "p-harbor-d1c90a46"},
		{"p", "stowage-pull-harbor-lab-internal-5000-f21272a7", "p-harbor-lab-f21272a7"},
		// Not a label: leading words and a hash of the whole name.
		{"p", "registry.pull", "p-registry-pull-"},
		{"p", "a-very-long-secret-name-indeed", "p-a-very-long-"},
	} {
		got := classBase(tc.base, tc.secret)
		if strings.HasSuffix(tc.want, "-") {
			if !strings.HasPrefix(got, tc.want) || len(got) != len(tc.want)+6 || !isHex(got[len(tc.want):]) {
				t.Errorf("classBase(%q, %q) = %q, want %q plus 6 hex digits", tc.base, tc.secret, got, tc.want)
			}
		} else if got != tc.want {
			t.Errorf("classBase(%q, %q) = %q, want %q", tc.base, tc.secret, got, tc.want)
		}
	}
	long := strings.Repeat("x", 50)
	a, b := classBase(long, "stowage-pull-a-11111111"), classBase(long, "stowage-pull-a-22222222")
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Errorf("long names %q and %q: want distinct labels of at most 63", a, b)
	}
	for _, n := range []string{a, b} {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			t.Errorf("%q: %v", n, msgs)
		}
	}
}
