package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/testing/kubecheck"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/schema"
)

// The fuzzers of this file run their committed seeds (testdata/fuzz/) as
// ordinary tests; `make fuzz` runs each one for a fixed time. Seeds come
// from the examples and from the field cases (cases/*.yaml of the project's
// shared notes): references, credentials and configs that broke other tools.

// FuzzContainerNames renders a pod of up to four images — one environment
// and three catalogue images, with arbitrary names and references — and
// checks the init container names: each a valid RFC 1123 label of at most
// 63 characters, distinct within the pod, never built from a digest, and the
// same on every run and whatever the order the puller lists them in.
func FuzzContainerNames(f *testing.F) {
	f.Add("jupyter", "apache/submarine:jupyter-notebook-0.7.0",
		"jupyter-chinese", "apache/submarine:jupyter-notebook-0.7.0-chinese",
		"myExtraImageIWantPulled", "ghcr.io/example-org/tool:2",
		"broker", "registry.lab.internal/team/metadata-broker@sha256:7b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9")
	f.Fuzz(func(t *testing.T, n1, r1, n2, r2, n3, r3, n4, r4 string) {
		type entry struct{ name, ref string }
		var entries []entry
		for _, e := range []entry{{n1, r1}, {n2, r2}, {n3, r3}, {n4, r4}} {
			if _, err := imageref.Parse(e.ref); err != nil {
				continue
			}
			entries = append(entries, e)
		}
		if len(entries) == 0 || strings.TrimSpace(entries[0].name) == "" {
			return
		}
		// The first entry is an environment, the others catalogue images
		// (a key that repeats keeps its first reference, as a map would).
		cfg := &v1alpha1.Config{
			Environments: map[string]v1alpha1.Environment{entries[0].name: {Image: entries[0].ref}},
			Images:       map[string]v1alpha1.Image{},
			Profiles:     map[string]v1alpha1.Profile{},
		}
		var keys []string
		for _, e := range entries[1:] {
			if _, dup := cfg.Images[e.name]; dup {
				continue
			}
			cfg.Images[e.name] = v1alpha1.Image{Reference: e.ref}
			keys = append(keys, e.name)
		}
		profile := func(keys []string) v1alpha1.Profile {
			return v1alpha1.Profile{
				Namespace: "default", Secrets: v1alpha1.SecretsRender,
				Helper: v1alpha1.Helper{Image: "ghcr.io/stowage/stowage-helper:v0.1.0", Pause: "registry.k8s.io/pause:3.10"},
				Pullers: []v1alpha1.Puller{{Name: "pre", Namespace: "ns",
					Environments: []string{entries[0].name}, Images: keys}},
			}
		}
		cfg.Profiles["p"] = profile(keys)
		names := podNames(t, cfg)
		if again := podNames(t, cfg); !slices.Equal(names, again) {
			t.Fatalf("names differ between runs: %q, then %q", names, again)
		}
		cfg.Profiles["p"] = profile(reversed(keys))
		if rev := podNames(t, cfg); !slices.Equal(names, rev) {
			t.Fatalf("names depend on the puller's order: %q, reversed %q", names, rev)
		}

		// containerNames itself, on items sharing one pod.
		var items []*item
		for _, e := range entries {
			ref, _ := imageref.Parse(e.ref)
			items = append(items, &item{name: e.name, use: &plan.Use{Ref: ref}})
		}
		checkNames(t, items, containerNames(items))
	})
}

func reversed(ss []string) []string {
	out := slices.Clone(ss)
	slices.Reverse(out)
	return out
}

// podNames renders cfg's profile "p" with a stand-in lock and returns the
// init container names of every DaemonSet, after checking them.
func podNames(t *testing.T, cfg *v1alpha1.Config) []string {
	t.Helper()
	objs, err := Render(Input{Config: cfg, Profile: "p", Lock: standinLock(t, cfg, "p")})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var names []string
	for _, o := range objs {
		ds, ok := o.Object.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		if err := kubecheck.CheckObject(ds); err != nil {
			t.Fatalf("DaemonSet %s: %v", o.Name, err)
		}
		seen := map[string]bool{}
		for _, c := range append(slices.Clone(ds.Spec.Template.Spec.InitContainers), ds.Spec.Template.Spec.Containers...) {
			checkName(t, c.Name, c.Image)
			if seen[c.Name] {
				t.Fatalf("DaemonSet %s: container name %q twice", o.Name, c.Name)
			}
			seen[c.Name] = true
			names = append(names, c.Name+"="+c.Image)
		}
	}
	return names
}

// checkNames checks containerNames' result for items: one valid name each,
// distinct.
func checkNames(t *testing.T, items []*item, names []string) {
	t.Helper()
	if len(names) != len(items) {
		t.Fatalf("%d names for %d items", len(names), len(items))
	}
	seen := map[string]int{}
	for i, n := range names {
		checkName(t, n, items[i].use.Ref.Written)
		if j, dup := seen[n]; dup {
			t.Fatalf("items %d (%q, %s) and %d (%q, %s) share the name %q",
				j, items[j].name, items[j].use.Ref.Written, i, items[i].name, items[i].use.Ref.Written, n)
		}
		seen[n] = i
	}
}

func checkName(t *testing.T, name, image string) {
	t.Helper()
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		t.Fatalf("container name %q (image %s) is not a DNS-1123 label: %s", name, image, strings.Join(msgs, "; "))
	}
	if len(name) > maxLabel {
		t.Fatalf("container name %q is longer than %d", name, maxLabel)
	}
	// Never from the digest: no 12 hex digits of a written digest.
	if _, d, ok := strings.Cut(image, "@"); ok {
		if _, hexDigits, ok := strings.Cut(d, ":"); ok && len(hexDigits) >= 12 && strings.Contains(name, hexDigits[:12]) {
			t.Fatalf("container name %q is made from the digest of %s", name, image)
		}
	}
}

// standinLock returns a lock for every image profile renders: the stand-in
// entry of each (internal/testing/offlineimage), widened to an index holding every
// platform the config asks for, so that any platform pin resolves.
func standinLock(t *testing.T, cfg *v1alpha1.Config, profile string) *lock.Lock {
	t.Helper()
	refs, err := images(cfg, profile)
	if err != nil {
		t.Fatalf("Images: %v", err)
	}
	wanted := map[string][]string{} // lock key -> platforms asked for
	addPlatforms := func(ref string, ps []string) {
		r, err := imageref.Parse(ref)
		if err != nil {
			return
		}
		wanted[r.Key()] = append(wanted[r.Key()], ps...)
	}
	for _, im := range cfg.Images {
		addPlatforms(im.Reference, im.Platforms)
	}
	for _, env := range cfg.Environments {
		addPlatforms(env.Image, env.Platforms)
	}
	l := &lock.Lock{}
	for _, ref := range refs {
		if _, done := l.Lookup(ref.Key()); done || ref.Digest != "" {
			continue
		}
		e, err := offlineimage.Entry(ref.Written)
		if err != nil {
			t.Fatalf("stand-in for %s: %v", ref.Written, err)
		}
		if e.Name != ref.Key() {
			t.Fatalf("stand-in key %s, reference key %s", e.Name, ref.Key())
		}
		for _, p := range wanted[ref.Key()] {
			pl, err := v1.ParsePlatform(p)
			if err != nil {
				continue
			}
			if _, err := lock.DigestFor(e, p); err == nil {
				continue
			}
			if e.Kind == lock.KindManifest {
				e.Platforms = []lock.Platform{{Platform: "linux/amd64", Digest: e.Digest}}
				e.Kind, e.Size = lock.KindIndex, 0
				e.Digest = fakeDigest(e.Name, "index")
			}
			e.Platforms = append(e.Platforms, lock.Platform{Platform: pl.String(), Digest: fakeDigest(e.Name, pl.String())})
		}
		l.Put(e)
	}
	return l
}

// standinTrust returns, for each key and trusted-root file the admission
// policies of profile read (plan.Plan.AdmissionFiles), stand-in bytes of
// its kind, as the caller of render reads the files: a PEM public key for
// a key, a sigstore trusted_root.json (internal/admission's test files)
// for a trusted root. A path written both as a key and as a trusted root
// gets the key, which admission then refuses as a trusted root.
func standinTrust(t *testing.T, cfg *v1alpha1.Config, profile string) map[string][]byte {
	t.Helper()
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	files := p.AdmissionFiles(cfg)
	if len(files) == 0 {
		return nil
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "admission", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key, root := read(filepath.Join("keys", "release.pub")), read(filepath.Join("trust", "trusted_root.json"))
	keys := map[string]bool{}
	for _, v := range verifyPolicies(cfg) {
		for _, k := range v.Keys {
			keys[k] = true
		}
	}
	out := map[string][]byte{}
	for _, f := range files {
		if keys[f] {
			out[f] = key
		} else {
			out[f] = root
		}
	}
	return out
}

// verifyPolicies lists every verify policy cfg writes.
func verifyPolicies(cfg *v1alpha1.Config) []*v1alpha1.Verify {
	out := []*v1alpha1.Verify{cfg.Verify}
	for _, im := range cfg.Images {
		out = append(out, im.Verify)
	}
	for _, e := range cfg.Environments {
		out = append(out, e.Verify)
	}
	for _, pr := range cfg.Profiles {
		out = append(out, pr.Verify)
	}
	return slices.DeleteFunc(out, func(v *v1alpha1.Verify) bool { return v == nil })
}

func fakeDigest(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FuzzRender loads a config of a CUE file and a YAML file with the schema
// and, when the schema accepts it, renders every profile with a stand-in
// lock and read passwords: the render must succeed, every object must pass
// the strict Kubernetes checks (typed, and again as the YAML stream written
// out), the output directory must have one file per object, and a second
// render must give the same bytes.
func FuzzRender(f *testing.F) {
	for _, s := range exampleSeeds(f) {
		f.Add(s.cue, s.yaml, false)
	}
	f.Fuzz(func(t *testing.T, cueSrc, yamlSrc []byte, literal bool) {
		var files []schema.File
		if len(cueSrc) > 0 {
			files = append(files, schema.File{Name: "config/site.cue", Data: cueSrc})
		}
		if len(yamlSrc) > 0 {
			files = append(files, schema.File{Name: "config/site.yaml", Data: yamlSrc})
		}
		if len(files) == 0 {
			return
		}
		cfg, err := schema.LoadFiles("config", files, schema.Options{AllowLiteralPasswords: literal})
		if err != nil {
			return // the loader's fuzzer checks what refusals look like
		}
		for _, profile := range cfg.ProfileNames() {
			renderChecked(t, cfg, profile)
		}
	})
}

// renderChecked renders profile of cfg with a stand-in lock and made-up
// passwords, checks the output and returns its YAML stream.
func renderChecked(t *testing.T, cfg *v1alpha1.Config, profile string) []byte {
	t.Helper()
	sources := passwordSources(t, cfg, profile)
	pw := map[string][]byte{}
	for i, s := range sources {
		pw[s.Source] = fmt.Appendf(nil, "pw-%d:\x00\xff\"", i)
	}
	in := Input{Config: cfg, Profile: profile, Lock: standinLock(t, cfg, profile), Passwords: pw, Trust: standinTrust(t, cfg, profile)}
	objs, err := Render(in)
	if err != nil {
		t.Fatalf("profile %q: the schema accepted the config, but render fails: %v", profile, err)
	}
	for _, o := range objs {
		if err := kubecheck.CheckObject(o.Object); err != nil {
			t.Fatalf("profile %q: rendered %s %s/%s is not valid: %v", profile, o.Kind, o.Namespace, o.Name, err)
		}
	}
	stream, err := Encode(objs)
	if err != nil {
		t.Fatalf("profile %q: Encode: %v", profile, err)
	}
	if err := kubecheck.CheckAll(stream); err != nil {
		t.Fatalf("profile %q: the YAML stream fails the strict check: %v", profile, err)
	}
	files, err := Files(objs)
	if err != nil {
		t.Fatalf("profile %q: Files: %v", profile, err)
	}
	if len(files) != len(objs)+1 {
		t.Fatalf("profile %q: %d files for %d objects", profile, len(files), len(objs))
	}
	for name := range files {
		if strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
			t.Fatalf("profile %q: file name %q", profile, name)
		}
	}
	again, err := Render(in)
	if err != nil {
		t.Fatalf("profile %q: second render: %v", profile, err)
	}
	stream2, _ := Encode(again)
	if !bytes.Equal(stream, stream2) {
		t.Fatalf("profile %q: two renders differ", profile)
	}
	return stream
}

// FuzzDockerConfigJSON checks that the .dockerconfigjson of a pull Secret
// carries any username without ':' and any password bytes exactly: the JSON
// parses, its only auths key is the registry key, and "auth" decodes to
// username ":" password. The Secret built from it passes the Kubernetes
// checks. A username with ':' is refused.
func FuzzDockerConfigJSON(f *testing.F) {
	f.Add("harbor.lab.internal:5000", "robot$ci", []byte("[p~a_s.s>w=o\"r%d;\\"), "")
	f.Add(imageref.DockerHubAuthKey, "someone", []byte("hub-token"), "someone@example.org")
	f.Add("quay.example.org", "b", []byte{0, 0xff, 0xfe, '\n', ':'}, "")
	f.Add("harbor.lab.internal", "team:robot", []byte("p"), "")
	f.Add("registry.lab.internal", "ünïcødé", []byte("パスワード\u2028</script>"), "")
	f.Fuzz(func(t *testing.T, key, username string, password []byte, email string) {
		data, err := DockerConfigJSON(key, username, password, email)
		if strings.Contains(username, ":") {
			if err == nil {
				t.Fatalf("username %q with ':' accepted", username)
			}
			// The message must not depend on the password (a substring
			// test would trip over a password that is part of the key).
			_, other := DockerConfigJSON(key, username, append([]byte("other"), password...), email)
			if other == nil || other.Error() != err.Error() {
				t.Fatalf("the error depends on the password: %q, with another password %v", err, other)
			}
			return
		}
		if err != nil {
			t.Fatalf("DockerConfigJSON(%q, %q): %v", key, username, err)
		}
		var doc struct {
			Auths map[string]map[string]string `json:"auths"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, data)
		}
		if len(doc.Auths) != 1 {
			t.Fatalf("want one auths key, got %d", len(doc.Auths))
		}
		entry, ok := doc.Auths[key]
		if !ok && utf8.ValidString(key) {
			t.Fatalf("auths key %q missing: %s", key, data)
		}
		if !ok {
			for _, e := range doc.Auths {
				entry = e
			}
		}
		auth, err := base64.StdEncoding.DecodeString(entry["auth"])
		if err != nil {
			t.Fatalf("auth is not base64: %v", err)
		}
		user, pass, found := bytes.Cut(auth, []byte(":"))
		if !found || string(user) != username || !bytes.Equal(pass, password) {
			t.Fatalf("auth decodes to %q, want %q:%q", auth, username, password)
		}
		if utf8.ValidString(username) && entry["username"] != username {
			t.Fatalf("username field %q, want %q", entry["username"], username)
		}
		if p, ok := entry["password"]; ok && p != string(password) {
			t.Fatalf("password field %q, want %q", p, password)
		}
		if utf8.Valid(password) && !slices.Contains(mapKeys(entry), "password") && len(password) > 0 {
			t.Fatalf("password field missing for a UTF-8 password")
		}
		if !validRegistryKey(key) {
			return
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: "ns"},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: data},
		}
		if err := kubecheck.CheckObject(s); err != nil {
			t.Fatalf("Secret fails the Kubernetes checks: %v", err)
		}
	})
}

// validRegistryKey reports whether key is one render can pass: the Docker
// Hub key or a registry host[:port] as pkg/name accepts it.
func validRegistryKey(key string) bool {
	if key == imageref.DockerHubAuthKey {
		return true
	}
	ref, err := imageref.Parse(key + "/x:1")
	return err == nil && ref.AuthKey() == key
}

func mapKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
