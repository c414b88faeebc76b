package mirror

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/sigverify"
	"github.com/stowage/stowage/internal/trustfile"
)

// SiteTrustEnv is the environment variable naming the site trust file
// (v1alpha1.SiteTrust) when `mirror --from` is given no --trust.
const SiteTrustEnv = v1alpha1.SiteTrustEnv

// SiteTrust is the trust a site operator keeps outside any bundle
// (v1alpha1.SiteTrust), loaded: the policy every image pushed from a
// bundle is verified under at the site.
type SiteTrust struct {
	// Path is the file it was read from, Digest its content's digest:
	// what the reports name.
	Path, Digest string
	// Policy is the file's verify policy with its keys and trusted root
	// read (At is "site trust PATH").
	Policy *sigverify.Policy
	// Unverified are the lock keys the operator accepts unsigned.
	Unverified map[string]bool
}

// LoadSiteTrust reads the site trust file at path: at most
// trustfile.SiteTrust bytes, a regular file, strict YAML or JSON of
// apiVersion stowage.dev/v1alpha1, kind SiteTrust, whose verify policy
// names keys (each once) or identities (identities with a trusted root), its files
// read relative to the file's directory, confined to it and bounded as a
// config's (trustfile). Errors name the file and the field.
func LoadSiteTrust(path string) (*SiteTrust, error) {
	data, err := confined.ReadPath(path, trustfile.SiteTrust)
	if err != nil {
		return nil, err
	}
	return ParseSiteTrust(data, path, filepath.Dir(path))
}

// ReadSiteTrust is LoadSiteTrust of path, or of r (standard input) when
// path is "-": then under the same bound, its files read relative to the
// working directory.
func ReadSiteTrust(r io.Reader, path string) (*SiteTrust, error) {
	if path != confined.Stdin {
		return LoadSiteTrust(path)
	}
	data, err := confined.ReadStream(r, path, trustfile.SiteTrust)
	if err != nil {
		return nil, err
	}
	return ParseSiteTrust(data, path, ".")
}

// ParseSiteTrust is LoadSiteTrust of data already read (at most
// trustfile.SiteTrust bytes), named path in messages and the reports, its
// keys and trusted root read relative to dir: for `--trust -`, standard
// input, with dir the working directory.
func ParseSiteTrust(data []byte, path, dir string) (*SiteTrust, error) {
	var doc v1alpha1.SiteTrust
	if err := sigsyaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("site trust %s: %v", path, err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("site trust %s: "+format, append([]any{path}, args...)...)
	}
	v := doc.Verify
	switch {
	case doc.APIVersion != v1alpha1.APIVersion || doc.Kind != v1alpha1.SiteTrustKind:
		return nil, fail("apiVersion %q, kind %q: want %s, %s", doc.APIVersion, doc.Kind, v1alpha1.APIVersion, v1alpha1.SiteTrustKind)
	case v.Mode != "" && v.Mode != v1alpha1.VerifyRequired && v.Mode != v1alpha1.VerifyOptional:
		return nil, fail("verify.mode %q: want %s or %s", v.Mode, v1alpha1.VerifyRequired, v1alpha1.VerifyOptional)
	case len(v.Keys) == 0 && len(v.Identities) == 0:
		return nil, fail("verify: give keys or identities (with a trustedRoot): a site trust that trusts no signer verifies nothing")
	case len(v.Identities) > 0 && v.TrustedRoot == "":
		return nil, fail("verify.identities need verify.trustedRoot")
	}
	// Each key once, as the config's schema has it (schema.checkVerify).
	first := map[string]int{}
	for i, k := range v.Keys {
		if j, ok := first[k]; ok {
			return nil, fail("verify.keys[%d]: key %q is listed twice (keys[%d] too); list each key once", i, k, j)
		}
		first[k] = i
	}
	pol, err := sigverify.LoadPolicy(dir, "site trust "+path, &v)
	if err != nil {
		return nil, err
	}
	st := &SiteTrust{Path: path, Digest: digestOf(data).String(), Policy: pol, Unverified: map[string]bool{}}
	for _, u := range doc.Unverified {
		st.Unverified[u] = true
	}
	return st, nil
}

// SitePolicies are the verify policies a push from the bundle at path
// verifies the site's copy of its images under, by lock key, and the
// bundle's own trust material (nil when it carries none). images are the
// bundle's (BundleImages), lockBytes its lock.
//
// With st (the site's own trust), every image but the attachments and
// st.Unverified must be under a policy of the bundle's trust material
// that is no weaker than st (required when st is) and trusts no signer st
// does not (its keys and trusted root among st's by content, its
// identities among st's), and its lock entry must record a signer st
// trusts; then it is verified under st.Policy alone. Otherwise the
// bundle's own policies are used (nothing authenticates them: whoever
// wrote the bundle chose them), still refusing a bundle whose lock and
// trust material disagree: a signer recorded that a required policy of
// the image does not trust, or a signer recorded for an image under no
// policy (an entry removed from the trust map). Either way, an image
// under a required policy must still carry every attachment the bundle
// recorded for it when it was written (Image.Carried). Errors list every
// image refused, with why; nothing is pushed then.
func SitePolicies(path string, images []Image, lockBytes []byte, st *SiteTrust) (map[string][]*sigverify.Policy, *Trust, error) {
	t, err := BundleTrust(path)
	if err != nil {
		return nil, nil, err
	}
	var l *lock.Lock
	if lockBytes != nil {
		if l, err = lock.Parse(lockBytes, "oci:"+path+"/"+BundleLock); err != nil {
			return nil, nil, err
		}
	}
	pols, err := bundlePolicies(path, t)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	names := map[string]bool{}
	have := map[string]bool{}
	for _, img := range images {
		if a := img.Attachment; a != nil {
			have[img.Name+"\x00"+Carried{Kind: a.Kind, Subject: a.Subject, Digest: img.Digest}.String()] = true
		}
	}
	// missing is the first attachment recorded for img that the bundle
	// no longer holds, for an image under a required policy.
	missing := func(img Image) string {
		for _, c := range img.Carried {
			if !have[img.Name+"\x00"+c.String()] {
				return fmt.Sprintf("image %s: its %s %s of %s, which the bundle recorded when it was written, is not in the bundle", img.Name, c.Kind, c.Digest, c.Subject)
			}
		}
		return ""
	}
	required := func(pols []*sigverify.Policy) bool {
		return slices.ContainsFunc(pols, func(p *sigverify.Policy) bool { return p.Required })
	}
	for _, img := range images {
		if img.Attachment != nil {
			continue
		}
		if required(pols[img.Name]) || (st != nil && st.Policy.Required && !st.Unverified[img.Name]) {
			if m := missing(img); m != "" {
				problems = append(problems, m)
			}
		}
		names[img.Name] = true
		// index.json names the manifest pushed; the lock, what was
		// verified when the bundle was written: a descriptor pointed at
		// another image (another signed one, say) is refused.
		if e, ok := l.Lookup(img.Name); ok && e.Digest != img.Digest.String() && !slices.ContainsFunc(e.Platforms, func(p lock.Platform) bool { return p.Digest == img.Digest.String() }) {
			problems = append(problems, fmt.Sprintf("image %s: index.json points at %s, the bundle's lock pins %s", img.Name, img.Digest, e.Digest))
		}
	}
	if st == nil {
		for _, image := range slices.Sorted(maps.Keys(names)) {
			e, ok := l.Lookup(image)
			if !ok {
				continue
			}
			if len(pols[image]) == 0 && e.VerifiedBy != nil {
				problems = append(problems, fmt.Sprintf("image %s: the lock records %s, but the bundle's trust material has no verify policy for it (removed from the bundle, or the bundle was written with --no-verify: push it with --no-verify to push it unverified)", image, signerWords(e.VerifiedBy)))
			}
			for _, pol := range pols[image] {
				if pol.Required && !pol.Trusts(e.VerifiedBy) {
					problems = append(problems, fmt.Sprintf("image %s: the lock records %s, which its policy %s does not trust", image, signerWords(e.VerifiedBy), pol.At))
				}
			}
		}
		if len(problems) > 0 {
			return nil, nil, fmt.Errorf("oci:%s: the bundle's index.json, lock and trust material disagree; nothing pushed; write the bundle again from one config and its lock:\n  %s", path, strings.Join(problems, "\n  "))
		}
		return pols, t, nil
	}
	site := map[string][]*sigverify.Policy{}
	for _, image := range slices.Sorted(maps.Keys(names)) {
		if st.Unverified[image] {
			continue
		}
		site[image] = []*sigverify.Policy{st.Policy}
		if t == nil {
			problems = append(problems, fmt.Sprintf("image %s: the bundle carries no trust material (no verify policy at all)", image))
			continue
		}
		tps := t.For(image)
		if len(tps) == 0 {
			problems = append(problems, fmt.Sprintf("image %s: the bundle's trust material has no verify policy for it", image))
		}
		for _, tp := range tps {
			problems = append(problems, st.compare(image, tp)...)
		}
		e, ok := l.Lookup(image)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("image %s: the bundle's lock has no entry for it", image))
		case !st.Policy.Trusts(e.VerifiedBy):
			problems = append(problems, fmt.Sprintf("image %s: the lock records %s, which the site trust does not trust", image, signerWords(e.VerifiedBy)))
		}
	}
	if len(problems) > 0 {
		return nil, nil, fmt.Errorf("oci:%s: refused by the site trust %s; nothing pushed:\n  %s", path, st.Path, strings.Join(problems, "\n  "))
	}
	return site, t, nil
}

// compare says how the bundle's policy tp of image is weaker than st or
// trusts what st does not: one line each, naming the image and the field.
func (st *SiteTrust) compare(image string, tp TrustPolicy) []string {
	var out []string
	say := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("image %s: the bundle's policy %s ", image, tp.At)+fmt.Sprintf(format, args...))
	}
	sp := st.Policy
	if sp.Required && !tp.Verify.Required() {
		say("is optional; the site trust is required")
	}
	if len(tp.Verify.Keys) == 0 && len(tp.Verify.Identities) == 0 {
		say("trusts no signer")
	}
	siteKeys := map[string]bool{}
	for _, k := range sp.Spec.Keys {
		siteKeys[digestOf(sp.Files[k]).String()] = true
	}
	for i, k := range tp.Verify.Keys {
		if !siteKeys[tp.Files[k]] {
			say("trusts keys[%d] %s (%s), a key the site trust does not hold", i, k, tp.Files[k])
		}
	}
	for i, id := range tp.Verify.Identities {
		if !slices.Contains(sp.Spec.Identities, id) {
			say("trusts identities[%d] (identity %q%s, issuer %q%s), which the site trust does not", i, id.Identity, regexpWords(id.IdentityRegexp), id.Issuer, regexpWords(id.IssuerRegexp))
		}
	}
	if r := tp.Verify.TrustedRoot; r != "" && (sp.Spec.TrustedRoot == "" || tp.Files[r] != digestOf(sp.Files[sp.Spec.TrustedRoot]).String()) {
		say("trusts the trusted root %s (%s), not the site trust's", r, tp.Files[r])
	}
	return out
}

func regexpWords(re string) string {
	if re == "" {
		return ""
	}
	return fmt.Sprintf(" or matching %q", re)
}

// bundlePolicies loads t's policies (their files are the bundle's,
// checked against their digests by BundleTrust), by image.
func bundlePolicies(path string, t *Trust) (map[string][]*sigverify.Policy, error) {
	pols := map[string][]*sigverify.Policy{}
	if t == nil {
		return pols, nil
	}
	loaded := map[int]*sigverify.Policy{}
	for _, image := range slices.Sorted(maps.Keys(t.Images)) {
		for _, i := range t.Images[image] {
			pol, ok := loaded[i]
			if !ok {
				tp := t.Policies[i]
				var err error
				pol, err = sigverify.PolicyFrom(tp.At, &tp.Verify, func(file string, k confined.Kind) ([]byte, error) {
					return tp.Content[file], nil
				})
				if err != nil {
					return nil, fmt.Errorf("oci:%s: trust material: %w", path, err)
				}
				loaded[i] = pol
			}
			pols[image] = append(pols[image], pol)
		}
	}
	return pols, nil
}

func signerWords(s *lock.Signer) string {
	switch {
	case s == nil:
		return "no signer"
	case s.Key != "":
		return "signer key " + s.Key
	default:
		return "signer " + s.Identity + " (" + s.Issuer + ")"
	}
}
