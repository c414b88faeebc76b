package admission

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/stowage/stowage/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the current output")

// example is a profile "edge" whose images are served by the site
// registry.site:5000/mirror: two under the top-level key policy, one
// under a keyless policy of its own with the committed trusted root
// (sigstore-go's virtual sigstore, public parts only).
func example(t *testing.T, kinds ...string) Input {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range []string{"keys/release.pub", "trust/trusted_root.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	return Input{
		Profile: "edge", Namespace: "prepull",
		Spec: v1alpha1.AdmissionPolicy{Kinds: kinds},
		Policies: []Policy{
			{At: "images.model.verify", Verify: v1alpha1.Verify{
				Identities:  []v1alpha1.VerifyIdentity{{Identity: "release@example.org", Issuer: "https://issuer.example.org"}},
				TrustedRoot: "trust/trusted_root.json",
			}, Images: []Image{{Site: "registry.site:5000/mirror/ghcr.io/example/model", Signed: "ghcr.io/example/model"}}},
			{At: "verify", Verify: v1alpha1.Verify{Keys: []string{"keys/release.pub"}}, Images: []Image{
				{Site: "registry.site:5000/mirror/docker.io/library/busybox", Signed: "docker.io/library/busybox"},
				{Site: "registry.site:5000/mirror/ghcr.io/stowage/stowage-helper", Signed: "ghcr.io/stowage/stowage-helper"},
				{Site: "registry.site:5000/mirror/docker.io/library/busybox", Signed: "docker.io/library/busybox"},
			}},
		},
		Files: files,
	}
}

func encode(t *testing.T, in Input) []byte {
	t.Helper()
	objs, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yamlv2.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
	}
	return buf.Bytes()
}

// keysOnly is in without its keyless policy: what kyverno and crio can
// check.
func keysOnly(in Input) Input {
	in.Policies = in.Policies[1:]
	return in
}

// TestRenderGolden: the three kinds for the example's key policy, and
// policy-controller for the whole example (keyless included), byte for
// byte the files in testdata (go test -update rewrites them), the same
// bytes whatever the order of the policies and images given.
func TestRenderGolden(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		golden string
		in     Input
	}{
		{"edge.yaml", keysOnly(example(t, v1alpha1.AdmissionCRIO, v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController))},
		{"edge-keyless.yaml", example(t, v1alpha1.AdmissionPolicyController)},
		{"edge-ivpol.yaml", keysOnly(example(t, v1alpha1.AdmissionKyvernoIVPol))},
	} {
		got := encode(t, c.in)
		golden := filepath.Join("testdata", c.golden)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("output differs from %s (go test -update rewrites it):\n%s", golden, got)
		}
		// Reversed input, same bytes.
		rev := c.in
		rev.Policies = slices.Clone(c.in.Policies)
		slices.Reverse(rev.Policies)
		last := len(rev.Policies) - 1
		rev.Policies[last].Images = slices.Clone(rev.Policies[last].Images)
		slices.Reverse(rev.Policies[last].Images)
		if again := encode(t, rev); !bytes.Equal(again, got) {
			t.Errorf("%s: another input order gives other bytes", c.golden)
		}
	}
}

// TestCRIOPolicy: the fragment's scopes are the site repositories, each
// accepting signatures for the signed repository (exactRepository) with
// the key inline.
func TestCRIOPolicy(t *testing.T) {
	t.Parallel()
	objs, err := Render(keysOnly(example(t, v1alpha1.AdmissionCRIO)))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "ConfigMap" || objs[0].GetNamespace() != "prepull" || objs[0].GetName() != "stowage-edge-crio" {
		t.Fatalf("objects %v", objs)
	}
	data, _, _ := unstructuredString(objs[0].Object, "data", CRIOKey)
	var doc struct {
		Transports map[string]map[string][]map[string]any `json:"transports"`
	}
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatal(err)
	}
	reqs := doc.Transports["docker"]["registry.site:5000/mirror/docker.io/library/busybox"]
	if len(reqs) != 1 {
		t.Fatalf("busybox requirements %v", reqs)
	}
	id := reqs[0]["signedIdentity"].(map[string]any)
	if reqs[0]["type"] != "sigstoreSigned" || id["type"] != "exactRepository" || len(id) != 2 ||
		id["dockerRepository"] != "docker.io/library/busybox" || reqs[0]["keyData"] == nil {
		t.Errorf("busybox requirement %v", reqs[0])
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// TestRenderRefuses: what a kind cannot express, or a missing file, is
// an error naming the field.
func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		edit func(*Input)
		want string
	}{
		{"no policy", func(in *Input) { in.Policies = nil }, `profiles.edge.policy: no image of profile "edge" is under a verify policy`},
		{"file not read", func(in *Input) { *in = keysOnly(*in); delete(in.Files, "keys/release.pub") }, "profiles.edge.policy (kyverno): verify.keys[0]: file keys/release.pub was not read"},
		// Keyless signatures are Sigstore bundles in stowage: CRI-O reads
		// tag-scheme signatures only, a Kyverno ClusterPolicy reads
		// bundles against its own TUF root only.
		{"crio keyless", func(in *Input) { in.Spec.Kinds = []string{v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO} },
			"profiles.edge.policy.kinds: crio cannot check the keyless policy images.model.verify.identities: stowage verifies keyless signatures only as Sigstore bundles"},
		{"kyverno keyless", func(in *Input) {},
			"profiles.edge.policy.kinds: kyverno cannot check the keyless policy images.model.verify.identities: stowage verifies keyless signatures only as Sigstore bundles (OCI 1.1 referrers), which a Kyverno ClusterPolicy reads only under type SigstoreBundle"},
		{"kyverno-ivpol keyless", func(in *Input) { in.Spec.Kinds = []string{v1alpha1.AdmissionKyvernoIVPol} },
			"profiles.edge.policy.kinds: kyverno-ivpol cannot check the keyless policy images.model.verify.identities: stowage renders Kyverno's ImageValidatingPolicy for keys only"},
		{"crio keys and identities", func(in *Input) {
			in.Spec.Kinds = []string{v1alpha1.AdmissionCRIO}
			in.Policies[0].Verify.Keys = []string{"keys/release.pub"}
		}, "profiles.edge.policy.kinds: crio cannot check the keyless policy images.model.verify.identities"},
		{"bad trusted root", func(in *Input) {
			in.Spec.Kinds = []string{v1alpha1.AdmissionPolicyController}
			in.Files["trust/trusted_root.json"] = []byte("{")
		}, "images.model.verify.trustedRoot: trust/trusted_root.json is not a sigstore trusted_root.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := example(t, v1alpha1.AdmissionKyverno)
			c.edit(&in)
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestMergeAlike: environments written alike (the same key, at different
// fields) become one Kyverno rule and one ClusterImagePolicy, named for
// the prefix their fields share and matching every repository of the
// group; a policy written differently keeps its own; a group name a
// policy before it took gets "-2".
func TestMergeAlike(t *testing.T) {
	t.Parallel()
	in := example(t, v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController)
	key := v1alpha1.Verify{Keys: []string{"keys/release.pub"}}
	in.Policies = []Policy{
		{At: "environments.driver.verify", Verify: key, Images: []Image{{Site: "nvcr.io/nvidia/driver", Signed: "nvcr.io/nvidia/driver"}}},
		{At: "environments.cuda.verify", Verify: key, Images: []Image{{Site: "nvcr.io/nvidia/cuda", Signed: "nvcr.io/nvidia/cuda"}}},
		{At: "environments.toolkit.verify", Verify: v1alpha1.Verify{Keys: []string{"keys/release.pub"}, Mode: "optional"}, Images: []Image{{Site: "nvcr.io/nvidia/toolkit", Signed: "nvcr.io/nvidia/toolkit"}}},
		{At: "environments.validator.verify", Verify: v1alpha1.Verify{Keys: []string{"keys/release.pub"}, Mode: "optional"}, Images: []Image{{Site: "nvcr.io/nvidia/validator", Signed: "nvcr.io/nvidia/validator"}}},
	}
	objs, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	rules := objs[0].Object["spec"].(map[string]any)["rules"].([]any)
	var got []string
	for _, r := range rules {
		r := r.(map[string]any)
		refs := r["verifyImages"].([]any)[0].(map[string]any)["imageReferences"].([]any)
		var s []string
		for _, x := range refs {
			s = append(s, x.(string))
		}
		got = append(got, r["name"].(string)+" "+strings.Join(s, ","))
	}
	want := []string{
		"verify-environments nvcr.io/nvidia/cuda:*,nvcr.io/nvidia/cuda@*,nvcr.io/nvidia/driver:*,nvcr.io/nvidia/driver@*",
		"verify-environments-2 nvcr.io/nvidia/toolkit:*,nvcr.io/nvidia/toolkit@*,nvcr.io/nvidia/validator:*,nvcr.io/nvidia/validator@*",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Kyverno rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var cips []string
	for _, o := range objs[1:] {
		cips = append(cips, o.GetKind()+" "+o.GetName())
	}
	if w := "ClusterImagePolicy stowage-edge-environments,ClusterImagePolicy stowage-edge-environments-2"; strings.Join(cips, ",") != w {
		t.Errorf("policy-controller objects %q, want %q", strings.Join(cips, ","), w)
	}
}

// TestNamesCutApart: two fields whose names agree in their first 40
// characters still name two rules and two ClusterImagePolicies.
func TestNamesCutApart(t *testing.T) {
	t.Parallel()
	in := example(t, v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController)
	long := "environments.node-feature-discovery-" + strings.Repeat("a", 30)
	in.Policies = []Policy{
		{At: long + "1.verify", Verify: v1alpha1.Verify{Keys: []string{"keys/release.pub"}}, Images: []Image{{Site: "example.org/a", Signed: "example.org/a"}}},
		{At: long + "2.verify", Verify: v1alpha1.Verify{Keys: []string{"keys/release.pub"}, Mode: "optional"}, Images: []Image{{Site: "example.org/b", Signed: "example.org/b"}}},
	}
	objs, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range objs[0].Object["spec"].(map[string]any)["rules"].([]any) {
		seen["rule "+r.(map[string]any)["name"].(string)] = true
	}
	for _, o := range objs[1:] {
		seen[o.GetKind()+" "+o.GetName()] = true
	}
	if len(seen) != 4 {
		t.Errorf("names %v: want 2 rules and 2 ClusterImagePolicies, all distinct", seen)
	}
}

// TestSameKeyTwice: a key under two file names is published once, in
// each kind.
func TestSameKeyTwice(t *testing.T) {
	t.Parallel()
	in := keysOnly(example(t, v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO))
	in.Files["keys/copy.pub"] = append([]byte("\n"), in.Files["keys/release.pub"]...)
	in.Policies[0].Verify.Keys = []string{"keys/release.pub", "keys/copy.pub"}
	out := string(encode(t, in))
	once := string(encode(t, keysOnly(example(t, v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO))))
	if out != once {
		t.Errorf("the same key under two names renders otherwise than once:\n%s", out)
	}
}

// TestReads: which kind reads which format of signature the lock records:
// every kind reads cosign's tag scheme; a Sigstore bundle only Kyverno's
// ImageValidatingPolicy, and policy-controller when keyless (its keyless
// authority has signatureFormat bundle, its key authority none); an
// unrecorded format is taken as readable.
func TestReads(t *testing.T) {
	t.Parallel()
	key := "sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct {
		signer v1alpha1.ImageLockSigner
		want   []string // the kinds that read it
	}{
		{v1alpha1.ImageLockSigner{Key: key, Format: v1alpha1.SignatureTag}, Kinds},
		{v1alpha1.ImageLockSigner{Key: key}, Kinds},
		{v1alpha1.ImageLockSigner{Key: key, Format: v1alpha1.SignatureBundle}, []string{v1alpha1.AdmissionKyvernoIVPol}},
		{v1alpha1.ImageLockSigner{Identity: "a@example.org", Issuer: "https://issuer.example.org", Format: v1alpha1.SignatureBundle},
			[]string{v1alpha1.AdmissionKyvernoIVPol, v1alpha1.AdmissionPolicyController}},
	} {
		var got []string
		for _, k := range Kinds {
			if Reads(k, c.signer) {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: read by %v, want %v", c.signer, got, c.want)
		}
	}
}

// TestRenderRefusesFormat: an image whose locked signature is a Sigstore
// bundle makes Render refuse each kind that cannot read it, one line per
// image and kind naming both and the format, and nothing is rendered;
// kyverno-ivpol renders, and a tag-scheme signature renders under every
// kind.
func TestRenderRefusesFormat(t *testing.T) {
	t.Parallel()
	key := "sha256:" + strings.Repeat("a", 64)
	sigs := []Signature{
		{Image: "docker.io/library/busybox:1.37", Signer: v1alpha1.ImageLockSigner{Key: key, Signature: key, Format: v1alpha1.SignatureBundle}},
		{Image: "ghcr.io/stowage/stowage-helper:v1", Signer: v1alpha1.ImageLockSigner{Key: key, Signature: key, Format: v1alpha1.SignatureTag}},
	}
	for _, k := range []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO} {
		t.Run(k, func(t *testing.T) {
			in := keysOnly(example(t, k, v1alpha1.AdmissionKyvernoIVPol))
			in.Signatures = sigs
			objs, err := Render(in)
			want := "profiles.edge.policy.kinds: the site's admission controller would refuse these images:\n" +
				"  image docker.io/library/busybox:1.37: " + k + " cannot read its signature, which the lock records as a Sigstore bundle (an OCI 1.1 referrer, cosign 3's default) (verifiedBy.format bundle); "
			if err == nil || !strings.HasPrefix(err.Error(), want) || objs != nil {
				t.Fatalf("Render = %d objects, %v; want no objects and an error starting\n%s", len(objs), err, want)
			}
			if strings.Count(err.Error(), "\n") != 1 || strings.Contains(err.Error(), "stowage-helper") {
				t.Errorf("error %q: want the bundle-signed image alone", err)
			}
			in.Signatures = sigs[1:]
			if _, err := Render(in); err != nil {
				t.Errorf("tag-scheme signature: %v", err)
			}
		})
	}
	in := keysOnly(example(t, v1alpha1.AdmissionKyvernoIVPol))
	in.Signatures = sigs
	if got, want := string(encode(t, in)), string(encode(t, keysOnly(example(t, v1alpha1.AdmissionKyvernoIVPol)))); got != want {
		t.Errorf("kyverno-ivpol with signatures renders otherwise:\n%s", got)
	}
}
