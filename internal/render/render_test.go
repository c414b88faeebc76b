package render

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/testing/kubecheck"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/schema"
)

// loadConfig loads in-memory config files given as name/content pairs,
// with the loader every user goes through.
func loadConfig(t *testing.T, pairs ...string) *v1alpha1.Config {
	t.Helper()
	var files []schema.File
	for i := 0; i+1 < len(pairs); i += 2 {
		files = append(files, schema.File{Name: pairs[i], Data: []byte(pairs[i+1])})
	}
	cfg, err := schema.LoadFiles("cfg", files, schema.Options{})
	if err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	return cfg
}

// images returns every reference the profile's plan uses, each (key,
// spelling) once, sorted by key and spelling: what a lock must cover.
func images(cfg *v1alpha1.Config, profile string) ([]imageref.Ref, error) {
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		return nil, err
	}
	var out []imageref.Ref
	for _, img := range p.Images {
		var spellings []string
		for _, u := range img.Uses {
			if !slices.Contains(spellings, u.Ref.Written) {
				spellings = append(spellings, u.Ref.Written)
				out = append(out, u.Ref)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b imageref.Ref) int {
		return cmp.Or(strings.Compare(a.Key(), b.Key()), strings.Compare(a.Written, b.Written))
	})
	return out, nil
}

// passwordSources are the password sources of profile's plan.
func passwordSources(t *testing.T, cfg *v1alpha1.Config, profile string) []creds.Source {
	t.Helper()
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		t.Fatalf("profile %q: %v", profile, err)
	}
	return p.PasswordSources()
}

// lockFor returns a lock covering every image of the profile, built from
// the stand-in entries (never hand-typed digests). References that carry
// their own digest get no entry: they need none.
func lockFor(t *testing.T, cfg *v1alpha1.Config, profile string) *lock.Lock {
	t.Helper()
	refs, err := images(cfg, profile)
	if err != nil {
		t.Fatalf("Images: %v", err)
	}
	l := &lock.Lock{}
	for _, r := range refs {
		if r.Digest != "" {
			continue
		}
		putStandIn(t, l, r.Written)
	}
	return l
}

// putStandIn adds the stand-in entry of the reference written to l.
func putStandIn(t *testing.T, l *lock.Lock, written string) lock.Entry {
	t.Helper()
	e, err := offlineimage.Entry(written)
	if err != nil {
		t.Fatalf("stand-in for %s: %v", written, err)
	}
	l.Put(e)
	return e
}

// mustRender renders and checks every object against the Kubernetes API
// types and validation.
func mustRender(t *testing.T, in Input) []Object {
	t.Helper()
	objs, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for _, o := range objs {
		if err := kubecheck.CheckObject(o.Object); err != nil {
			t.Errorf("%s %s/%s fails the Kubernetes checks: %v", o.Kind, o.Namespace, o.Name, err)
		}
	}
	return objs
}

// objectsOf returns the objects of Go type T (*appsv1.DaemonSet,
// *corev1.Secret, ...), in order.
func objectsOf[T any](objs []Object) []T {
	var out []T
	for _, o := range objs {
		if x, ok := o.Object.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func daemonSets(objs []Object) []*appsv1.DaemonSet { return objectsOf[*appsv1.DaemonSet](objs) }

func secrets(objs []Object) []*corev1.Secret { return objectsOf[*corev1.Secret](objs) }

func configMap(t *testing.T, objs []Object, name string) *corev1.ConfigMap {
	t.Helper()
	for _, o := range objs {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Name == name {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %s among %d objects", name, len(objs))
	return nil
}

// pulled returns the init containers that pull the config's images: all
// but the helper installer.
func pulled(ds *appsv1.DaemonSet) []corev1.Container {
	var out []corev1.Container
	for _, c := range ds.Spec.Template.Spec.InitContainers {
		if c.Name != "install-helper" {
			out = append(out, c)
		}
	}
	return out
}

func pullSecretNames(ds *appsv1.DaemonSet) []string {
	var out []string
	for _, r := range ds.Spec.Template.Spec.ImagePullSecrets {
		out = append(out, r.Name)
	}
	return out
}

func encode(t *testing.T, objs []Object) []byte {
	t.Helper()
	b, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const notebookProfile = `
profiles: lab: pullers: [{
	name:      "notebooks"
	namespace: "submarine"
	environments: ["notebook"]
}]
`

// TestAuth covers the credential cases at the render level: the Secrets and
// imagePullSecrets a credential becomes.
func TestAuth(t *testing.T) {
	t.Run("existing-secret", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: {
	image: "harbor.lab.internal/release/notebook:1.1.0"
	auth: secret: "harbor-pull"
}
`+notebookProfile)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
		if s := secrets(objs); len(s) != 0 {
			t.Errorf("rendered %d Secrets, want none", len(s))
		}
		ds := daemonSets(objs)
		if len(ds) != 1 || !slices.Equal(pullSecretNames(ds[0]), []string{"harbor-pull"}) {
			t.Errorf("imagePullSecrets = %v, want [harbor-pull]", pullSecretNames(ds[0]))
		}
	})

	t.Run("password-special-chars", func(t *testing.T) {
		password := "[p~a_s.s>w=o\"r%d;\\"
		cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: {
	image: "harbor.lab.internal:5000/release/notebook:1.1.0"
	auth: {username: "robot$ci", password: "env:HARBOR_PASSWORD"}
}
`+notebookProfile)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
			Passwords: map[string][]byte{"env:HARBOR_PASSWORD": []byte(password)}})
		s := secrets(objs)
		if len(s) != 1 {
			t.Fatalf("rendered %d Secrets, want 1", len(s))
		}
		if s[0].Type != corev1.SecretTypeDockerConfigJson {
			t.Errorf("type = %s", s[0].Type)
		}
		auths := decodeDockerConfig(t, s[0])
		if len(auths) != 1 {
			t.Fatalf("auths = %v, want one key", auths)
		}
		entry, ok := auths["harbor.lab.internal:5000"]
		if !ok {
			t.Fatalf("auths keys = %v, want exactly harbor.lab.internal:5000", slices.Collect(maps.Keys(auths)))
		}
		auth, err := base64.StdEncoding.DecodeString(entry.Auth)
		if err != nil {
			t.Fatal(err)
		}
		if want := "robot$ci:" + password; !bytes.Equal(auth, []byte(want)) {
			t.Errorf("auth decodes to %q, want %q", auth, want)
		}
		if entry.Username != "robot$ci" || entry.Password != password {
			t.Errorf("username/password = %q/%q", entry.Username, entry.Password)
		}
		if ds := daemonSets(objs); !slices.Equal(pullSecretNames(ds[0]), []string{s[0].Name}) {
			t.Errorf("imagePullSecrets = %v, want [%s]", pullSecretNames(ds[0]), s[0].Name)
		}
	})

	t.Run("password-non-utf8", func(t *testing.T) {
		password := []byte{'p', 0xff, 0xfe, '"'}
		cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: {
	image: "harbor.lab.internal/release/notebook:1.1.0"
	auth: {username: "robot", password: "file:secrets/harbor"}
}
`+notebookProfile)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
			Passwords: map[string][]byte{"file:secrets/harbor": password}})
		entry := decodeDockerConfig(t, secrets(objs)[0])["harbor.lab.internal"]
		auth, _ := base64.StdEncoding.DecodeString(entry.Auth)
		if want := append([]byte("robot:"), password...); !bytes.Equal(auth, want) {
			t.Errorf("auth decodes to %q, want %q", auth, want)
		}
	})

	t.Run("docker-hub-key", func(t *testing.T) {
		for _, image := range []string{"someone/notebook:1", "docker.io/someone/notebook:1", "index.docker.io/someone/notebook:1"} {
			cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: {
	image: "`+image+`"
	auth: {username: "someone", password: "env:HUB_TOKEN"}
}
`+notebookProfile)
			objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
				Passwords: map[string][]byte{"env:HUB_TOKEN": []byte("t0ken")}})
			auths := decodeDockerConfig(t, secrets(objs)[0])
			if _, ok := auths["https://index.docker.io/v1/"]; !ok || len(auths) != 1 {
				t.Errorf("%s: auths keys = %v, want exactly https://index.docker.io/v1/", image, slices.Collect(maps.Keys(auths)))
			}
		}
	})

	t.Run("two-registries-one-puller", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: {
	a: {image: "harbor.lab.internal:5000/team/a:1", auth: {username: "a", password: "env:A"}}
	b: {image: "quay.example.org/team/b:1", auth: {username: "b", password: "env:B"}}
}
profiles: lab: pullers: [{name: "notebooks", namespace: "submarine", environments: ["a", "b"]}]
`)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
			Passwords: map[string][]byte{"env:A": []byte("pa"), "env:B": []byte("pb")}})
		s := secrets(objs)
		if len(s) != 2 {
			t.Fatalf("rendered %d Secrets, want 2", len(s))
		}
		names := []string{s[0].Name, s[1].Name}
		if names[0] == names[1] {
			t.Errorf("both Secrets are named %s", names[0])
		}
		registries := map[string]bool{}
		for _, sec := range s {
			if msgs := validation.IsDNS1123Subdomain(sec.Name); len(msgs) > 0 {
				t.Errorf("Secret name %q: %v", sec.Name, msgs)
			}
			for k := range decodeDockerConfig(t, sec) {
				registries[k] = true
			}
		}
		if !registries["harbor.lab.internal:5000"] || !registries["quay.example.org"] || len(registries) != 2 {
			t.Errorf("Secrets cover %v, want one each for harbor.lab.internal:5000 and quay.example.org", registries)
		}
		// One DaemonSet per credential, each presenting exactly its own
		// Secret.
		ds := daemonSets(objs)
		if len(ds) != 2 {
			t.Fatalf("%d DaemonSets, want 2 (one per credential)", len(ds))
		}
		var got []string
		for _, d := range ds {
			ps := pullSecretNames(d)
			if len(ps) != 1 {
				t.Errorf("DaemonSet %s: imagePullSecrets = %v, want exactly one", d.Name, ps)
				continue
			}
			got = append(got, ps[0])
		}
		slices.Sort(names)
		slices.Sort(got)
		if !slices.Equal(got, names) {
			t.Errorf("imagePullSecrets of the DaemonSets = %v, want %v", got, names)
		}
	})

	// KubeletEnsureSecretPulledImages: a tenant's pod may use an image the
	// DaemonSet pulled with credentials only when it presents matching
	// ones, so each tenant namespace gets the same Secret, name and data.
	t.Run("tenants get the same Secret", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: {
	gpu: {image: "harbor.lab.internal:5000/team/gpu:1", auth: {username: "robot", password: "env:HARBOR"}}
	hub: {image: "team/hub:1", auth: secret: "hub-pull"}
	open: image: "team/open:1"
}
profiles: lab: pullers: [{name: "notebooks", namespace: "submarine", tenants: ["tenant-b", "tenant-a", "submarine"], environments: ["gpu", "hub", "open"]}]
`)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""),
			Passwords: map[string][]byte{"env:HARBOR": []byte("s3cret")}})
		s := secrets(objs)
		var where []string
		for _, sec := range s {
			where = append(where, sec.Namespace+"/"+sec.Name)
			if !bytes.Equal(sec.Data[corev1.DockerConfigJsonKey], s[0].Data[corev1.DockerConfigJsonKey]) {
				t.Errorf("%s/%s holds other credentials than %s/%s", sec.Namespace, sec.Name, s[0].Namespace, s[0].Name)
			}
		}
		if len(s) != 3 {
			t.Fatalf("Secrets = %v, want one in each of submarine, tenant-a and tenant-b", where)
		}
		name := s[0].Name
		if want := []string{"submarine/" + name, "tenant-a/" + name, "tenant-b/" + name}; !slices.Equal(where, want) {
			t.Errorf("Secrets = %v, want %v", where, want)
		}
		if a := decodeDockerConfig(t, s[1])["harbor.lab.internal:5000"]; a.Username != "robot" || a.Password != "s3cret" {
			t.Errorf("tenant-a's Secret holds %+v", a)
		}
		// The DaemonSets stay in the puller's namespace and name the
		// Secret once; the existing Secret hub-pull is only named.
		for _, ds := range daemonSets(objs) {
			if ds.Namespace != "submarine" {
				t.Errorf("DaemonSet %s/%s outside the puller's namespace", ds.Namespace, ds.Name)
			}
		}
		pulls := map[string][]string{}
		for _, ds := range daemonSets(objs) {
			pulls[ds.Name] = pullSecretNames(ds)
		}
		want := map[string][]string{"notebooks": nil, "notebooks-hub-pull": {"hub-pull"}, classBase("notebooks", name): {name}}
		if !reflect.DeepEqual(pulls, want) {
			t.Errorf("DaemonSets and their imagePullSecrets = %v, want %v", pulls, want)
		}
	})

	t.Run("tenants in reference mode get no Secret", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: gpu: {image: "harbor.lab.internal:5000/team/gpu:1", auth: {username: "robot", password: "env:HARBOR"}}
profiles: lab: {secrets: "reference", pullers: [{name: "notebooks", namespace: "submarine", tenants: ["tenant-a"], environments: ["gpu"]}]}
`)
		l := lockFor(t, cfg, "")
		objs := mustRender(t, Input{Config: cfg, Lock: l})
		if s := secrets(objs); len(s) != 0 {
			t.Errorf("rendered %d Secrets in reference mode", len(s))
		}
		// What the user must create: the name the DaemonSets use, in the
		// puller's namespace and the tenant's.
		p, err := plan.Build(cfg, "", l)
		if err != nil {
			t.Fatal(err)
		}
		names := pullSecretNames(daemonSets(objs)[0])
		want := []ExternalSecret{{Name: names[0], Registry: "harbor.lab.internal:5000",
			Namespaces: []string{"submarine", "tenant-a"}, UsedBy: []string{`environment "gpu"`}}}
		if got := ExternalSecrets(p); len(names) != 1 || !reflect.DeepEqual(got, want) {
			t.Errorf("ExternalSecrets = %+v, want %+v", got, want)
		}
	})

	t.Run("existing Secrets in render mode are external, rendered ones are not", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: {
	gpu: {image: "harbor.lab.internal:5000/team/gpu:1", auth: {username: "robot", password: "env:HARBOR"}}
	hub: {image: "team/hub:1", auth: secret: "hub-pull"}
	hub2: {image: "team/hub2:1", auth: secret: "hub-pull"}
}
profiles: lab: pullers: [
	{name: "notebooks", namespace: "submarine", tenants: ["tenant-b", "tenant-a"], environments: ["gpu", "hub"]},
	{name: "tools", namespace: "tools", environments: ["hub2"]},
]
`)
		p, err := plan.Build(cfg, "", lockFor(t, cfg, ""))
		if err != nil {
			t.Fatal(err)
		}
		want := []ExternalSecret{{Name: "hub-pull", Registry: "https://index.docker.io/v1/",
			Namespaces: []string{"submarine", "tenant-a", "tenant-b", "tools"}, UsedBy: []string{`environment "hub"`, `environment "hub2"`}}}
		if got := ExternalSecrets(p); !reflect.DeepEqual(got, want) {
			t.Errorf("ExternalSecrets = %+v, want %+v", got, want)
		}
	})

	t.Run("reference mode renders no Secret", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: {
	image: "harbor.lab.internal/release/notebook:1.1.0"
	auth: {username: "u", password: "env:P"}
}
profiles: lab: secrets: "reference"
`+notebookProfile)
		objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
		if s := secrets(objs); len(s) != 0 {
			t.Errorf("rendered %d Secrets in reference mode", len(s))
		}
		if got := pullSecretNames(daemonSets(objs)[0]); len(got) != 1 || !strings.HasPrefix(got[0], "stowage-pull-harbor-lab-internal-") {
			t.Errorf("imagePullSecrets = %v", got)
		}
		if srcs := passwordSources(t, cfg, ""); len(srcs) != 0 {
			t.Errorf("PasswordSources in reference mode = %v, want none", srcs)
		}
	})
}

type authEntry struct {
	Username, Password, Auth string
}

func decodeDockerConfig(t *testing.T, s *corev1.Secret) map[string]authEntry {
	t.Helper()
	var doc struct {
		Auths map[string]authEntry `json:"auths"`
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &doc); err != nil {
		t.Fatalf("%s: .dockerconfigjson is not JSON: %v", s.Name, err)
	}
	return doc.Auths
}

// TestUnreadPasswordNamesItsUser: a password the caller did not read is an
// error naming the environment, never a value.
func TestUnreadPasswordNamesItsUser(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: {
	image: "harbor.lab.internal/release/notebook:1.1.0"
	auth: {username: "u", password: "env:NOT_SET_ANYWHERE"}
}
`+notebookProfile)
	_, err := Render(Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	if err == nil || !strings.Contains(err.Error(), `environment "notebook"`) || !strings.Contains(err.Error(), "env:NOT_SET_ANYWHERE") {
		t.Errorf("got %v, want an error naming the environment and the source", err)
	}
}

// TestReferences covers the accepted reference cases at the
// render level: what the rendered images, container names and lock keys
// are.
func TestReferences(t *testing.T) {
	t.Run("ref-port-no-tag", func(t *testing.T) {
		cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: image: "registry.lab.internal:5000/team/app"
`+notebookProfile)
		l := &lock.Lock{}
		e := putStandIn(t, l, "registry.lab.internal:5000/team/app")
		if e.Name != "registry.lab.internal:5000/team/app:latest" {
			t.Errorf("lock key = %s, want registry.lab.internal:5000/team/app:latest", e.Name)
		}
		for _, s := range []string{"ghcr.io/stowage/stowage-helper:v0.1.0", "registry.k8s.io/pause:3.10"} {
			putStandIn(t, l, s)
		}
		objs := mustRender(t, Input{Config: cfg, Lock: l})
		c := pulled(daemonSets(objs)[0])
		if want := "registry.lab.internal:5000/team/app@" + e.Digest; len(c) != 1 || c[0].Image != want {
			t.Errorf("pulled = %+v, want one container with image %s", c, want)
		}
	})

	t.Run("ref-tag-and-digest", func(t *testing.T) {
		const written = "busybox:1.31.1@sha256:1f3c66cf0f0e4c4da2f1d7c3f2b7d5b8e6a5c4f3e2d1c0b9a8f7e6d5c4b3a291"
		cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: image: "`+written+`"
`+notebookProfile)
		l := &lock.Lock{}
		for _, s := range []string{"ghcr.io/stowage/stowage-helper:v0.1.0", "registry.k8s.io/pause:3.10"} {
			putStandIn(t, l, s) // no entry for busybox: the written digest is the pin
		}
		objs := mustRender(t, Input{Config: cfg, Lock: l})
		c := pulled(daemonSets(objs)[0])
		if len(c) != 1 || c[0].Image != written {
			t.Errorf("pulled = %+v, want one container with image %s as written", c, written)
		}
		if got := configMap(t, objs, "notebooks-records").Data["images.list"]; got != written+"\n" {
			t.Errorf("images.list = %q", got)
		}
	})

	t.Run("ref-docker-hub-spellings", func(t *testing.T) {
		spellings := []string{
			"nvidia/k8s-device-plugin:1.0.0-beta4",
			"docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
			"index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
		}
		// One lock serves every spelling: one entry, compared after
		// normalisation.
		l := &lock.Lock{}
		e := putStandIn(t, l, spellings[0])
		for _, s := range []string{"ghcr.io/stowage/stowage-helper:v0.1.0", "registry.k8s.io/pause:3.10"} {
			putStandIn(t, l, s)
		}
		for _, s := range spellings[1:] {
			if got, _ := offlineimage.Entry(s); got.Name != e.Name || got.Digest != e.Digest {
				t.Errorf("%s: lock entry %s %s, want %s %s", s, got.Name, got.Digest, e.Name, e.Digest)
			}
		}
		// Each config keeps its own spelling in the rendered image.
		for _, s := range spellings {
			cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: image: "`+s+`"
`+notebookProfile)
			c := pulled(daemonSets(mustRender(t, Input{Config: cfg, Lock: l}))[0])
			if len(c) != 1 || c[0].Image != s+"@"+e.Digest {
				t.Errorf("pulled = %+v, want image %s@%s", c, s, e.Digest)
			}
		}
		// In one puller, the three are one init container.
		cfg := loadConfig(t, "cfg/config.cue", fmt.Sprintf(`
environments: {
	a: image: %q
	b: image: %q
	c: image: %q
}
profiles: lab: pullers: [{name: "gpu", namespace: "kube-system", environments: ["c", "b", "a"]}]
`, spellings[0], spellings[1], spellings[2]))
		refs, err := images(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for _, r := range refs {
			keys[r.Key()] = true
		}
		if len(keys) != 2 { // the device plugin and the helper
			t.Errorf("Images has %d lock keys, want 2: %v", len(keys), keys)
		}
		objs := mustRender(t, Input{Config: cfg, Lock: l})
		if c := pulled(daemonSets(objs)[0]); len(c) != 1 || !slices.Contains(spellings, strings.TrimSuffix(c[0].Image, "@"+e.Digest)) {
			t.Errorf("pulled = %+v, want one init container for the device plugin", c)
		}
		if got := strings.Count(configMap(t, objs, "gpu-records").Data["images.list"], "\n"); got != 1 {
			t.Errorf("images.list has %d lines, want 1", got)
		}
	})
}

// TestContainerNames covers name-from-camel-key, name-from-long-ref and
// name-never-from-digest: init container names are valid, short, unique
// and stable, and never carry a digest.
func TestContainerNames(t *testing.T) {
	const (
		longA  = "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name:2.0"
		longB  = "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name:2.1"
		longC  = "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name-and-more:2.0"
		digest = "registry.lab.internal/team/metadata-broker@sha256:7b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9"
	)
	cfg := loadConfig(t, "cfg/config.cue", fmt.Sprintf(`
environments: {
	myExtraImageIWantPulled: image: "ghcr.io/example-org/tool:2"
	"metadata-broker": image: %[4]q
	"a-very-long-environment-name-that-goes-on-and-on-past-the-limit-1": image: "ghcr.io/example-org/one:1"
	"a-very-long-environment-name-that-goes-on-and-on-past-the-limit-2": image: "ghcr.io/example-org/two:1"
}
images: {
	// Catalogue keys that are references themselves.
	%[1]q: reference: %[1]q
	%[2]q: reference: %[2]q
	%[3]q: reference: %[3]q
	%[4]q: reference: %[4]q
}
profiles: lab: pullers: [{
	name: "tools", namespace: "tools"
	environments: ["myExtraImageIWantPulled", "metadata-broker",
		"a-very-long-environment-name-that-goes-on-and-on-past-the-limit-1",
		"a-very-long-environment-name-that-goes-on-and-on-past-the-limit-2"]
	images: [%[1]q, %[2]q, %[3]q, %[4]q]
}]
`, longA, longB, longC, digest))
	l := lockFor(t, cfg, "")
	first := mustRender(t, Input{Config: cfg, Lock: l})
	containers := pulled(daemonSets(first)[0])
	names := map[string]string{} // name -> image
	for _, c := range containers {
		if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
			t.Errorf("container name %q: %v", c.Name, msgs)
		}
		if strings.Contains(c.Name, "7b868470") {
			t.Errorf("container name %q carries the digest", c.Name)
		}
		if prev, dup := names[c.Name]; dup {
			t.Errorf("container name %q used for %s and %s", c.Name, prev, c.Image)
		}
		names[c.Name] = c.Image
	}
	// The two spellings of the metadata broker are one reference: seven
	// distinct images.
	if len(containers) != 7 {
		t.Errorf("%d pulled containers, want 7: %v", len(containers), names)
	}
	if _, ok := names["pull-my-extra-image-i-want-pulled"]; !ok {
		t.Errorf("names = %v, want pull-my-extra-image-i-want-pulled for the camelCase key", slices.Collect(maps.Keys(names)))
	}
	for n, image := range names {
		if strings.Contains(image, "metadata-broker") && !strings.Contains(n, "metadata-broker") {
			t.Errorf("the metadata broker's container is %q, want a name from its environment or repository", n)
		}
		if strings.Contains(image, "my-plugin") && !strings.Contains(n, "my-plugin") {
			t.Errorf("long reference %s got %q, want a name from its repository", image, n)
		}
	}
	// Stable across runs (and not dependent on the digests).
	for range 3 {
		again := pulled(daemonSets(mustRender(t, Input{Config: cfg, Lock: l}))[0])
		for i := range again {
			if again[i].Name != containers[i].Name {
				t.Errorf("run 2: container %d is %q, was %q", i, again[i].Name, containers[i].Name)
			}
		}
	}
}

// TestSanitize: what sanitize turns names into.
func TestSanitize(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"myExtraImageIWantPulled", 58, "my-extra-image-i-want-pulled"},
		{"IWantHTTPServer", 58, "i-want-http-server"},
		{"v2Beta", 58, "v2-beta"},
		{"GPU", 58, "gpu"},
		{"jupyter-gpu", 58, "jupyter-gpu"},
		{"Jupyter_GPU.v2", 58, "jupyter-gpu-v2"},
		{"--a--b--", 58, "a-b"},
		{"abcdef", 3, "abc"},
		{"ab-cdef", 3, "ab"},
		{"", 58, "image"},
		{"___", 58, "image"},
		{"ünïcode", 58, "n-code"},
	}
	for _, tc := range tests {
		got := sanitize(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("sanitize(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
		if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 || len(got) > tc.max {
			t.Errorf("sanitize(%q, %d) = %q is not a label of at most %d: %v", tc.in, tc.max, got, tc.max, msgs)
		}
	}
}

// TestShellLessImage: no container runs a shell or any program of a
// pulled image; pulled images run the helper copied into the emptyDir.
func TestShellLessImage(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
environments: sidekick: image: "ghcr.io/example-org/sidekick:v3.0.4"
profiles: lab: pullers: [{name: "sidekick", namespace: "tools", environments: ["sidekick"]}]
`)
	objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	ds := daemonSets(objs)[0]
	spec := ds.Spec.Template.Spec
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for _, c := range all {
		for _, arg := range append(slices.Clone(c.Command), c.Args...) {
			if strings.Contains(arg, "/bin/sh") || strings.Contains(arg, "bash") {
				t.Errorf("container %s runs %v", c.Name, c.Command)
			}
		}
	}
	if spec.InitContainers[0].Name != "install-helper" || spec.InitContainers[0].Command[0] != HelperBinary {
		t.Errorf("first init container = %+v, want install-helper running %s", spec.InitContainers[0], HelperBinary)
	}
	p := pulled(ds)
	if len(p) != 1 || len(p[0].Command) == 0 || p[0].Command[0] != HelperPath {
		t.Fatalf("pulled containers = %+v, want one running %s", p, HelperPath)
	}
	if !slices.ContainsFunc(p[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == HelperDir }) {
		t.Errorf("the pulled container does not mount %s", HelperDir)
	}
	// The main container is the helper image itself, waiting for SIGTERM:
	// no image besides the helper and the pulled ones.
	if main := spec.Containers; len(main) != 1 || main[0].Name != "wait" || main[0].Image != spec.InitContainers[0].Image ||
		!slices.Equal(main[0].Command, []string{HelperBinary, "wait"}) {
		t.Errorf("main containers = %+v, want wait running %s wait from the helper image %s", main, HelperBinary, spec.InitContainers[0].Image)
	}
}

// TestPauseMainContainer: a profile that sets helper.pause (here through
// the top-level helper) gets that image, pinned, as the main container with
// its own entrypoint, and it counts in the images hash; without it the
// helper waits.
func TestPauseMainContainer(t *testing.T) {
	const body = `
environments: sidekick: image: "ghcr.io/example-org/sidekick:1.0"
profiles: lab: pullers: [{name: "sidekick", namespace: "tools", environments: ["sidekick"]}]
`
	plain := loadConfig(t, "cfg/config.cue", body)
	withPause := loadConfig(t, "cfg/config.cue", body+`helper: pause: "registry.k8s.io/pause:3.10"
`)
	if got := withPause.Profiles["lab"].Helper; got.Pause != "registry.k8s.io/pause:3.10" || got.Image != "ghcr.io/stowage/stowage-helper:v0.1.0" {
		t.Fatalf("effective helper = %+v", got)
	}
	a := daemonSets(mustRender(t, Input{Config: plain, Lock: lockFor(t, plain, "")}))[0]
	l := lockFor(t, withPause, "")
	b := daemonSets(mustRender(t, Input{Config: withPause, Lock: l}))[0]
	e, ok := l.Lookup("registry.k8s.io/pause:3.10")
	if !ok {
		t.Fatal("the lock for the profile has no pause entry")
	}
	main := b.Spec.Template.Spec.Containers
	if len(main) != 1 || main[0].Name != "pause" || main[0].Image != "registry.k8s.io/pause:3.10@"+e.Digest || len(main[0].Command) != 0 {
		t.Errorf("main containers = %+v, want pause pinned to %s with its own entrypoint", main, e.Digest)
	}
	ha, hb := a.Spec.Template.Annotations[AnnotationImagesHash], b.Spec.Template.Annotations[AnnotationImagesHash]
	if ha == "" || ha == hb {
		t.Errorf("images hash %q with pause, %q without: want two different hashes", hb, ha)
	}
}

// TestOrderIndependence: the same images, environments, pullers and files
// in another order render byte-identical output.
func TestOrderIndependence(t *testing.T) {
	envs := []string{
		`jupyter: image: "apache/submarine:jupyter-notebook-0.7.0"`,
		`"jupyter-gpu": {image: "harbor.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0", auth: {username: "robot", password: "env:P"}, nodeSelector: {"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux"}, tolerations: [{key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule"}, {key: "dedicated", operator: "Equal", value: "gpu", effect: "NoSchedule"}]}`,
		`"jupyter-chinese": {image: "apache/submarine:jupyter-notebook-0.7.0-chinese", auth: secret: "hub"}`,
		`busy: image: "busybox:1.31.1"`,
	}
	images := []string{`tool: reference: "ghcr.io/example-org/tool:2"`, `busybox: reference: "docker.io/library/busybox:1.31.1"`}
	pullers := []string{
		`{name: "notebooks", namespace: "tenant-a", environments: [%s], images: [%s]}`,
		`{name: "notebooks", namespace: "tenant-b", environments: [%s], images: [%s]}`,
		`{name: "tools", namespace: "tenant-a", environments: [%s], images: [%s], priorityClassName: "low"}`,
	}
	envNames := []string{`"jupyter"`, `"jupyter-gpu"`, `"jupyter-chinese"`, `"busy"`}
	imageNames := []string{`"tool"`, `"busybox"`}
	build := func(r *rand.Rand) []schema.File {
		shuffle := func(ss []string) []string {
			out := slices.Clone(ss)
			r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out
		}
		var ps []string
		for _, p := range shuffle(pullers) {
			ps = append(ps, fmt.Sprintf(p, strings.Join(shuffle(envNames), ", "), strings.Join(shuffle(imageNames), ", ")))
		}
		files := []schema.File{
			{Name: "cfg/environments.cue", Data: []byte("environments: {\n" + strings.Join(shuffle(envs), "\n") + "\n}\n")},
			{Name: "cfg/images.cue", Data: []byte("images: {\n" + strings.Join(shuffle(images), "\n") + "\n}\n")},
			{Name: "cfg/profiles.cue", Data: []byte("profiles: lab: pullers: [\n" + strings.Join(ps, ",\n") + "]\n")},
		}
		r.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		return files
	}
	var want []byte
	for seed := range uint64(8) {
		files := build(rand.New(rand.NewPCG(seed, 99)))
		cfg, err := schema.LoadFiles("cfg", files, schema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := encode(t, mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, ""), Passwords: map[string][]byte{"env:P": []byte("pw")}}))
		if want == nil {
			want = got
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d renders different bytes:\n%s", seed, linediff.First(want, got))
		}
	}
}

// TestMissingLockEntries: one error names every image the lock lacks and
// what uses it.
func TestMissingLockEntries(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
environments: {
	jupyter: image: "apache/submarine:jupyter-notebook-0.7.0"
	tool: image: "ghcr.io/example-org/tool:2"
	pinned: image: "busybox:1.31.1@sha256:1f3c66cf0f0e4c4da2f1d7c3f2b7d5b8e6a5c4f3e2d1c0b9a8f7e6d5c4b3a291"
}
profiles: lab: pullers: [{name: "p", namespace: "n", environments: ["jupyter", "tool", "pinned"]}]
`)
	l := &lock.Lock{}
	putStandIn(t, l, "ghcr.io/example-org/tool:2")
	_, err := Render(Input{Config: cfg, Lock: l})
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want *MissingError", err)
	}
	want := []string{
		`docker.io/apache/submarine:jupyter-notebook-0.7.0 (used by environment "jupyter")`,
		`ghcr.io/stowage/stowage-helper:v0.1.0 (used by profile "lab" helper.image)`,
	}
	if !slices.Equal(me.Images, want) {
		t.Errorf("missing = %q, want %q", me.Images, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message does not name %s:\n%v", w, err)
		}
	}
	if n := strings.Count(err.Error(), lock.FileName); n != 1 {
		t.Errorf("message names the lock %d times, want one message:\n%v", n, err)
	}
}

// TestDigestBump: changing one image's digest in the lock changes only
// what pins it — the DaemonSets that pull it (the image, the helper's
// argument and the images-hash annotation) and their pullers' records —
// and nothing else, byte for byte.
func TestDigestBump(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
environments: {
	jupyter: image: "apache/submarine:jupyter-notebook-0.7.0"
	gpu: {image: "apache/submarine:jupyter-notebook-gpu-0.7.0", nodeSelector: "nvidia.com/gpu.present": "true"}
	tool: image: "ghcr.io/example-org/tool:2"
}
profiles: lab: pullers: [
	{name: "notebooks", namespace: "tenant-a", environments: ["jupyter", "gpu"]},
	{name: "tools", namespace: "tenant-a", environments: ["tool"]},
]
`)
	l := lockFor(t, cfg, "")
	before := mustRender(t, Input{Config: cfg, Lock: l})

	bumped := &lock.Lock{Entries: slices.Clone(l.Entries)}
	e, _ := bumped.Lookup("docker.io/apache/submarine:jupyter-notebook-gpu-0.7.0")
	oldDigest := e.Digest
	next, err := offlineimage.Entry("apache/submarine:jupyter-notebook-gpu-0.7.1")
	if err != nil {
		t.Fatal(err)
	}
	e.Digest, e.Kind, e.Platforms, e.Size = next.Digest, next.Kind, next.Platforms, next.Size
	bumped.Put(e)
	after := mustRender(t, Input{Config: cfg, Lock: bumped})

	if len(before) != len(after) {
		t.Fatalf("%d objects before, %d after", len(before), len(after))
	}
	changed := map[string]bool{}
	for i := range before {
		b, a := encode(t, before[i:i+1]), encode(t, after[i:i+1])
		id := before[i].Kind + " " + before[i].Namespace + "/" + before[i].Name
		if bytes.Equal(a, b) {
			continue
		}
		changed[id] = true
		var lines []string
		bl, al := strings.Split(string(b), "\n"), strings.Split(string(a), "\n")
		if len(bl) != len(al) {
			t.Errorf("%s: %d lines before, %d after", id, len(bl), len(al))
			continue
		}
		for j := range bl {
			if bl[j] != al[j] {
				lines = append(lines, strings.TrimSpace(al[j]))
				if !strings.Contains(bl[j], oldDigest) && !strings.Contains(bl[j], AnnotationImagesHash) {
					t.Errorf("%s: line %d changed and is not about the bumped digest:\n  %s\n  %s", id, j+1, bl[j], al[j])
				}
			}
		}
		t.Logf("%s: changed lines %q", id, lines)
	}
	// The gpu environment has its own node group: its DaemonSet alone.
	want := map[string]bool{"DaemonSet tenant-a/notebooks-gpu": true, "ConfigMap tenant-a/notebooks-records": true}
	if fmt.Sprint(changed) != fmt.Sprint(want) {
		t.Errorf("changed objects = %v, want %v", changed, want)
	}
	for _, ds := range daemonSets(after) {
		if ds.Name != "notebooks-gpu" {
			continue
		}
		if b := daemonSets(before); slices.IndexFunc(b, func(x *appsv1.DaemonSet) bool {
			return x.Name == ds.Name && x.Spec.Template.Annotations[AnnotationImagesHash] != ds.Spec.Template.Annotations[AnnotationImagesHash]
		}) < 0 {
			t.Errorf("%s: images-hash annotation did not change", ds.Name)
		}
	}
}

// TestPlatformPin: a single platform pins that child digest of the index
// and places the pod on nodes of that os and architecture.
func TestPlatformPin(t *testing.T) {
	// Find an image whose stand-in is a multi-arch index.
	var image string
	for i := range 50 {
		s := fmt.Sprintf("ghcr.io/example-org/multi-%d:1", i)
		r, _ := imageref.Parse(s)
		if offlineimage.IsIndex(r.Reference()) {
			image = s
			break
		}
	}
	if image == "" {
		t.Fatal("no multi-arch stand-in among 50 names")
	}
	cfg := loadConfig(t, "cfg/config.cue", `
environments: {
	arm: {image: "`+image+`", platforms: ["linux/arm64"]}
	any: image: "`+image+`"
}
profiles: lab: pullers: [{name: "multi", namespace: "n", environments: ["arm", "any"]}]
`)
	l := lockFor(t, cfg, "")
	e, _ := l.Lookup(mustParse(t, image).Key())
	child, err := lock.DigestFor(e, "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	objs := mustRender(t, Input{Config: cfg, Lock: l})
	var sawArm, sawIndex bool
	for _, ds := range daemonSets(objs) {
		sel := ds.Spec.Template.Spec.NodeSelector
		for _, c := range pulled(ds) {
			switch c.Image {
			case image + "@" + child:
				sawArm = true
				if sel[corev1.LabelArchStable] != "arm64" || sel[corev1.LabelOSStable] != "linux" {
					t.Errorf("%s pins linux/arm64 but its node selector is %v", ds.Name, sel)
				}
			case image + "@" + e.Digest:
				sawIndex = true
				if _, ok := sel[corev1.LabelArchStable]; ok {
					t.Errorf("%s pins the index but selects an architecture: %v", ds.Name, sel)
				}
			default:
				t.Errorf("%s pulls %s", ds.Name, c.Image)
			}
		}
	}
	if !sawArm || !sawIndex {
		t.Errorf("arm64 child pinned: %v, index pinned: %v; want both", sawArm, sawIndex)
	}

	// A platform the index does not have is an error naming the image.
	cfg = loadConfig(t, "cfg/config.cue", `
environments: s390: {image: "`+image+`", platforms: ["linux/s390x"]}
profiles: lab: pullers: [{name: "multi", namespace: "n", environments: ["s390"]}]
`)
	if _, err := Render(Input{Config: cfg, Lock: l}); err == nil || !strings.Contains(err.Error(), "linux/s390x") || !strings.Contains(err.Error(), `environment "s390"`) {
		t.Errorf("got %v, want an error naming linux/s390x and the environment", err)
	}
}

func mustParse(t *testing.T, s string) imageref.Ref {
	t.Helper()
	r, err := imageref.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMinimalJobSubmission: the OpenPAI ConfigMap's services.list is the
// prerequisite closure of job submission and the web portal in OpenPAI
// v1.5.0 plus pylon, the entrypoint — the declared_closure and add_implicit
// of minimal_closure in services-v1.5.0.yaml (the shared OpenPAI facts).
func TestMinimalJobSubmission(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
profiles: pai: {
	namespace: "pai-system"
	openpai: {
		version: "v1.5.0"
		features: ["job-submission", "webportal"]
		registry: {domain: "registry.lab.internal:5000", namespace: "openpai", tag: "v1.5.0"}
	}
	pullers: [{name: "pai", namespace: "pai-prepull", openpai: ["master", "worker"]}]
}
`)
	objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	cm := configMap(t, objs, OpenPAIConfigMap)
	declaredClosure := []string{"cluster-configuration", "internal-storage", "postgresql", "frameworkcontroller",
		"database-controller", "device-plugin", "hivedscheduler", "log-manager", "rest-server", "openpai-runtime", "webportal"}
	want := append(slices.Clone(declaredClosure), "pylon")
	slices.Sort(want)
	if got := strings.Split(strings.TrimSuffix(cm.Data["services.list"], "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("services.list = %v, want %v", got, want)
	}
	dropped := cm.Data["dropped.list"]
	for _, s := range []string{"prometheus", "grafana", "alert-manager", "node-exporter", "job-exporter", "watchdog",
		"marketplace-db", "marketplace-restserver", "marketplace-webportal", "dshuttle-master", "dshuttle-worker", "dshuttle-csi"} {
		if !slices.Contains(strings.Split(dropped, "\n"), s) {
			t.Errorf("%s is not dropped", s)
		}
	}
	if !strings.HasPrefix(cm.Data["paictl.command"], "./paictl.py service start -n ") {
		t.Errorf("paictl.command = %q", cm.Data["paictl.command"])
	}
	// Every pulled OpenPAI image is one of the kept services' images,
	// listed pinned as the DaemonSet pulls it.
	images := "\n" + cm.Data["images.master.list"] + cm.Data["images.worker.list"] + cm.Data["images.all.list"]
	for _, ds := range daemonSets(objs) {
		for _, c := range pulled(ds) {
			if !strings.Contains(c.Image, "@sha256:") || !strings.Contains(images, "\n"+c.Image+"\n") {
				t.Errorf("%s pulls %s, which no kept service uses", ds.Name, c.Image)
			}
		}
	}
	// Placement as OpenPAI runs the services: role "all" images (device
	// plugins, log-manager) on every node of the puller, with no role
	// label; master and worker images on the labelled nodes only.
	wantPlacement := map[string]struct {
		role   string
		images string
	}{
		"pai":        {"", cm.Data["images.all.list"]},
		"pai-master": {"pai-master", cm.Data["images.master.list"]},
		"pai-worker": {"pai-worker", cm.Data["images.worker.list"]},
	}
	if got := len(daemonSets(objs)); got != len(wantPlacement) {
		t.Errorf("%d DaemonSets, want %d (all nodes, master, worker)", got, len(wantPlacement))
	}
	for _, ds := range daemonSets(objs) {
		want, ok := wantPlacement[ds.Name]
		if !ok {
			t.Errorf("unexpected DaemonSet %s", ds.Name)
			continue
		}
		sel := ds.Spec.Template.Spec.NodeSelector
		for _, l := range []string{"pai-master", "pai-worker"} {
			if _, has := sel[l]; has != (l == want.role) {
				t.Errorf("%s nodeSelector %v: label %s present %v, want %v", ds.Name, sel, l, has, l == want.role)
			}
		}
		var got []string
		for _, c := range pulled(ds) {
			got = append(got, c.Image)
		}
		slices.Sort(got)
		if w := strings.Split(strings.TrimSuffix(want.images, "\n"), "\n"); !slices.Equal(got, w) {
			t.Errorf("%s pulls %v, want %v", ds.Name, got, w)
		}
	}
}

// TestPackageCache: the package cache ConfigMap holds the rows in the
// runtime's three-column format, sorted.
func TestPackageCache(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
profiles: pai: packageCache: [
	{group: "ssh", os: "ubuntu18.04", packages: ["openssh-client", "openssh-server"]},
	{group: "nfs", os: "ubuntu18.04", packages: ["nfs-common"]},
]
`)
	objs := mustRender(t, Input{Config: cfg, Lock: &lock.Lock{}})
	if len(objs) != 1 {
		t.Fatalf("%d objects, want the package cache ConfigMap only", len(objs))
	}
	got := configMap(t, objs, PackageCacheConfigMap).Data[PackageCacheKey]
	want := "# group_name, os, packages(space-gapped)\nnfs,ubuntu18.04,nfs-common\nssh,ubuntu18.04,openssh-client openssh-server\n"
	if got != want {
		t.Errorf("%s = %q, want %q", PackageCacheKey, got, want)
	}
	note := configMap(t, objs, PackageCacheConfigMap).Annotations[PackageCacheNote]
	if !strings.Contains(note, "nothing in the cluster reads this ConfigMap") || !strings.Contains(note, "stowage openpai package-cache") {
		t.Errorf("%s = %q: must say what it records and that nothing in the cluster reads it", PackageCacheNote, note)
	}
}

// TestFiles: -o output is one file per object plus a kustomization.yaml
// that lists them in order.
func TestFiles(t *testing.T) {
	cfg := loadConfig(t, "cfg/config.cue", `
environments: notebook: image: "apache/submarine:jupyter-notebook-0.7.0"
`+notebookProfile)
	objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	files, err := Files(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(objs)+1 {
		t.Errorf("%d files for %d objects", len(files), len(objs))
	}
	k := string(files["kustomization.yaml"])
	for _, o := range objs {
		if _, ok := files[o.FileName()]; !ok || !strings.Contains(k, "- "+o.FileName()+"\n") {
			t.Errorf("%s missing or not listed", o.FileName())
		}
	}
}

// TestLiteralPasswordNeverInErrors: with literal passwords allowed, a
// password the caller did not pass is reported without its value.
func TestLiteralPasswordNeverInErrors(t *testing.T) {
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
environments: notebook: {
	image: "harbor.lab.internal/release/notebook:1.1.0"
	auth: {username: "u", password: "hunter2-literal"}
}
` + notebookProfile)}}, schema.Options{AllowLiteralPasswords: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), `environment "notebook"`) {
		t.Errorf("got %v, want an error naming the environment and not the password", err)
	}
}
