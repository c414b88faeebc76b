package admissiontest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/admission"
	"github.com/stowage/stowage/internal/lock"
)

// TestBinaryRenderValidates: the real stowage binary renders a config
// (a site registry, a top-level key policy, a keyless policy of one image
// with the committed trusted root) whose profile edge, with key-signed
// images only, asks for all three policy kinds and whose profile lab,
// with the keyless image, for policy-controller (Render refuses kyverno
// and crio for keyless policies), from a lock written here (no registry
// is needed); every admission object in its output decodes strictly into
// the projects' own types, passes their validation, and carries the
// config's key, identity, trusted root, the site globs and the signed
// repositories; the other objects hold none of those kinds.
func TestBinaryRenderValidates(t *testing.T) {
	dir := t.TempDir()
	key := newKey(t)
	writeFile(t, filepath.Join(dir, "keys", "release.pub"), key)
	rootJSON, err := os.ReadFile(rootFile)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "trust", "trusted_root.json"), rootJSON)
	writeFile(t, filepath.Join(dir, "stowage.yaml"), []byte(`images:
  app: {reference: "busybox:1.36"}
  model: {reference: "ghcr.io/example/model:2", verify: {identities: [{identity: release@example.org, issuer: "https://issuer.example.org"}], trustedRoot: trust/trusted_root.json}}
helper: {image: "ghcr.io/stowage/stowage-helper:v0.1.0"}
site: {registry: "registry.site:5000/mirror"}
verify: {keys: [keys/release.pub]}
profiles:
  edge:
    namespace: prepull
    policy: {kinds: [crio, policy-controller, kyverno]}
    pullers: [{name: pre, namespace: prepull, images: [app]}]
  lab:
    namespace: lab
    policy: {kinds: [policy-controller]}
    pullers: [{name: pre, namespace: lab, images: [model]}]
`))
	l := &lock.Lock{}
	for i, ref := range []string{"docker.io/library/busybox:1.36", "ghcr.io/example/model:2", "ghcr.io/stowage/stowage-helper:v0.1.0"} {
		l.Put(lock.Entry{Name: ref, Reference: ref, Digest: "sha256:" + strings.Repeat(string(rune('a'+i)), 64), Kind: "manifest", Size: 100})
	}
	writeFile(t, filepath.Join(dir, "stowage.lock.yaml"), l.Marshal())

	out := append(stowage(t, "render", dir, "--profile", "edge"), "\n---\n"...)
	out = append(out, stowage(t, "render", dir, "--profile", "lab")...)
	objs, others, err := admissionObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 6 || len(others) == 0 {
		t.Fatalf("%d admission objects and %d others, want edge's ClusterPolicy, ClusterImagePolicy and ConfigMap, lab's TrustRoot and two ClusterImagePolicies, beside the DaemonSets", len(objs), len(others))
	}
	const site = "registry.site:5000/mirror/"
	helper := admission.Image{Site: site + "ghcr.io/stowage/stowage-helper", Signed: "ghcr.io/stowage/stowage-helper"}
	for _, p := range []struct {
		profile, ns string
		kinds       []string
		groups      []group
	}{
		{"edge", "prepull", allKinds, []group{{Name: "top-level", Images: []admission.Image{
			{Site: site + "docker.io/library/busybox", Signed: "docker.io/library/busybox"}, helper,
		}, Keys: [][]byte{key}}}},
		{"lab", "lab", []string{v1alpha1.AdmissionPolicyController}, []group{
			{Name: "images-model", Images: []admission.Image{{Site: site + "ghcr.io/example/model", Signed: "ghcr.io/example/model"}},
				IDs: []v1alpha1.VerifyIdentity{{Identity: "release@example.org", Issuer: "https://issuer.example.org"}}},
			{Name: "top-level", Images: []admission.Image{helper}, Keys: [][]byte{key}},
		}},
	} {
		c, err := check(ofProfile(t, objs, p.profile))
		if err != nil {
			t.Fatal(err)
		}
		assertChecked(t, c, want{Name: "stowage-" + p.profile, Namespace: p.ns, Kinds: p.kinds, Groups: p.groups})
	}
	for _, ref := range workloadImages(t, others) {
		if !strings.HasPrefix(ref, site) {
			t.Errorf("the rendered DaemonSets name %s, outside the site", ref)
		}
	}
}
