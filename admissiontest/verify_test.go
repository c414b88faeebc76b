package admissiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/kyverno/kyverno/ext/wildcard"
	kyvernoconfig "github.com/kyverno/kyverno/pkg/config"
	kyvernoimage "github.com/kyverno/kyverno/pkg/utils/image"
	"github.com/sigstore/policy-controller/pkg/apis/glob"
	pcv1beta1 "github.com/sigstore/policy-controller/pkg/apis/policy/v1beta1"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
	ctypes "go.podman.io/image/v5/types"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/admission"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/internal/testing/testbin"
)

// stowage runs the real stowage binary with args, bounded in time, and
// returns its stdout; a non-zero exit fails t with stderr.
func stowage(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbin.Stowage(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("stowage %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// pushRandom pushes a small random OCI image to ref and returns its digest.
func pushRandom(t *testing.T, ref name.Reference) v1.Hash {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// workloadImages returns every image reference in the pod templates of the
// DaemonSets among objs (containers, init containers, image volumes),
// sorted and without repeats.
func workloadImages(t *testing.T, objs [][]byte) []string {
	t.Helper()
	var out []string
	for _, b := range objs {
		var tm struct{ Kind string }
		if err := json.Unmarshal(b, &tm); err != nil || tm.Kind != "DaemonSet" {
			continue
		}
		var ds appsv1.DaemonSet
		if err := json.Unmarshal(b, &ds); err != nil {
			t.Fatal(err)
		}
		spec := ds.Spec.Template.Spec
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			out = append(out, c.Image)
		}
		for _, v := range spec.Volumes {
			if v.Image != nil {
				out = append(out, v.Image.Reference)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// admissionMatch is what each controller's own matching selects for one
// image reference: the keys of the Kyverno rules and of the
// ClusterImagePolicies that match it.
type admissionMatch struct {
	kyvernoRules   []string
	kyvernoKeys    []string
	kyvernoKeyless []*kyvernov1.KeylessAttestor
	cips           []string
	cipKeys        []string
	cipKeyless     []*pcv1beta1.Authority
}

// match runs, for ref as a pod names it, the controllers' own matchers
// over the checked objects: Kyverno's image info (GetImageInfo with its
// default configuration, the string its engine matches) against each
// rule's imageReferences with its ext/wildcard.Match, which is all its
// engine's ImageMatches does (pkg/engine/utils, not imported here: its
// jmespath dependency's test imports no longer resolve); policy-controller's
// parsed name (name.ParseReference(...).Name(), as its validator passes
// it) against each ClusterImagePolicy's globs with its glob.Match.
func match(t *testing.T, c *checked, ref string) admissionMatch {
	t.Helper()
	var m admissionMatch
	info, err := kyvernoimage.GetImageInfo(ref, kyvernoconfig.NewDefaultConfiguration(false))
	if err != nil {
		t.Fatalf("kyverno's GetImageInfo(%s): %v", ref, err)
	}
	for _, p := range c.Kyverno {
		for _, r := range p.Spec.Rules {
			for _, iv := range r.VerifyImages {
				if !slices.ContainsFunc(iv.ImageReferences, func(p string) bool { return wildcard.Match(p, info.String()) }) {
					continue
				}
				m.kyvernoRules = append(m.kyvernoRules, r.Name)
				for _, as := range iv.Attestors {
					for _, e := range as.Entries {
						if e.Keys != nil {
							m.kyvernoKeys = append(m.kyvernoKeys, e.Keys.PublicKeys)
						}
						if e.Keyless != nil {
							m.kyvernoKeyless = append(m.kyvernoKeyless, e.Keyless)
						}
					}
				}
			}
		}
	}
	pref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatalf("policy-controller's name.ParseReference(%s): %v", ref, err)
	}
	for _, p := range c.CIPs {
		hit := false
		for _, im := range p.Spec.Images {
			ok, err := glob.Match(im.Glob, pref.Name())
			if err != nil {
				t.Fatalf("policy-controller's glob.Match(%s, %s): %v", im.Glob, pref.Name(), err)
			}
			hit = hit || ok
		}
		if !hit {
			continue
		}
		m.cips = append(m.cips, p.Name)
		for _, a := range p.Spec.Authorities {
			if a.Key != nil {
				m.cipKeys = append(m.cipKeys, a.Key.Data)
			}
			if a.Keyless != nil {
				m.cipKeyless = append(m.cipKeyless, &a)
			}
		}
	}
	return m
}

// crioAllows evaluates the CRI-O fragment with containers-image's own
// PolicyContext against ref on the registry, as CRI-O does before it
// pulls: the docker transport (plain HTTP on loopback through
// DockerInsecureSkipTLSVerify), reading cosign's signatures from the
// registry (use-sigstore-attachments, in a registries.d of the test's
// own), no auth file, no system registries.conf.
func crioAllows(t *testing.T, pol *signature.Policy, ref string) error {
	t.Helper()
	dir := t.TempDir()
	regd := filepath.Join(dir, "registries.d")
	if err := os.MkdirAll(regd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(regd, "default.yaml"), []byte("default-docker:\n  use-sigstore-attachments: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"registries.conf", "auth.json"} {
		data := ""
		if f == "auth.json" {
			data = "{}"
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sys := &ctypes.SystemContext{
		RegistriesDirPath:           regd,
		SystemRegistriesConfPath:    filepath.Join(dir, "registries.conf"),
		SystemRegistriesConfDirPath: filepath.Join(dir, "registries.conf.d"),
		AuthFilePath:                filepath.Join(dir, "auth.json"),
		DockerInsecureSkipTLSVerify: ctypes.OptionalBoolTrue,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// containers-image takes no reference with both a tag and a digest,
	// which render writes; CRI-O pulls such a one by its digest.
	if d, err := name.NewDigest(ref); err == nil {
		ref = d.Context().Name() + "@" + d.DigestStr()
	}
	iref, err := docker.ParseReference("//" + ref)
	if err != nil {
		t.Fatalf("containers-image docker.ParseReference(%s): %v", ref, err)
	}
	src, err := iref.NewImageSource(ctx, sys)
	if err != nil {
		t.Fatalf("containers-image NewImageSource(%s): %v", ref, err)
	}
	defer src.Close()
	pc, err := signature.NewPolicyContext(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Destroy()
	ok, err := pc.IsRunningImageAllowed(ctx, image.UnparsedInstance(src, nil))
	if err == nil && !ok {
		err = fmt.Errorf("refused without a reason")
	}
	return err
}

// The keyless signer of the test: the virtual sigstore vouches for this
// identity from this issuer.
const (
	testIdentity = "release@example.com"
	testIssuer   = "https://accounts.example.com"
)

// TestSiteCopyVerifiesUnderRenderedPolicy is the site's admission check
// run for real. On a docker-registry an image and the helper are signed
// with a key by the real cosign (the top-level policy), and a model image
// keyless (a Sigstore bundle from sigstore-go's virtual sigstore, a policy
// of its own with its trusted root beside the config); stowage locks them,
// mirrors them to a site prefix on another docker-registry and renders
// profile edge (the key-signed image and the helper) with all three
// policy kinds and profile lab (the keyless image and the helper) with
// policy-controller, the one kind that checks keyless bundles. Each
// reference the rendered DaemonSets name matches exactly one Kyverno rule
// and one ClusterImagePolicy of its profile by those projects' own
// matchers, and what that rule carries verifies the site copy with
// `cosign verify`, offline (no network beyond loopback): its key (--key),
// or the TrustRoot the ClusterImagePolicy names with its identity and
// issuer (--new-bundle-format, as its signatureFormat bundle reads it).
// Under the CRI-O fragment containers-image's PolicyContext admits the
// key-signed copies (the scope of the site repository accepts signatures
// for the repository cosign signed). Copies at the same site repositories
// signed with another key, or by another sigstore, match the same rules
// and fail the same verification; the source reference and a sibling
// repository at the site match no rule and no CRI-O scope.
func TestSiteCopyVerifiesUnderRenderedPolicy(t *testing.T) {
	cs := cosigntest.Lookup(t)
	src := registrytest.Start(t, registrytest.Options{})
	dst := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(src.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	modelRepo, err := name.NewRepository(src.Host+"/lib/model", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	http := []string{"--allow-http-registry", "--allow-insecure-registry"}
	key, pub := cs.KeyPair("release")
	appDigest := pushRandom(t, repo.Tag("1.0"))
	helperDigest := pushRandom(t, repo.Tag("helper"))
	for _, h := range []v1.Hash{appDigest, helperDigest} {
		cs.Must(append(append([]string{"sign", "--new-bundle-format=false", "--key", key, "--tlog-upload=false", "--use-signing-config=false", "--yes"}, http...),
			repo.Name()+"@"+h.String())...)
	}
	vs := cosigntest.VirtualSigstore(t)
	modelDigest := pushRandom(t, modelRepo.Tag("1.0"))
	cosigntest.AttachBundle(t, modelRepo, manifestDesc(t, modelRepo.Digest(modelDigest.String())), cosigntest.KeylessBundle(t, vs, testIdentity, testIssuer, modelDigest))

	dir := t.TempDir()
	pubPEM, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "keys", "release.pub"), pubPEM)
	rootPath := filepath.Join(dir, "trust", "trusted_root.json")
	writeFile(t, rootPath, cosigntest.TrustedRootJSON(t, vs))
	prefix := dst.Host + "/site"
	cfg := fmt.Sprintf(`images:
  app: {reference: %q}
  model: {reference: %q, verify: {identities: [{identity: %q, issuer: %q}], trustedRoot: trust/trusted_root.json}}
helper: {image: %q}
site: {registry: %q}
verify: {keys: [keys/release.pub]}
profiles:
  edge:
    namespace: prepull
    policy: {kinds: [kyverno, policy-controller, crio]}
    pullers: [{name: pre, namespace: prepull, images: [app]}]
  lab:
    namespace: lab
    policy: {kinds: [policy-controller]}
    pullers: [{name: pre, namespace: lab, images: [model]}]
`, repo.Tag("1.0").Name(), modelRepo.Tag("1.0").Name(), testIdentity, testIssuer, repo.Tag("helper").Name(), prefix)
	writeFile(t, filepath.Join(dir, "stowage.yaml"), []byte(cfg))
	insecure := []string{"--insecure-registry", src.Host, "--insecure-registry", dst.Host}
	stowage(t, append([]string{"lock", dir, "-q"}, insecure...)...)
	stowage(t, append([]string{"mirror", dir, "--to", prefix, "-q"}, insecure...)...)
	out := append(stowage(t, "render", dir, "--profile", "edge"), "\n---\n"...)
	out = append(out, stowage(t, "render", dir, "--profile", "lab")...)

	objs, others, err := admissionObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := check(ofProfile(t, objs, "edge"))
	if err != nil {
		t.Fatal(err)
	}
	lab, err := check(ofProfile(t, objs, "lab"))
	if err != nil {
		t.Fatal(err)
	}
	siteRepo, err := (site.Mapping{Default: prefix}).Repository(repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	siteModel, err := (site.Mapping{Default: prefix}).Repository(modelRepo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	assertChecked(t, c, want{Name: "stowage-edge", Namespace: "prepull", Kinds: allKinds, Groups: []group{
		{Name: "top-level", Images: []admission.Image{{Site: siteRepo.Name(), Signed: repo.Name()}}, Keys: [][]byte{pubPEM}},
	}})
	assertChecked(t, lab, want{Name: "stowage-lab", Namespace: "lab", Kinds: []string{v1alpha1.AdmissionPolicyController}, Root: rootPath, Groups: []group{
		{Name: "images-model", Images: []admission.Image{{Site: siteModel.Name(), Signed: modelRepo.Name()}}, IDs: []v1alpha1.VerifyIdentity{{Identity: testIdentity, Issuer: testIssuer}}},
		{Name: "top-level", Images: []admission.Image{{Site: siteRepo.Name(), Signed: repo.Name()}}, Keys: [][]byte{pubPEM}},
	}})

	refs := workloadImages(t, others)
	keyed := []string{siteRepo.Tag("1.0").Name() + "@" + appDigest.String(), siteRepo.Tag("helper").Name() + "@" + helperDigest.String()}
	modelRef := siteModel.Tag("1.0").Name() + "@" + modelDigest.String()
	wantRefs := append(slices.Clone(keyed), modelRef)
	slices.Sort(wantRefs)
	if !slices.Equal(refs, wantRefs) {
		t.Fatalf("the rendered DaemonSets name %q, want the site copies %q", refs, wantRefs)
	}
	if len(c.CRIO) != 1 {
		t.Fatalf("%d CRI-O fragments, want 1", len(c.CRIO))
	}
	crio := c.CRIO[0].Policy

	cosign := func(args ...string) error {
		stdout, stderr, err := cs.Run(append(append([]string{"verify"}, args...), http...)...)
		if err != nil {
			return fmt.Errorf("%v\n%s%s", err, stdout, stderr)
		}
		return nil
	}
	// verifyKey writes the key to a file, as an operator copies it out of
	// the policy, and runs cosign verify offline against ref.
	verifyKey := func(keyPEM, ref string) error {
		f := filepath.Join(t.TempDir(), "key.pub")
		writeFile(t, f, []byte(keyPEM))
		return cosign("--key", f, "--insecure-ignore-tlog", ref)
	}
	// verifyKeyless runs cosign verify offline against ref with the
	// trusted root file and the identity. The policies check SCTs where
	// the trusted root has CT logs, but the virtual sigstore's
	// certificates carry none: --insecure-ignore-sct, as the signature
	// tests of the main module do.
	verifyKeyless := func(root, identity, issuer, ref string) error {
		return cosign("--new-bundle-format=true", "--trusted-root", root, "--certificate-identity", identity,
			"--certificate-oidc-issuer", issuer, "--insecure-ignore-sct", "--use-signed-timestamps", ref)
	}
	matched := func(ref, rule, cip string) admissionMatch {
		t.Helper()
		m := match(t, c, ref)
		if !slices.Equal(m.kyvernoRules, []string{rule}) || !slices.Equal(m.cips, []string{cip}) {
			t.Fatalf("%s: matches Kyverno rules %q and ClusterImagePolicies %q, want %s and %s", ref, m.kyvernoRules, m.cips, rule, cip)
		}
		return m
	}
	// keylessCheck verifies ref with what lab's keyless
	// ClusterImagePolicy carries: the TrustRoot its authority names (a
	// Sigstore bundle, signatureFormat bundle, as policy-controller reads
	// it). Kyverno and CRI-O are not rendered for keyless policies.
	keylessCheck := func(ref string) error {
		t.Helper()
		m := match(t, lab, ref)
		if len(m.kyvernoRules) != 0 || !slices.Equal(m.cips, []string{"stowage-lab-images-model"}) {
			t.Fatalf("%s: matches Kyverno rules %q and ClusterImagePolicies %q, want none and stowage-lab-images-model", ref, m.kyvernoRules, m.cips)
		}
		if len(m.cipKeyless) != 1 || len(m.cipKeys) != 0 {
			t.Fatalf("%s: %d policy-controller keyless authorities, %d keys; want one keyless", ref, len(m.cipKeyless), len(m.cipKeys))
		}
		a := m.cipKeyless[0]
		tr := lab.Roots[a.Keyless.TrustRootRef]
		if tr == nil || len(a.Keyless.Identities) != 1 || a.SignatureFormat != "bundle" {
			t.Fatalf("%s: authority %+v (format %q) names TrustRoot %q, which is not rendered, or not one identity, or reads no bundle", ref, a.Keyless, a.SignatureFormat, a.Keyless.TrustRootRef)
		}
		id := a.Keyless.Identities[0]
		return verifyKeyless(trustRootFile(t, tr), id.Subject, id.Issuer, ref)
	}

	for _, ref := range keyed {
		m := matched(ref, "verify-top-level", "stowage-edge-top-level")
		if len(m.kyvernoKeys) != 1 || len(m.cipKeys) != 1 || len(m.kyvernoKeyless)+len(m.cipKeyless) != 0 {
			t.Fatalf("%s: %d Kyverno keys, %d policy-controller keys, want one each and nothing keyless", ref, len(m.kyvernoKeys), len(m.cipKeys))
		}
		if err := verifyKey(m.kyvernoKeys[0], ref); err != nil {
			t.Errorf("cosign verify %s with the Kyverno rule's key: %v", ref, err)
		}
		if err := verifyKey(m.cipKeys[0], ref); err != nil {
			t.Errorf("cosign verify %s with the ClusterImagePolicy's key: %v", ref, err)
		}
		if err := crioAllows(t, crio, ref); err != nil {
			t.Errorf("containers-image under the CRI-O fragment refuses %s: %v", ref, err)
		}
	}
	// The keyless copy, under lab's ClusterImagePolicy. The helper is
	// under lab's key policy too.
	if err := keylessCheck(modelRef); err != nil {
		t.Errorf("cosign verify %s with the ClusterImagePolicy's TrustRoot: %v", modelRef, err)
	}
	if m := match(t, lab, keyed[1]); !slices.Equal(m.cips, []string{"stowage-lab-top-level"}) || len(m.cipKeys) != 1 {
		t.Errorf("%s: lab's ClusterImagePolicies %q with %d keys, want stowage-lab-top-level with one", keyed[1], m.cips, len(m.cipKeys))
	} else if err := verifyKey(m.cipKeys[0], keyed[1]); err != nil {
		t.Errorf("cosign verify %s with lab's ClusterImagePolicy's key: %v", keyed[1], err)
	}

	// Copies at the site signed with another key or by another sigstore:
	// the same rules match, what they carry does not verify them, CRI-O
	// refuses the key-signed one.
	intruderKey, _ := cs.KeyPair("intruder")
	rogue := pushRandom(t, siteRepo.Tag("rogue"))
	rogueRef := siteRepo.Name() + "@" + rogue.String()
	cs.Must(append(append([]string{"sign", "--new-bundle-format=false", "--key", intruderKey, "--tlog-upload=false", "--use-signing-config=false", "--yes"}, http...), rogueRef)...)
	m := matched(rogueRef, "verify-top-level", "stowage-edge-top-level")
	if err := verifyKey(m.kyvernoKeys[0], rogueRef); err == nil {
		t.Errorf("cosign verify accepted %s, signed with another key, under the Kyverno rule's key", rogueRef)
	}
	if err := verifyKey(m.cipKeys[0], rogueRef); err == nil {
		t.Errorf("cosign verify accepted %s, signed with another key, under the ClusterImagePolicy's key", rogueRef)
	}
	if err := crioAllows(t, crio, rogueRef); err == nil {
		t.Errorf("containers-image under the CRI-O fragment admits %s, signed with another key", rogueRef)
	}
	stranger := cosigntest.VirtualSigstore(t)
	rogueModel := pushRandom(t, siteModel.Tag("rogue"))
	cosigntest.AttachBundle(t, siteModel, manifestDesc(t, siteModel.Digest(rogueModel.String())), cosigntest.KeylessBundle(t, stranger, testIdentity, testIssuer, rogueModel))
	rogueModelRef := siteModel.Name() + "@" + rogueModel.String()
	if err := keylessCheck(rogueModelRef); err == nil {
		t.Errorf("cosign verify accepted %s, signed by another sigstore, under the ClusterImagePolicy's TrustRoot", rogueModelRef)
	}

	// Outside the site prefix: the source copy and a sibling repository
	// at the site match no Kyverno rule and no ClusterImagePolicy, and no
	// scope of the CRI-O fragment (by containers-image's own identity and
	// namespaces of the reference: its default applies); a repository
	// below the site repository matches no rule either (CRI-O scopes are
	// namespaces: it falls under the site repository's requirement).
	sibling, err := name.NewRepository(siteRepo.Name()+"-other", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	outside := []string{repo.Name() + "@" + appDigest.String(), modelRepo.Name() + "@" + modelDigest.String(), sibling.Name() + "@" + appDigest.String()}
	for _, ref := range append(outside, siteRepo.Name()+"/sub:1.0") {
		for _, c := range []*checked{c, lab} {
			if m := match(t, c, ref); len(m.kyvernoRules)+len(m.cips) != 0 {
				t.Errorf("%s, outside the site repositories, matches Kyverno rules %q and ClusterImagePolicies %q", ref, m.kyvernoRules, m.cips)
			}
		}
	}
	for _, ref := range outside {
		iref, err := docker.ParseReference("//" + ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, scope := range append([]string{iref.PolicyConfigurationIdentity()}, iref.PolicyConfigurationNamespaces()...) {
			if _, ok := crio.Transports["docker"][scope]; ok {
				t.Errorf("%s falls under the CRI-O scope %s", ref, scope)
			}
		}
	}
}

// manifestDesc is the descriptor of the manifest at ref.
func manifestDesc(t *testing.T, ref name.Reference) v1.Descriptor {
	t.Helper()
	d, err := remote.Head(ref)
	if err != nil {
		t.Fatal(err)
	}
	return *d
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
