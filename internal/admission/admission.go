// Package admission renders the admission policies a site runs so that the
// images render writes verify there: a Kyverno ClusterPolicy with
// verifyImages, a Kyverno ImageValidatingPolicy per verify policy, a
// sigstore policy-controller ClusterImagePolicy (and the
// TrustRoot its keyless authorities name), and a CRI-O containers-policy.json
// fragment whose exactRepository identity accepts, for each site
// repository, signatures for the one the publisher signed. It is pure: the key and trusted-root bytes come in
// through Input (the caller reads them confined and bounded); nothing is
// read, and the same Input gives the same objects.
package admission

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	trustrootpb "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/dnslabel"
)

// Image is one repository render writes under a policy.
type Image struct {
	// Site is the repository the rendered pods name, without tag or
	// digest: the site repository when the profile has a site, else the
	// image's own, normalised (imageref.RepositoryName).
	Site string
	// Signed is the repository the publisher signed (the source's,
	// imageref.RepositoryName).
	Signed string
}

// Policy is one verify policy with the repositories it applies to.
type Policy struct {
	// At is the field it is written at ("verify", "profiles.P.verify").
	At string
	// Verify is the policy as written; its files are in Input.Files.
	Verify v1alpha1.Verify
	// Images are the repositories under it; order does not matter.
	Images []Image
}

// Input is what Render needs.
type Input struct {
	// Profile is the profile's name; Namespace its namespace (the CRI-O
	// ConfigMap's).
	Profile, Namespace string
	// Spec is the profile's policy field (v1alpha1.AdmissionPolicy).
	Spec v1alpha1.AdmissionPolicy
	// Policies are the verify policies of the profile's images
	// (plan.VerifyPolicy of each use); order does not matter.
	Policies []Policy
	// Files are the policies' keys and trusted roots, keyed by the path
	// as written in the config.
	Files map[string][]byte
	// Signatures are what the lock records as having verified the
	// profile's images under these policies (verifiedBy), so that Render
	// refuses a kind that cannot read one (Reads); order does not matter.
	Signatures []Signature
}

// Signature is the signer the lock records for one image.
type Signature struct {
	// Image names the image in messages: its lock key.
	Image string
	// Signer is the entry's verifiedBy.
	Signer v1alpha1.ImageLockSigner
}

// Reads says whether the policy Render writes for kind can read the
// signature s: its verifiedBy.format. A Kyverno ClusterPolicy (rules of
// Kyverno's type Cosign), a policy-controller key authority and CRI-O's
// sigstoreSigned read cosign's tag-scheme signatures (sha256-<hex>.sig)
// only; Kyverno's ImageValidatingPolicy reads Sigstore bundle referrers too
// (Kyverno 1.19's cosign verifier looks for bundles among the digest's
// referrers and falls back to the tag); policy-controller's keyless
// authority, which Render writes with signatureFormat bundle, reads
// bundles (policy-controller 0.13 reads bundles for keyless authorities
// only). A signature whose format the lock does not record (a lock
// written before it did) is taken as readable: lock --check reports it
// unrecorded, and lock records it.
func Reads(kind string, s v1alpha1.ImageLockSigner) bool {
	if s.Format != v1alpha1.SignatureBundle {
		return true
	}
	switch kind {
	case v1alpha1.AdmissionKyvernoIVPol:
		return true
	case v1alpha1.AdmissionPolicyController:
		return s.Key == ""
	}
	return false
}

// FormatWords names a signature format in messages.
func FormatWords(format string) string {
	switch format {
	case v1alpha1.SignatureBundle:
		return "a Sigstore bundle (an OCI 1.1 referrer, cosign 3's default)"
	case v1alpha1.SignatureTag:
		return "a cosign tag-scheme signature (sha256-<hex>.sig)"
	}
	return "a signature of unrecorded format"
}

// unreadableHelp says what to do about a kind that cannot read a bundle.
func unreadableHelp(kind string) string {
	alt := "add kyverno-ivpol to kinds (a Kyverno ImageValidatingPolicy reads both formats) and leave " + kind + " out"
	if kind == v1alpha1.AdmissionKyverno {
		alt = "use kyverno-ivpol instead of kyverno in kinds (a Kyverno ImageValidatingPolicy reads both formats)"
	}
	return alt + ", or have the image signed in cosign's tag format as well (cosign sign --new-bundle-format=false), remove its verifiedBy from the lock and lock again"
}

// Label is the label every object carries: the profile it renders.
const Label = "stowage.dev/profile"

// Render returns the objects of in.Spec.Kinds, in the order kyverno,
// kyverno-ivpol, policy-controller (TrustRoots first), crio, each sorted
// by name. Errors name the field: a file missing from Files, a trusted
// root that does not parse, a keyless policy under kyverno, kyverno-ivpol
// or crio (keylessUnsupported, at profiles.P.policy.kinds), a kind that
// cannot read a signature of in.Signatures (Reads; naming each image and
// kind), a profile whose policy: has no image under a verify policy.
func Render(in Input) ([]*unstructured.Unstructured, error) {
	pols := slices.Clone(in.Policies)
	slices.SortFunc(pols, func(a, b Policy) int { return strings.Compare(a.At, b.At) })
	for i := range pols {
		pols[i].Images = sortedImages(pols[i].Images)
	}
	pols = slices.DeleteFunc(pols, func(p Policy) bool { return len(p.Images) == 0 })
	pols, names := merge(pols)
	at := "profiles." + in.Profile + ".policy"
	if len(pols) == 0 {
		return nil, fmt.Errorf("%s: no image of profile %q is under a verify policy: add verify (top level, profile, image or environment) for the admission policy to check", at, in.Profile)
	}
	name := in.Spec.Name
	if name == "" {
		name = "stowage-" + in.Profile
	}
	if err := unreadable(at, in); err != nil {
		return nil, err
	}
	r := &renderer{in: in, name: name, pols: pols, names: names}
	var out []*unstructured.Unstructured
	for _, k := range Kinds {
		if !slices.Contains(in.Spec.Kinds, k) {
			continue
		}
		if why := keylessUnsupported[k]; why != "" {
			for _, p := range pols {
				if len(p.Verify.Identities) > 0 {
					return nil, fmt.Errorf("%s.kinds: %s cannot check the keyless policy %s.identities: %s", at, k, p.At, why)
				}
			}
		}
		var objs []*unstructured.Unstructured
		var err error
		switch k {
		case v1alpha1.AdmissionKyverno:
			objs, err = r.kyverno()
		case v1alpha1.AdmissionKyvernoIVPol:
			objs, err = r.kyvernoIVPol()
		case v1alpha1.AdmissionPolicyController:
			objs, err = r.policyController()
		default:
			objs, err = r.crio()
		}
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", at, k, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Kinds are the admission kinds in the order Render writes them.
var Kinds = []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionKyvernoIVPol, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO}

// unreadable refuses the kinds of in.Spec that cannot read a signature of
// in.Signatures (Reads), one line per image and kind, sorted, each naming
// the image, the kind and the format.
func unreadable(at string, in Input) error {
	var lines []string
	for _, k := range Kinds {
		if !slices.Contains(in.Spec.Kinds, k) {
			continue
		}
		for _, sig := range in.Signatures {
			if !Reads(k, sig.Signer) {
				line := fmt.Sprintf("image %s: %s cannot read its signature, which the lock records as %s (verifiedBy.format %s); %s",
					sig.Image, k, FormatWords(sig.Signer.Format), sig.Signer.Format, unreadableHelp(k))
				if !slices.Contains(lines, line) {
					lines = append(lines, line)
				}
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	slices.Sort(lines)
	return fmt.Errorf("%s.kinds: the site's admission controller would refuse these images:\n  %s", at, strings.Join(lines, "\n  "))
}

// keylessUnsupported says, for each kind that cannot check a keyless
// policy as stowage verifies it, why: stowage finds keyless signatures
// only as Sigstore bundles among a digest's OCI 1.1 referrers
// (sigverify.VerifyKeyless), never as cosign's tag-scheme signatures.
var keylessUnsupported = map[string]string{
	v1alpha1.AdmissionCRIO: "stowage verifies keyless signatures only as Sigstore bundles (OCI 1.1 referrers), " +
		"and CRI-O's containers-image reads cosign's tag-scheme signatures (sha256-<hex>.sig) only, so every keyless image would be refused; " +
		"leave crio out of kinds, or verify the profile's images with keys",
	v1alpha1.AdmissionKyverno: "stowage verifies keyless signatures only as Sigstore bundles (OCI 1.1 referrers), " +
		"which a Kyverno ClusterPolicy reads only under type SigstoreBundle, and then against Kyverno's own TUF trusted root, not the policy's trustedRoot; " +
		"use policy-controller for keyless policies (its ClusterImagePolicy carries the trusted root), or verify with keys",
	v1alpha1.AdmissionKyvernoIVPol: "stowage renders Kyverno's ImageValidatingPolicy for keys only; " +
		"use policy-controller for keyless policies (its ClusterImagePolicy carries the trusted root), or verify with keys",
}

type renderer struct {
	in   Input
	name string
	pols []Policy
	// names[i] names pols[i]'s rule or object (a DNS label fragment).
	names []string
}

// merge folds the policies that are written alike (the same keys,
// identities, trusted root and mode, at different fields: every
// environment of a vendor's image set under one key, say) into one, so
// that a site gets one Kyverno rule and one ClusterImagePolicy per distinct
// policy. pols must be sorted by At; the result keeps that order (by the
// first field of each group), the group's images are the union, and At is
// the first field, which is where a group's errors point. names[i] names
// group i: a group of one its field (suffix), a larger group the dotted
// prefix its fields share ("environments"), or "shared"; a name a group
// before it took gets "-2", "-3", ….
func merge(pols []Policy) ([]Policy, []string) {
	var out []Policy
	var ats [][]string
	index := map[string]int{}
	for _, p := range pols {
		key := "at:" + p.At // a policy that does not marshal stays alone
		if b, err := json.Marshal(p.Verify); err == nil {
			key = string(b)
		}
		if i, ok := index[key]; ok {
			out[i].Images = sortedImages(append(out[i].Images, p.Images...))
			ats[i] = append(ats[i], p.At)
			continue
		}
		index[key] = len(out)
		out = append(out, p)
		ats = append(ats, []string{p.At})
	}
	names := make([]string, len(out))
	used := map[string]bool{}
	for i, p := range out {
		base := suffix(p)
		if len(ats[i]) > 1 {
			base = dnslabel.Sanitize(sharedPrefix(ats[i]), 40)
			if base == "" {
				base = "shared"
			}
		}
		name := base
		for n := 2; used[name]; n++ {
			tail := fmt.Sprintf("-%d", n)
			name = strings.TrimSuffix(dnslabel.Sanitize(base, 40-len(tail)), "-") + tail
		}
		used[name] = true
		names[i] = name
	}
	return out, names
}

// sharedPrefix is the longest run of whole dotted segments every field of
// ats starts with ("environments" for "environments.a.verify" and
// "environments.b.verify"), "" when they share none.
func sharedPrefix(ats []string) string {
	first := strings.Split(ats[0], ".")
	n := len(first)
	for _, at := range ats[1:] {
		segs := strings.Split(at, ".")
		m := 0
		for m < n && m < len(segs) && segs[m] == first[m] {
			m++
		}
		n = m
	}
	return strings.Join(first[:n], ".")
}

func sortedImages(in []Image) []Image {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b Image) int {
		return strings.Compare(a.Site+"\x00"+a.Signed, b.Site+"\x00"+b.Signed)
	})
	return slices.Compact(out)
}

// Globs are the image patterns of a repository: its references with a tag
// and with a digest ("REPO:*", "REPO@*"), the two spellings render writes.
// policy-controller's glob reads "*" as any run of characters other than
// "/", Kyverno's wildcard as any run at all; both match the whole
// reference, so a pattern starting with the whole repository and ":" or
// "@" matches that repository's references only.
func Globs(repo string) []string { return []string{repo + ":*", repo + "@*"} }

func (r *renderer) file(at, path string) ([]byte, error) {
	b, ok := r.in.Files[path]
	if !ok {
		return nil, fmt.Errorf("%s: file %s was not read for the admission policy", at, path)
	}
	return b, nil
}

// keys are p's keys as PEM, each checked by publicKeyOnly, in the order
// written; a file whose key an earlier file of p already holds (the same
// bytes under two names) is left out, so that no key is published twice.
func (r *renderer) keys(p Policy) ([]string, error) {
	var out []string
	for i, k := range p.Verify.Keys {
		at := fmt.Sprintf("%s.keys[%d]", p.At, i)
		b, err := r.file(at, k)
		if err != nil {
			return nil, err
		}
		if err := publicKeyOnly(b); err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", at, k, err)
		}
		if key := strings.TrimSpace(string(b)) + "\n"; !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out, nil
}

// publicKeyOnly checks that b, which render publishes inline in
// cluster-wide objects, is one PEM "PUBLIC KEY" block (a PKIX public key,
// as cosign.pub is) and nothing else but white space: a second block or
// any other bytes are refused, and a private key (a PEM block whose type
// names one, cosign.key included, wherever it is in b) is refused saying
// so, since only its public half belongs in the repository. lock reads
// the same files with sigstore's cryptoutils (sigverify.LoadKey); this is
// the stricter rule for what may be published.
func publicKeyOnly(b []byte) error {
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if strings.Contains(block.Type, "PRIVATE KEY") {
			return fmt.Errorf("a private key (PEM %q), not a public key: only the public key (cosign.pub, from cosign public-key) belongs in the repository; remove this file, and rotate the key if it was ever committed", block.Type)
		}
	}
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" {
		return errors.New(`not a PEM public key: want one "PUBLIC KEY" block`)
	}
	if _, err := x509.ParsePKIXPublicKey(block.Bytes); err != nil {
		return fmt.Errorf("not a PEM public key: %w", err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("not a PEM public key: more than one PEM block or other bytes after the key")
	}
	return nil
}

// trust is the parts of a trusted_root.json the policies need, as PEM.
type trust struct {
	cas, tsas     []authority
	tlogs, ctlogs []tlog
}

type authority struct {
	org, cn, uri string
	chain        string
}

type tlog struct {
	url, pub string
}

func (r *renderer) trustedRoot(p Policy) (*trust, error) {
	at := p.At + ".trustedRoot"
	b, err := r.file(at, p.Verify.TrustedRoot)
	if err != nil {
		return nil, err
	}
	var tr trustrootpb.TrustedRoot
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &tr); err != nil {
		return nil, fmt.Errorf("%s: %s is not a sigstore trusted_root.json: %w", at, p.Verify.TrustedRoot, err)
	}
	t := &trust{}
	chain := func(ca *trustrootpb.CertificateAuthority) authority {
		var s strings.Builder
		for _, c := range ca.GetCertChain().GetCertificates() {
			_ = pem.Encode(&s, &pem.Block{Type: "CERTIFICATE", Bytes: c.GetRawBytes()})
		}
		return authority{org: ca.GetSubject().GetOrganization(), cn: ca.GetSubject().GetCommonName(), uri: ca.GetUri(), chain: s.String()}
	}
	for _, ca := range tr.GetCertificateAuthorities() {
		t.cas = append(t.cas, chain(ca))
	}
	for _, ca := range tr.GetTimestampAuthorities() {
		t.tsas = append(t.tsas, chain(ca))
	}
	key := func(l *trustrootpb.TransparencyLogInstance) tlog {
		var s strings.Builder
		_ = pem.Encode(&s, &pem.Block{Type: "PUBLIC KEY", Bytes: l.GetPublicKey().GetRawBytes()})
		return tlog{url: l.GetBaseUrl(), pub: s.String()}
	}
	for _, l := range tr.GetTlogs() {
		t.tlogs = append(t.tlogs, key(l))
	}
	for _, l := range tr.GetCtlogs() {
		t.ctlogs = append(t.ctlogs, key(l))
	}
	if len(t.cas) == 0 {
		return nil, fmt.Errorf("%s: %s has no certificate authority to check keyless certificates against", at, p.Verify.TrustedRoot)
	}
	return t, nil
}

func (r *renderer) object(apiVersion, kind, name, namespace string, spec map[string]any) *unstructured.Unstructured {
	md := map[string]any{
		"name":   name,
		"labels": map[string]any{"app.kubernetes.io/managed-by": "stowage", Label: r.in.Profile},
	}
	if namespace != "" {
		md["namespace"] = namespace
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range spec {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

// suffix names a policy's rule or object: its field as a DNS label
// fragment, "top-level" for the top-level verify.
func suffix(p Policy) string {
	if p.At == "verify" {
		return "top-level"
	}
	return dnslabel.Sanitize(strings.TrimSuffix(p.At, ".verify"), 40)
}

func (r *renderer) enforce() bool { return r.in.Spec.Mode != v1alpha1.AdmissionAudit }

// kyverno is one ClusterPolicy with a rule per verify policy: Kyverno
// admits an image only when every rule whose imageReferences match it
// passes (the union lock applies), and a rule's attestor entries are
// alternatives (count 1: any key of the policy). The rules are of
// Kyverno's default type, Cosign, which reads cosign's tag-scheme
// signatures; Render refuses keyless policies (keylessUnsupported).
func (r *renderer) kyverno() ([]*unstructured.Unstructured, error) {
	action := "Enforce"
	if !r.enforce() {
		action = "Audit"
	}
	var rules []any
	for i, p := range r.pols {
		var refs []any
		for _, im := range p.Images {
			for _, g := range Globs(im.Site) {
				refs = append(refs, g)
			}
		}
		var entries []any
		keys, err := r.keys(p)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			entries = append(entries, map[string]any{"keys": map[string]any{
				"publicKeys": k,
				"rekor":      map[string]any{"ignoreTlog": true},
				"ctlog":      map[string]any{"ignoreSCT": true},
			}})
		}
		rules = append(rules, map[string]any{
			"name":  "verify-" + r.names[i],
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}}}}},
			"verifyImages": []any{map[string]any{
				"imageReferences": refs,
				"failureAction":   action,
				"mutateDigest":    false,
				"verifyDigest":    true,
				"required":        true,
				"attestors":       []any{map[string]any{"count": int64(1), "entries": entries}},
			}},
		})
	}
	return []*unstructured.Unstructured{r.object("kyverno.io/v1", "ClusterPolicy", r.name, "", map[string]any{
		"spec": map[string]any{
			"background":            false,
			"webhookTimeoutSeconds": int64(30),
			"rules":                 rules,
		},
	})}, nil
}

// kyvernoIVPol is one Kyverno ImageValidatingPolicy
// (policies.kyverno.io/v1) per verify policy, named like the
// policy-controller policies: Kyverno admits a pod only when every policy
// whose matchImageReferences match one of its images passes (the union
// lock applies). Each matches the pods created or updated, considers the
// images of the policy's repositories (matchImageReferences, the same
// globs as the ClusterPolicy's), and has an attestor per key (cosign,
// no transparency log or SCT, as lock verifies) of which any may verify
// each image (verifyImageSignatures counts those that did). Kyverno's
// cosign verifier reads a Sigstore bundle referrer when the digest has one
// and cosign's tag scheme otherwise. Keyless policies are refused
// before (keylessUnsupported).
func (r *renderer) kyvernoIVPol() ([]*unstructured.Unstructured, error) {
	action := "Deny"
	if !r.enforce() {
		action = "Audit"
	}
	var out []*unstructured.Unstructured
	for i, p := range r.pols {
		var refs []any
		for _, im := range p.Images {
			for _, g := range Globs(im.Site) {
				refs = append(refs, map[string]any{"glob": g})
			}
		}
		keys, err := r.keys(p)
		if err != nil {
			return nil, err
		}
		var attestors []any
		var names []string
		for j, k := range keys {
			n := fmt.Sprintf("key%d", j)
			names = append(names, "attestors."+n)
			attestors = append(attestors, map[string]any{"name": n, "cosign": map[string]any{
				"key":   map[string]any{"data": k, "hashAlgorithm": "sha256"},
				"ctlog": map[string]any{"insecureIgnoreTlog": true, "insecureIgnoreSCT": true},
			}})
		}
		expr := fmt.Sprintf("images.all(kind, images[kind].all(image, verifyImageSignatures(image, [%s]) > 0))", strings.Join(names, ", "))
		out = append(out, r.object("policies.kyverno.io/v1", "ImageValidatingPolicy", r.name+"-"+r.names[i], "", map[string]any{
			"spec": map[string]any{
				"validationActions":    []any{action},
				"failurePolicy":        "Fail",
				"webhookConfiguration": map[string]any{"timeoutSeconds": int64(30)},
				"evaluation":           map[string]any{"background": map[string]any{"enabled": false}},
				"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
					"apiGroups":   []any{""},
					"apiVersions": []any{"v1"},
					"operations":  []any{"CREATE", "UPDATE"},
					"resources":   []any{"pods"},
				}}},
				"matchImageReferences":     refs,
				"validationConfigurations": map[string]any{"mutateDigest": false, "verifyDigest": true, "required": true},
				"attestors":                attestors,
				"validations": []any{map[string]any{
					"expression": expr,
					"message":    "the image has no signature by a key of its stowage verify policy (profile " + r.in.Profile + ")",
				}},
			},
		}))
	}
	return out, nil
}

// policyController is one ClusterImagePolicy per verify policy (an image
// every policy-controller policy matches must pass each: the union) with
// an authority per key or identity (any of them), and for keyless
// policies a TrustRoot carrying the trusted root's keys, which the
// authorities name: nothing is fetched from a TUF mirror.
func (r *renderer) policyController() ([]*unstructured.Unstructured, error) {
	mode := "enforce"
	if !r.enforce() {
		mode = "warn"
	}
	var roots, cips []*unstructured.Unstructured
	for i, p := range r.pols {
		name := r.name + "-" + r.names[i]
		var images []any
		for _, im := range p.Images {
			for _, g := range Globs(pcRepo(im.Site)) {
				images = append(images, map[string]any{"glob": g})
			}
		}
		var auths []any
		keys, err := r.keys(p)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			auths = append(auths, map[string]any{"name": fmt.Sprintf("key-%d", i), "key": map[string]any{"data": k, "hashAlgorithm": "sha256"}})
		}
		if len(p.Verify.Identities) > 0 {
			t, err := r.trustedRoot(p)
			if err != nil {
				return nil, err
			}
			roots = append(roots, r.trustRoot(name, t))
			var ids []any
			for _, id := range p.Verify.Identities {
				m := map[string]any{}
				set := func(k, v string) {
					if v != "" {
						m[k] = v
					}
				}
				set("subject", id.Identity)
				set("subjectRegExp", id.IdentityRegexp)
				set("issuer", id.Issuer)
				set("issuerRegExp", id.IssuerRegexp)
				ids = append(ids, m)
			}
			kl := map[string]any{"identities": ids, "trustRootRef": name}
			if len(t.ctlogs) == 0 {
				kl["insecureIgnoreSCT"] = true
			}
			a := map[string]any{"name": "keyless", "keyless": kl, "signatureFormat": "bundle"}
			if len(t.tlogs) > 0 {
				a["ctlog"] = map[string]any{"url": t.tlogs[0].url, "trustRootRef": name}
			}
			if len(t.tsas) > 0 {
				a["rfc3161timestamp"] = map[string]any{"trustRootRef": name}
			}
			auths = append(auths, a)
		}
		cips = append(cips, r.object("policy.sigstore.dev/v1beta1", "ClusterImagePolicy", name, "", map[string]any{
			"spec": map[string]any{"images": images, "authorities": auths, "mode": mode},
		}))
	}
	return append(roots, cips...), nil
}

// pcRepo is repo as policy-controller matches it: go-containerregistry's
// name, Docker Hub as index.docker.io.
func pcRepo(repo string) string {
	if rest, ok := strings.CutPrefix(repo, "docker.io/"); ok {
		return "index.docker.io/" + rest
	}
	return repo
}

func (r *renderer) trustRoot(name string, t *trust) *unstructured.Unstructured {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cas := func(as []authority) []any {
		var out []any
		for _, a := range as {
			out = append(out, map[string]any{
				"subject":   map[string]any{"organization": a.org, "commonName": a.cn},
				"uri":       a.uri,
				"certChain": b64(a.chain),
			})
		}
		return out
	}
	logs := func(ls []tlog) []any {
		var out []any
		for _, l := range ls {
			out = append(out, map[string]any{"baseURL": l.url, "hashAlgorithm": "sha-256", "publicKey": b64(l.pub)})
		}
		return out
	}
	keys := map[string]any{"certificateAuthorities": cas(t.cas)}
	if len(t.tlogs) > 0 {
		keys["tLogs"] = logs(t.tlogs)
	}
	if len(t.ctlogs) > 0 {
		keys["ctLogs"] = logs(t.ctlogs)
	}
	if len(t.tsas) > 0 {
		keys["timestampAuthorities"] = cas(t.tsas)
	}
	return r.object("policy.sigstore.dev/v1alpha1", "TrustRoot", name, "", map[string]any{"spec": map[string]any{"sigstoreKeys": keys}})
}

// CRIOKey is the key of the CRI-O ConfigMap's policy fragment.
const CRIOKey = "policy.json"

// crio is a ConfigMap holding a containers-policy.json whose docker
// transport has, for each site repository, a sigstoreSigned requirement
// per verify policy (containers-image requires each of a scope's
// requirements: the union) whose signedIdentity is exactRepository, the
// signed repository: cosign's signatures name the repository alone, which
// containers-image's remapIdentity (and every identity but matchRepository
// and exactRepository) refuses, so the scope, which is the site
// repository, does the remapping. A policy's keys are alternatives
// (keyDatas); keyless policies are refused before (keylessUnsupported).
// Its default accepts
// anything: the fragment constrains the profile's images only, and is
// merged into the node's /etc/containers/policy.json.
func (r *renderer) crio() ([]*unstructured.Unstructured, error) {
	if !r.enforce() {
		return nil, fmt.Errorf("mode audit: CRI-O's policy.json has no audit mode; leave crio out of kinds, or use mode enforce")
	}
	scopes := map[string][]any{}
	for _, p := range r.pols {
		req := map[string]any{"type": "sigstoreSigned"}
		keys, err := r.keys(p)
		if err != nil {
			return nil, err
		}
		// Render refused identities for crio (keylessUnsupported), so
		// the policy's keys are what it verifies with.
		var datas [][]byte
		for _, k := range keys {
			datas = append(datas, []byte(k))
		}
		if len(datas) == 1 {
			req["keyData"] = datas[0]
		} else {
			req["keyDatas"] = datas
		}
		for _, im := range p.Images {
			rq := map[string]any{}
			for k, v := range req {
				rq[k] = v
			}
			rq["signedIdentity"] = map[string]any{"type": "exactRepository", "dockerRepository": im.Signed}
			scopes[im.Site] = append(scopes[im.Site], rq)
		}
	}
	doc := map[string]any{
		"default":    []any{map[string]any{"type": "insecureAcceptAnything"}},
		"transports": map[string]any{"docker": scopes},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{r.object("v1", "ConfigMap", r.name+"-crio", r.in.Namespace, map[string]any{
		"data": map[string]any{CRIOKey: buf.String()},
	})}, nil
}
