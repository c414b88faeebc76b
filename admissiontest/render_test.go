package admissiontest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/admission"
)

// rootFile is the trusted root the keyless cases use: the public parts of
// a sigstore-go virtual sigstore, committed for internal/admission's own
// golden test.
const rootFile = "../internal/admission/testdata/trust/trusted_root.json"

// newKey returns a fresh ECDSA P-256 public key as cosign writes
// cosign.pub: one PEM "PUBLIC KEY" block of its PKIX encoding.
func newKey(t testing.TB) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// trustPEM is what the policies must carry of a trusted_root.json, read
// here with encoding/json alone (not with the code render uses): every
// certificate authority's chain, the first one's, and the first Rekor
// log's key and URL, as PEM.
type trustPEM struct {
	CAs, FirstCA, Rekor, RekorURL string
}

func readTrust(t testing.TB, path string) trustPEM {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Tlogs []struct {
			BaseURL   string `json:"baseUrl"`
			PublicKey struct {
				RawBytes []byte `json:"rawBytes"`
			} `json:"publicKey"`
		} `json:"tlogs"`
		CertificateAuthorities []struct {
			CertChain struct {
				Certificates []struct {
					RawBytes []byte `json:"rawBytes"`
				} `json:"certificates"`
			} `json:"certChain"`
		} `json:"certificateAuthorities"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Tlogs) == 0 || len(tr.CertificateAuthorities) == 0 {
		t.Fatalf("%s: want a Rekor log and a certificate authority", path)
	}
	var out trustPEM
	for i, ca := range tr.CertificateAuthorities {
		var chain strings.Builder
		for _, c := range ca.CertChain.Certificates {
			chain.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.RawBytes}))
		}
		if i == 0 {
			out.FirstCA = chain.String()
		}
		out.CAs += chain.String()
	}
	out.Rekor = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: tr.Tlogs[0].PublicKey.RawBytes}))
	out.RekorURL = tr.Tlogs[0].BaseURL
	return out
}

// group is one rule (Kyverno) or ClusterImagePolicy render must write: a
// distinct verify policy with the repositories under it.
type group struct {
	// Name is the rule's suffix and the ClusterImagePolicy's (after
	// NAME-).
	Name string
	// Images are the repositories (site, signed) under it.
	Images []admission.Image
	// Keys are the public keys as the input had them.
	Keys [][]byte
	// IDs are the keyless identities; with them the trusted root is
	// rootFile.
	IDs []v1alpha1.VerifyIdentity
}

// want is what a case's objects must say, kind by kind.
type want struct {
	Name      string // the objects' name (stowage-PROFILE by default)
	Namespace string // the CRI-O ConfigMap's
	Audit     bool
	Kinds     []string
	Groups    []group
	// Root is the keyless groups' trusted_root.json (default rootFile).
	Root string
}

func pemString(b []byte) string { return strings.TrimSpace(string(b)) + "\n" }

// assertChecked compares what the projects' types read with w.
func assertChecked(t *testing.T, c *checked, w want) {
	t.Helper()
	var root trustPEM
	for _, g := range w.Groups {
		if len(g.IDs) > 0 {
			p := w.Root
			if p == "" {
				p = rootFile
			}
			root = readTrust(t, p)
		}
	}
	has := func(k string) bool { return slices.Contains(w.Kinds, k) }

	// Kyverno: one ClusterPolicy, a rule per group.
	if !has(v1alpha1.AdmissionKyverno) {
		if len(c.Kyverno) != 0 {
			t.Errorf("%d ClusterPolicies, want none", len(c.Kyverno))
		}
	} else if len(c.Kyverno) != 1 {
		t.Errorf("%d ClusterPolicies, want 1", len(c.Kyverno))
	} else {
		p := c.Kyverno[0]
		if p.Name != w.Name || p.Spec.Background == nil || *p.Spec.Background {
			t.Errorf("ClusterPolicy %q background %v, want %q, background false", p.Name, p.Spec.Background, w.Name)
		}
		if len(p.Spec.Rules) != len(w.Groups) {
			t.Fatalf("ClusterPolicy has %d rules, want %d", len(p.Spec.Rules), len(w.Groups))
		}
		for i, g := range w.Groups {
			r := p.Spec.Rules[i]
			if r.Name != "verify-"+g.Name {
				t.Errorf("rule %d named %q, want %q", i, r.Name, "verify-"+g.Name)
			}
			if len(r.MatchResources.Any) != 1 || !slices.Equal(r.MatchResources.Any[0].Kinds, []string{"Pod"}) {
				t.Errorf("rule %s matches %+v, want Pods", r.Name, r.MatchResources)
			}
			if len(r.VerifyImages) != 1 {
				t.Fatalf("rule %s: %d verifyImages, want 1", r.Name, len(r.VerifyImages))
			}
			iv := r.VerifyImages[0]
			var refs []string
			for _, im := range g.Images {
				refs = append(refs, im.Site+":*", im.Site+"@*")
			}
			if !slices.Equal(iv.ImageReferences, refs) {
				t.Errorf("rule %s imageReferences %q, want %q", r.Name, iv.ImageReferences, refs)
			}
			action := kyvernov1.Enforce
			if w.Audit {
				action = kyvernov1.Audit
			}
			if iv.FailureAction == nil || *iv.FailureAction != action || !iv.Required || !iv.VerifyDigest || iv.MutateDigest {
				t.Errorf("rule %s: failureAction %v required %v verifyDigest %v mutateDigest %v, want %s, true, true, false",
					r.Name, iv.FailureAction, iv.Required, iv.VerifyDigest, iv.MutateDigest, action)
			}
			if len(iv.Attestors) != 1 || iv.Attestors[0].Count == nil || *iv.Attestors[0].Count != 1 {
				t.Fatalf("rule %s attestors %+v, want one set of count 1", r.Name, iv.Attestors)
			}
			entries := iv.Attestors[0].Entries
			if len(entries) != len(g.Keys)+len(g.IDs) {
				t.Fatalf("rule %s: %d attestor entries, want %d", r.Name, len(entries), len(g.Keys)+len(g.IDs))
			}
			for j, k := range g.Keys {
				e := entries[j].Keys
				if e == nil || e.PublicKeys != pemString(k) || e.Rekor == nil || !e.Rekor.IgnoreTlog || e.CTLog == nil || !e.CTLog.IgnoreSCT {
					t.Errorf("rule %s entry %d: %+v, want key %q with Rekor and SCT checks off", r.Name, j, e, k)
				}
			}
			for j, id := range g.IDs {
				e := entries[len(g.Keys)+j].Keyless
				if e == nil {
					t.Fatalf("rule %s entry %d: not keyless", r.Name, len(g.Keys)+j)
				}
				if e.Subject != id.Identity || e.SubjectRegExp != id.IdentityRegexp || e.Issuer != id.Issuer || e.IssuerRegExp != id.IssuerRegexp {
					t.Errorf("rule %s keyless %+v, want %+v", r.Name, e, id)
				}
				if e.Roots != root.CAs || e.Rekor == nil || e.Rekor.RekorPubKey != root.Rekor || e.Rekor.URL != root.RekorURL || e.Rekor.IgnoreTlog {
					t.Errorf("rule %s keyless: roots and Rekor key are not the trusted root's:\n%s\n%+v", r.Name, e.Roots, e.Rekor)
				}
			}
		}
	}

	// policy-controller: a ClusterImagePolicy per group, a TrustRoot per
	// keyless one.
	if !has(v1alpha1.AdmissionPolicyController) {
		if len(c.CIPs)+len(c.Roots) != 0 {
			t.Errorf("%d ClusterImagePolicies and %d TrustRoots, want none", len(c.CIPs), len(c.Roots))
		}
	} else if len(c.CIPs) != len(w.Groups) {
		t.Errorf("%d ClusterImagePolicies, want %d", len(c.CIPs), len(w.Groups))
	} else {
		roots := 0
		for i, g := range w.Groups {
			p := c.CIPs[i]
			name := w.Name + "-" + g.Name
			mode := "enforce"
			if w.Audit {
				mode = "warn"
			}
			if p.Name != name || p.Spec.Mode != mode {
				t.Errorf("ClusterImagePolicy %q mode %q, want %q, %q", p.Name, p.Spec.Mode, name, mode)
			}
			var globs, gotGlobs []string
			for _, im := range g.Images {
				repo := im.Site
				if rest, ok := strings.CutPrefix(repo, "docker.io/"); ok {
					repo = "index.docker.io/" + rest
				}
				globs = append(globs, repo+":*", repo+"@*")
			}
			for _, im := range p.Spec.Images {
				gotGlobs = append(gotGlobs, im.Glob)
			}
			if !slices.Equal(gotGlobs, globs) {
				t.Errorf("%s globs %q, want %q", name, gotGlobs, globs)
			}
			n := len(g.Keys)
			if len(g.IDs) > 0 {
				n++
			}
			if len(p.Spec.Authorities) != n {
				t.Fatalf("%s: %d authorities, want %d", name, len(p.Spec.Authorities), n)
			}
			for j, k := range g.Keys {
				a := p.Spec.Authorities[j]
				if a.Key == nil || a.Key.Data != pemString(k) || a.Key.HashAlgorithm != "sha256" || a.Keyless != nil {
					t.Errorf("%s authority %d: %+v, want key %q", name, j, a.Key, k)
				}
			}
			if len(g.IDs) == 0 {
				continue
			}
			roots++
			a := p.Spec.Authorities[n-1]
			if a.Keyless == nil || a.Keyless.TrustRootRef != name || len(a.Keyless.Identities) != len(g.IDs) || a.SignatureFormat != "bundle" {
				t.Fatalf("%s keyless authority %+v, want %d identities under TrustRoot %s", name, a.Keyless, len(g.IDs), name)
			}
			for j, id := range g.IDs {
				got := a.Keyless.Identities[j]
				if got.Subject != id.Identity || got.SubjectRegExp != id.IdentityRegexp || got.Issuer != id.Issuer || got.IssuerRegExp != id.IssuerRegexp {
					t.Errorf("%s identity %d %+v, want %+v", name, j, got, id)
				}
			}
			if a.CTLog == nil || a.CTLog.TrustRootRef != name || a.CTLog.URL == nil || a.CTLog.URL.String() != root.RekorURL {
				t.Errorf("%s Rekor (ctlog) %+v, want %s under TrustRoot %s", name, a.CTLog, root.RekorURL, name)
			}
			tr := c.Roots[name]
			if tr == nil || tr.Spec.SigstoreKeys == nil || len(tr.Spec.SigstoreKeys.CertificateAuthorities) == 0 || len(tr.Spec.SigstoreKeys.TLogs) == 0 {
				t.Fatalf("TrustRoot %s: %+v, want the trusted root's keys", name, tr)
			}
			keys := tr.Spec.SigstoreKeys
			if string(keys.CertificateAuthorities[0].CertChain) != root.FirstCA {
				t.Errorf("TrustRoot %s CA chain:\n%s\nwant:\n%s", name, keys.CertificateAuthorities[0].CertChain, root.FirstCA)
			}
			if string(keys.TLogs[0].PublicKey) != root.Rekor || keys.TLogs[0].BaseURL.String() != root.RekorURL {
				t.Errorf("TrustRoot %s Rekor %s %s, want %s %s", name, keys.TLogs[0].BaseURL.String(), keys.TLogs[0].PublicKey, root.RekorURL, root.Rekor)
			}
		}
		if len(c.Roots) != roots {
			t.Errorf("%d TrustRoots, want %d", len(c.Roots), roots)
		}
	}

	// CRI-O: one fragment; per site repository a requirement per group.
	if !has(v1alpha1.AdmissionCRIO) {
		if len(c.CRIO) != 0 {
			t.Errorf("%d CRI-O fragments, want none", len(c.CRIO))
		}
		return
	}
	if len(c.CRIO) != 1 {
		t.Fatalf("%d CRI-O fragments, want 1", len(c.CRIO))
	}
	f := c.CRIO[0]
	if f.ConfigMap.Name != w.Name+"-crio" || f.ConfigMap.Namespace != w.Namespace {
		t.Errorf("CRI-O ConfigMap %s/%s, want %s/%s-crio", f.ConfigMap.Namespace, f.ConfigMap.Name, w.Namespace, w.Name)
	}
	if len(f.Parsed.Default) != 1 || f.Parsed.Default[0]["type"] != "insecureAcceptAnything" || len(f.Parsed.Transports) != 1 {
		t.Errorf("CRI-O default %v and transports %v, want insecureAcceptAnything and docker alone", f.Parsed.Default, f.Parsed.Transports)
	}
	wantReqs := map[string]int{}
	for _, g := range w.Groups {
		for _, im := range g.Images {
			wantReqs[im.Site]++
		}
	}
	scopes := f.Parsed.Transports["docker"]
	if len(scopes) != len(wantReqs) {
		t.Errorf("CRI-O scopes %v, want %v", keysOf(scopes), wantReqs)
	}
	seen := map[string]int{}
	for _, g := range w.Groups {
		for _, im := range g.Images {
			reqs := scopes[im.Site]
			if len(reqs) != wantReqs[im.Site] {
				t.Errorf("CRI-O scope %s: %d requirements, want %d", im.Site, len(reqs), wantReqs[im.Site])
				continue
			}
			r := reqs[seen[im.Site]]
			seen[im.Site]++
			id := r.SignedIdentity
			if r.Type != "sigstoreSigned" || id.Type != "exactRepository" || id.DockerRepository != im.Signed {
				t.Errorf("CRI-O %s: %s %+v, want sigstoreSigned accepting signatures for %s", im.Site, r.Type, id, im.Signed)
			}
			switch {
			case len(g.Keys) == 1:
				if string(r.KeyData) != pemString(g.Keys[0]) || r.KeyDatas != nil || r.Fulcio != nil {
					t.Errorf("CRI-O %s keyData %q, want %q", im.Site, r.KeyData, g.Keys[0])
				}
			case len(g.Keys) > 1:
				var got []string
				for _, k := range r.KeyDatas {
					got = append(got, string(k))
				}
				var ks []string
				for _, k := range g.Keys {
					ks = append(ks, pemString(k))
				}
				if !slices.Equal(got, ks) || r.KeyData != nil {
					t.Errorf("CRI-O %s keyDatas %q, want %q", im.Site, got, ks)
				}
			default:
				if r.Fulcio == nil || r.Fulcio.SubjectEmail != g.IDs[0].Identity || r.Fulcio.OIDCIssuer != g.IDs[0].Issuer ||
					string(r.Fulcio.CAData) != root.CAs || string(r.RekorPublicKeyData) != root.Rekor {
					t.Errorf("CRI-O %s fulcio %+v rekor %q, want %+v under the trusted root", im.Site, r.Fulcio, r.RekorPublicKeyData, g.IDs[0])
				}
			}
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var allKinds = []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO}

// TestRenderedPoliciesValidate: for a table of inputs (keys, two keys,
// keyless exact and regexp identities (policy-controller: Render refuses
// keyless policies for kyverno and crio), audit mode, policies written alike
// merged, an image under two policies, a Docker Hub image without a site,
// a name of its own), every object admission.Render returns decodes
// strictly into Kyverno's, policy-controller's or k8s.io/api's own type
// and passes that project's validation, the CRI-O fragment parses with
// containers-image's policy parser, and each carries the input's keys,
// identities, trusted root, globs and, per site repository, the signed
// repository.
func TestRenderedPoliciesValidate(t *testing.T) {
	keyA, keyB := newKey(t), newKey(t)
	rootJSON, err := os.ReadFile(rootFile)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"keys/a.pub": keyA, "keys/b.pub": keyB, "trust/root.json": rootJSON}
	const site = "registry.site:5000/mirror/"
	busybox := admission.Image{Site: site + "docker.io/library/busybox", Signed: "docker.io/library/busybox"}
	helper := admission.Image{Site: site + "ghcr.io/stowage/stowage-helper", Signed: "ghcr.io/stowage/stowage-helper"}
	model := admission.Image{Site: site + "ghcr.io/example/model", Signed: "ghcr.io/example/model"}
	cuda := admission.Image{Site: site + "nvcr.io/nvidia/cuda", Signed: "nvcr.io/nvidia/cuda"}
	driver := admission.Image{Site: site + "nvcr.io/nvidia/driver", Signed: "nvcr.io/nvidia/driver"}
	hub := admission.Image{Site: "docker.io/library/nginx", Signed: "docker.io/library/nginx"}
	exact := v1alpha1.VerifyIdentity{Identity: "release@example.org", Issuer: "https://issuer.example.org"}
	regexp := v1alpha1.VerifyIdentity{IdentityRegexp: `^https://github\.com/example/.+@refs/tags/v.*$`, IssuerRegexp: `^https://token\.actions\.githubusercontent\.com$`}

	keyPolicy := func(at string, keys []string, images ...admission.Image) admission.Policy {
		return admission.Policy{At: at, Verify: v1alpha1.Verify{Keys: keys}, Images: images}
	}
	keyless := func(at string, ids []v1alpha1.VerifyIdentity, images ...admission.Image) admission.Policy {
		return admission.Policy{At: at, Verify: v1alpha1.Verify{Identities: ids, TrustedRoot: "trust/root.json"}, Images: images}
	}
	for _, c := range []struct {
		name     string
		spec     v1alpha1.AdmissionPolicy
		policies []admission.Policy
		want     want
	}{
		{
			name:     "keys",
			spec:     v1alpha1.AdmissionPolicy{Kinds: allKinds},
			policies: []admission.Policy{keyPolicy("verify", []string{"keys/a.pub"}, helper, busybox, hub)},
			want:     want{Groups: []group{{Name: "top-level", Images: []admission.Image{hub, busybox, helper}, Keys: [][]byte{keyA}}}},
		},
		{
			name:     "two keys",
			spec:     v1alpha1.AdmissionPolicy{Kinds: allKinds},
			policies: []admission.Policy{keyPolicy("profiles.edge.verify", []string{"keys/a.pub", "keys/b.pub"}, busybox)},
			want:     want{Groups: []group{{Name: "profiles-edge", Images: []admission.Image{busybox}, Keys: [][]byte{keyA, keyB}}}},
		},
		{
			name:     "keyless exact",
			spec:     v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionPolicyController}},
			policies: []admission.Policy{keyless("images.model.verify", []v1alpha1.VerifyIdentity{exact}, model)},
			want:     want{Groups: []group{{Name: "images-model", Images: []admission.Image{model}, IDs: []v1alpha1.VerifyIdentity{exact}}}},
		},
		{
			name:     "keyless regexp and exact",
			spec:     v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionPolicyController}},
			policies: []admission.Policy{keyless("verify", []v1alpha1.VerifyIdentity{regexp, exact}, model, helper)},
			want:     want{Groups: []group{{Name: "top-level", Images: []admission.Image{model, helper}, IDs: []v1alpha1.VerifyIdentity{regexp, exact}}}},
		},
		{
			name: "audit",
			spec: v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionPolicyController}, Mode: v1alpha1.AdmissionAudit},
			policies: []admission.Policy{
				keyPolicy("verify", []string{"keys/a.pub"}, busybox),
				keyless("images.model.verify", []v1alpha1.VerifyIdentity{exact}, model),
			},
			want: want{Audit: true, Groups: []group{
				{Name: "images-model", Images: []admission.Image{model}, IDs: []v1alpha1.VerifyIdentity{exact}},
				{Name: "top-level", Images: []admission.Image{busybox}, Keys: [][]byte{keyA}},
			}},
		},
		{
			name:     "audit, kyverno",
			spec:     v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController}, Mode: v1alpha1.AdmissionAudit},
			policies: []admission.Policy{keyPolicy("verify", []string{"keys/a.pub"}, busybox)},
			want:     want{Audit: true, Groups: []group{{Name: "top-level", Images: []admission.Image{busybox}, Keys: [][]byte{keyA}}}},
		},
		{
			name: "merged, and an image under two policies",
			spec: v1alpha1.AdmissionPolicy{Kinds: allKinds, Name: "site-images"},
			policies: []admission.Policy{
				keyPolicy("environments.driver.verify", []string{"keys/b.pub"}, driver),
				keyPolicy("environments.cuda.verify", []string{"keys/b.pub"}, cuda),
				keyPolicy("verify", []string{"keys/a.pub"}, busybox, cuda),
			},
			want: want{Name: "site-images", Groups: []group{
				{Name: "environments", Images: []admission.Image{cuda, driver}, Keys: [][]byte{keyB}},
				{Name: "top-level", Images: []admission.Image{busybox, cuda}, Keys: [][]byte{keyA}},
			}},
		},
		{
			name: "merged, an image under a key and a keyless policy",
			spec: v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionPolicyController}, Name: "site-images"},
			policies: []admission.Policy{
				keyPolicy("environments.driver.verify", []string{"keys/b.pub"}, driver),
				keyPolicy("environments.cuda.verify", []string{"keys/b.pub"}, cuda),
				keyPolicy("verify", []string{"keys/a.pub"}, busybox, cuda),
				keyless("images.model.verify", []v1alpha1.VerifyIdentity{exact}, model, busybox),
			},
			want: want{Name: "site-images", Groups: []group{
				{Name: "environments", Images: []admission.Image{cuda, driver}, Keys: [][]byte{keyB}},
				{Name: "images-model", Images: []admission.Image{busybox, model}, IDs: []v1alpha1.VerifyIdentity{exact}},
				{Name: "top-level", Images: []admission.Image{busybox, cuda}, Keys: [][]byte{keyA}},
			}},
		},
		{
			name:     "kyverno alone",
			spec:     v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionKyverno}},
			policies: []admission.Policy{keyPolicy("verify", []string{"keys/a.pub"}, busybox)},
			want:     want{Groups: []group{{Name: "top-level", Images: []admission.Image{busybox}, Keys: [][]byte{keyA}}}},
		},
		{
			name:     "policy-controller alone",
			spec:     v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionPolicyController}},
			policies: []admission.Policy{keyless("verify", []v1alpha1.VerifyIdentity{exact}, model)},
			want:     want{Groups: []group{{Name: "top-level", Images: []admission.Image{model}, IDs: []v1alpha1.VerifyIdentity{exact}}}},
		},
		{
			name:     "crio alone",
			spec:     v1alpha1.AdmissionPolicy{Kinds: []string{v1alpha1.AdmissionCRIO}},
			policies: []admission.Policy{keyPolicy("verify", []string{"keys/a.pub"}, busybox, hub)},
			want:     want{Groups: []group{{Name: "top-level", Images: []admission.Image{hub, busybox}, Keys: [][]byte{keyA}}}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, err := admission.Render(admission.Input{Profile: "edge", Namespace: "prepull", Spec: c.spec, Policies: c.policies, Files: files})
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if w.Name == "" {
				w.Name = "stowage-edge"
			}
			w.Namespace, w.Kinds = "prepull", c.spec.Kinds
			assertChecked(t, checkRendered(t, objs), w)
		})
	}
}

// TestCheckRefuses: the checks are not vacuous: an unknown field, a field
// of the wrong case, a glob or mode policy-controller refuses, a Kyverno
// rule without image references, and a policy.json requirement of an
// unknown type, a signed repository or a scope that is no repository are
// each refused by the projects' own code.
func TestCheckRefuses(t *testing.T) {
	files := map[string][]byte{"keys/a.pub": newKey(t)}
	objs, err := admission.Render(admission.Input{
		Profile: "edge", Namespace: "prepull", Spec: v1alpha1.AdmissionPolicy{Kinds: allKinds},
		Policies: []admission.Policy{{At: "verify", Verify: v1alpha1.Verify{Keys: []string{"keys/a.pub"}},
			Images: []admission.Image{{Site: "registry.site:5000/mirror/docker.io/library/busybox", Signed: "docker.io/library/busybox"}}}},
		Files: files,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("%d objects, want 3", len(objs))
	}
	for _, c := range []struct {
		name string
		obj  int
		edit func(map[string]any)
		want string
	}{
		{"kyverno unknown field", 0, func(o map[string]any) { spec(o)["verifyImage"] = true }, `unknown field "spec.verifyImage"`},
		{"kyverno field case", 0, func(o map[string]any) {
			iv := rule(o)["verifyImages"].([]any)[0].(map[string]any)
			iv["ImageReferences"] = iv["imageReferences"]
			delete(iv, "imageReferences")
		}, `unknown field "spec.rules[0].verifyImages[0].ImageReferences"`},
		{"kyverno no image references", 0, func(o map[string]any) {
			delete(rule(o)["verifyImages"].([]any)[0].(map[string]any), "imageReferences")
		}, "An image reference is required"},
		{"policy-controller bad glob", 1, func(o map[string]any) {
			spec(o)["images"] = []any{map[string]any{"glob": "registry.site:5000/mirror/app["}}
		}, "invalid value"},
		{"policy-controller bad mode", 1, func(o map[string]any) { spec(o)["mode"] = "block" }, "unsupported mode"},
		{"policy.json unknown type", 2, func(o map[string]any) {
			d := o["data"].(map[string]any)
			d[admission.CRIOKey] = strings.Replace(d[admission.CRIOKey].(string), `"sigstoreSigned"`, `"sigstoreSignedd"`, 1)
		}, "containers-image's policy parser"},
		{"policy.json bad repository", 2, func(o map[string]any) {
			d := o["data"].(map[string]any)
			d[admission.CRIOKey] = strings.Replace(d[admission.CRIOKey].(string), `"dockerRepository": "docker.io/library/busybox"`, `"dockerRepository": "docker.io/library/Busybox"`, 1)
		}, "containers-image's policy parser"},
		{"policy.json bad scope", 2, func(o map[string]any) {
			d := o["data"].(map[string]any)
			d[admission.CRIOKey] = strings.Replace(d[admission.CRIOKey].(string), `"registry.site:5000/mirror/docker.io/library/busybox"`, `"registry.site:5000/mirror/docker.io/library/Busybox"`, 1)
		}, "containers-image's reference parser"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := objs[c.obj].DeepCopy().Object
			c.edit(o)
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := check([][]byte{b}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func spec(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
func rule(o map[string]any) map[string]any { return spec(o)["rules"].([]any)[0].(map[string]any) }

// TestGoldenPolicies: every admission object in the committed golden
// files (../golden/EXAMPLE/PROFILE.yaml, render's output for the
// examples) passes the same checks. The examples need not render any:
// the count is logged.
func TestGoldenPolicies(t *testing.T) {
	files, err := filepath.Glob("../golden/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files under ../golden")
	}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, _, err := admissionObjects(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(objs) == 0 {
			continue
		}
		c, err := check(objs)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, p := range c.Kyverno {
			if len(p.Spec.Rules) == 0 {
				t.Errorf("%s: ClusterPolicy %s has no rule", f, p.Name)
			}
		}
		total += len(objs)
		t.Logf("%s: %d ClusterPolicies, %d ImageValidatingPolicies, %d ClusterImagePolicies, %d TrustRoots, %d CRI-O fragments", f, len(c.Kyverno), len(c.IVPols), len(c.CIPs), len(c.Roots), len(c.CRIO))
	}
	t.Logf("%d admission objects in %d golden files", total, len(files))
}
