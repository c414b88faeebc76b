package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

const submarine = "../examples/submarine-notebooks"

func load(t *testing.T) (*v1alpha1.Config, *v1alpha1.ImageLock) {
	t.Helper()
	cfg, err := schema.Load(submarine, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := render.ReadLock(filepath.Join(submarine, v1alpha1.ImageLockFile))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, l
}

// readAndRender is the pipeline as the CLI and the function run it: what
// the profile needs read from dir (ReadNeeded with opts), then Render.
func readAndRender(cfg *v1alpha1.Config, dir string, l *v1alpha1.ImageLock, getenv func(string) (string, bool), opts ...render.ReadOption) ([]render.Object, error) {
	pw, trust, err := render.ReadNeeded(dir, cfg, "", getenv, opts...)
	if err != nil {
		return nil, err
	}
	return render.Render(render.Input{Config: cfg, Lock: l, Passwords: pw, Trust: trust})
}

// lockOf is the ImageLock of entries.
func lockOf(entries ...v1alpha1.ImageLockEntry) *v1alpha1.ImageLock {
	return &v1alpha1.ImageLock{Spec: v1alpha1.ImageLockSpec{Images: entries}}
}

// noEnv is an environment with no variable set.
func noEnv(string) (string, bool) { return "", false }

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// harborPassword is the password in the Secret of the example's Harbor
// credential, "" when there is none.
func harborPassword(t *testing.T, objs []render.Object) string {
	t.Helper()
	for _, o := range objs {
		if s, ok := o.Object.(*corev1.Secret); ok {
			if b := s.Data[corev1.DockerConfigJsonKey]; bytes.Contains(b, []byte("harbor.submarine.lab.internal:5000")) {
				return string(b)
			}
		}
	}
	return ""
}

// TestPipelineExample is `stowage render examples/submarine-notebooks`:
// the same bytes as the golden file, the Harbor password read from the
// environment.
func TestPipelineExample(t *testing.T) {
	cfg, l := load(t)
	objs, err := readAndRender(cfg, submarine, l, env(map[string]string{"SUBMARINE_HARBOR_PASSWORD": "example-harbor-robot-password", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := render.WriteStream(&got, objs); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../golden/submarine-notebooks/notebooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("Render output differs from golden/submarine-notebooks/notebooks.yaml")
	}
	if pw := harborPassword(t, objs); !strings.Contains(pw, `"password":"example-harbor-robot-password"`) {
		t.Errorf("Harbor Secret %s, want the variable's password", pw)
	}
}

// TestReadNeededPasswords: an unset variable fails naming it;
// Placeholders renders a placeholder without reading, and with check
// still refuses the unset variable; a variable the operator does not name
// in STOWAGE_ALLOW_ENV is refused by name under the CLI's rule and the
// function's (its --allow-env cannot widen the rule), and read once the
// operator names it; the function's --allow-env narrows the operator's
// list.
func TestReadNeededPasswords(t *testing.T) {
	cfg, l := load(t)
	unset := env(map[string]string{"STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"})
	_, err := readAndRender(cfg, submarine, l, unset)
	if err == nil || !strings.Contains(err.Error(), "SUBMARINE_HARBOR_PASSWORD is not set") {
		t.Errorf("unset variable: %v", err)
	}
	if _, err := readAndRender(cfg, submarine, l, unset, render.Placeholders(true)); err == nil || !strings.Contains(err.Error(), "SUBMARINE_HARBOR_PASSWORD is not set") {
		t.Errorf("unset variable, Placeholders(true): %v", err)
	}
	objs, err := readAndRender(cfg, submarine, l, unset, render.Placeholders(false))
	if err != nil {
		t.Fatal(err)
	}
	if pw := harborPassword(t, objs); !strings.Contains(pw, `"password":"placeholder"`) {
		t.Errorf("Placeholders Secret %s, want the placeholder", pw)
	}
	// Not named by the operator: refused for a config directory and for
	// the function, whatever the exec declaration's --allow-env says.
	vars := env(map[string]string{"SUBMARINE_HARBOR_PASSWORD": "pw"})
	for name, opts := range map[string][]render.ReadOption{"CLI": nil, "function": {render.FunctionRule([]string{"SUBMARINE_HARBOR_PASSWORD"})}} {
		_, err = readAndRender(cfg, submarine, l, vars, opts...)
		if err == nil || !strings.Contains(err.Error(), "SUBMARINE_HARBOR_PASSWORD may not be read (needed by environment \"jupyter-gpu\"): stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV") {
			t.Errorf("%s rule without STOWAGE_ALLOW_ENV: %v", name, err)
		}
	}
	vars = env(map[string]string{"SUBMARINE_HARBOR_PASSWORD": "pw", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"})
	objs, err = readAndRender(cfg, submarine, l, vars, render.FunctionRule([]string{"SUBMARINE_HARBOR_PASSWORD"}))
	if err != nil {
		t.Fatal(err)
	}
	if pw := harborPassword(t, objs); !strings.Contains(pw, `"password":"pw"`) {
		t.Errorf("function with --allow-env: Secret %s", pw)
	}
	if _, err := readAndRender(cfg, submarine, l, vars, render.FunctionRule([]string{"OTHER"})); err == nil || !strings.Contains(err.Error(), "SUBMARINE_HARBOR_PASSWORD") {
		t.Errorf("function whose --allow-env leaves the variable out: %v, want it refused", err)
	}
}

// TestPipelineMissingEntry: a lock without an image's entry fails naming
// it, nothing rendered.
func TestPipelineMissingEntry(t *testing.T) {
	cfg, l := load(t)
	kept := lockOf()
	for _, e := range l.Spec.Images {
		if e.Name != "docker.io/apache/submarine:jupyter-notebook-0.7.0" {
			kept.Spec.Images = append(kept.Spec.Images, e)
		}
	}
	objs, err := readAndRender(cfg, submarine, kept, noEnv, render.Placeholders(false))
	if objs != nil || err == nil || !strings.Contains(err.Error(), `docker.io/apache/submarine:jupyter-notebook-0.7.0 (used by environment "jupyter")`) {
		t.Errorf("objs %d, err %v", len(objs), err)
	}
}

// TestPipelineAdmission: a profile with a policy field renders the Kyverno
// ClusterPolicy whose image globs are the site repositories render
// writes, with the key read from the config directory, after the
// DaemonSets.
func TestPipelineAdmission(t *testing.T) {
	dir := t.TempDir()
	pem, err := os.ReadFile("../internal/admission/testdata/keys/release.pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys", "release.pub"), pem, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := `images: {app: {reference: "busybox:1.36"}}
helper: {image: "ghcr.io/stowage/stowage-helper:v0.1.0"}
site: {registry: "registry.site:5000/mirror"}
verify: {keys: [keys/release.pub]}
profiles: {edge: {namespace: prepull, policy: {kinds: [kyverno]}, pullers: [{name: pre, namespace: prepull, images: [app]}]}}
`
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := lockOf()
	for _, ref := range []string{"docker.io/library/busybox:1.36", "ghcr.io/stowage/stowage-helper:v0.1.0"} {
		l.Spec.Images = append(l.Spec.Images, v1alpha1.ImageLockEntry{Name: ref, Reference: ref, Digest: "sha256:" + strings.Repeat("a", 64), Kind: "manifest", Size: 100})
	}
	objs, err := readAndRender(cfg, dir, l, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	last := objs[len(objs)-1]
	if last.Kind != "ClusterPolicy" || last.Name != "stowage-edge" || last.FileName() != "clusterpolicy-stowage-edge.yaml" {
		t.Fatalf("last object %s %s/%s", last.Kind, last.Namespace, last.Name)
	}
	var b bytes.Buffer
	if err := render.WriteStream(&b, []render.Object{last}); err != nil {
		t.Fatal(err)
	}
	out := b.Bytes()
	for _, want := range []string{
		"- registry.site:5000/mirror/docker.io/library/busybox:*\n",
		"- registry.site:5000/mirror/docker.io/library/busybox@*\n",
		"- registry.site:5000/mirror/ghcr.io/stowage/stowage-helper:*\n",
		strings.Split(string(pem), "\n")[1],
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ClusterPolicy lacks %q:\n%s", want, out)
		}
	}
	// A key outside the directory is refused, naming the policy and the
	// field that writes the key.
	cfg.Verify.Keys = []string{"../outside.pub"}
	if _, err := readAndRender(cfg, dir, l, noEnv); err == nil || !strings.HasPrefix(err.Error(), "profiles.edge.policy: verify.keys[0]: ") {
		t.Errorf("key outside: %v", err)
	}
	// A private key, or any bytes that are not a PEM public key, is never
	// published inline: refused at its field, as lock refuses it.
	// A private key says so.
	const private = "a private key (PEM \"EC PRIVATE KEY\"), not a public key: only the public key (cosign.pub, from cosign public-key) belongs in the repository"
	for name, want := range map[string]string{
		"priv.pem":    private,
		"garbage.pub": "not a PEM public key",
		"two.pub":     private,
		"cosign.key":  "a private key (PEM \"ENCRYPTED SIGSTORE PRIVATE KEY\")",
		"extra.pub":   "not a PEM public key: more than one PEM block",
	} {
		data := map[string]string{
			"priv.pem":    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----\n",
			"garbage.pub": "hello world\n",
			"two.pub":     string(pem) + "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----\n",
			"cosign.key":  "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\neyJrZGYiOnt9fQ==\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
			"extra.pub":   string(pem) + string(pem),
		}[name]
		if err := os.WriteFile(filepath.Join(dir, "keys", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg.Verify.Keys = []string{"keys/" + name}
		_, err := readAndRender(cfg, dir, l, noEnv)
		if err == nil || !strings.Contains(err.Error(), "verify.keys[0]: key keys/"+name+": "+want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPipelineAdmissionFormat: the lock records busybox as verified by a
// Sigstore bundle: render refuses kyverno, policy-controller and crio,
// naming the image and the kind, and renders kyverno-ivpol's
// ImageValidatingPolicy; with the tag format recorded every kind renders.
func TestPipelineAdmissionFormat(t *testing.T) {
	dir := t.TempDir()
	pem, err := os.ReadFile("../internal/admission/testdata/keys/release.pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys", "release.pub"), pem, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := `images: {app: {reference: "busybox:1.36"}}
helper: {image: "ghcr.io/stowage/stowage-helper:v0.1.0"}
site: {registry: "registry.site:5000/mirror"}
verify: {keys: [keys/release.pub]}
profiles: {edge: {namespace: prepull, policy: {kinds: [kyverno]}, pullers: [{name: pre, namespace: prepull, images: [app]}]}}
`
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lockWith := func(format string) *v1alpha1.ImageLock {
		l := lockOf()
		for _, ref := range []string{"docker.io/library/busybox:1.36", "ghcr.io/stowage/stowage-helper:v0.1.0"} {
			e := v1alpha1.ImageLockEntry{Name: ref, Reference: ref, Digest: "sha256:" + strings.Repeat("a", 64), Kind: "manifest", Size: 100}
			f := v1alpha1.SignatureTag
			if strings.Contains(ref, "busybox") {
				f = format
			}
			e.VerifiedBy = &v1alpha1.ImageLockSigner{Key: "sha256:" + strings.Repeat("b", 64), Signature: "sha256:" + strings.Repeat("c", 64), Format: f}
			l.Spec.Images = append(l.Spec.Images, e)
		}
		return l
	}
	prof := cfg.Profiles["edge"]
	for _, kind := range []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO} {
		prof.Policy.Kinds = []string{kind}
		cfg.Profiles["edge"] = prof
		_, err := readAndRender(cfg, dir, lockWith(v1alpha1.SignatureBundle), noEnv)
		want := "image docker.io/library/busybox:1.36: " + kind + " cannot read its signature, which the lock records as a Sigstore bundle"
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "stowage-helper") {
			t.Errorf("%s, bundle: %v; want an error with %q", kind, err, want)
		}
		if _, err := readAndRender(cfg, dir, lockWith(v1alpha1.SignatureTag), noEnv); err != nil {
			t.Errorf("%s, tag scheme: %v", kind, err)
		}
	}
	prof.Policy.Kinds = []string{v1alpha1.AdmissionKyvernoIVPol}
	cfg.Profiles["edge"] = prof
	objs, err := readAndRender(cfg, dir, lockWith(v1alpha1.SignatureBundle), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	last := objs[len(objs)-1]
	if last.Kind != "ImageValidatingPolicy" || last.Name != "stowage-edge-top-level" || last.FileName() != "imagevalidatingpolicy-stowage-edge-top-level.yaml" {
		t.Errorf("last object %s %s/%s", last.Kind, last.Namespace, last.Name)
	}
}
