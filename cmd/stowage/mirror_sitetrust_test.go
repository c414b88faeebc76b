package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/internal/testing/testbin"
)

// siteTrustSetup is a signed bundle and a site registry that already
// holds an older image under one of its tags.
type siteTrustSetup struct {
	bundle, trustFile string
	// dir is the config directory the bundle was written from.
	dir      string
	site     *registrytest.Distribution
	insecure []string
	// names are the lock keys; digests the bundle's digest of each;
	// siteRepo each one's site repository.
	names    map[string]string
	digests  map[string]v1.Hash
	siteRepo map[string]name.Repository
	// oldA is the digest the site's tag of image a points at before.
	oldA v1.Hash
	// strangerRoot is another sigstore's trusted root.
	strangerRoot []byte
}

// newSiteTrustSetup locks images a and b and the helper, each signed
// keyless (sigstore-go's virtual sigstore, as an OCI referrer), under the
// config's top-level verify policy, writes a bundle of them, and a site
// trust file trusting the same identity and trusted root; the site holds
// an older image under a's tag.
func newSiteTrustSetup(t *testing.T) *siteTrustSetup {
	t.Helper()
	s := &siteTrustSetup{names: map[string]string{}, digests: map[string]v1.Hash{}, siteRepo: map[string]name.Repository{}}
	src := registrytest.Start(t, registrytest.Options{})
	s.site = registrytest.Start(t, registrytest.Options{})
	s.insecure = []string{"--insecure-registry", src.Host, "--insecure-registry", s.site.Host}
	repo, err := name.NewRepository(src.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	vs := cosigntest.VirtualSigstore(t)
	s.strangerRoot = cosigntest.TrustedRootJSON(t, cosigntest.VirtualSigstore(t))
	for _, tag := range []string{"a", "b", "helper"} {
		d := registrytest.PushRandom(t, repo.Tag(tag))
		cosigntest.AttachBundle(t, repo, d, cosigntest.KeylessBundle(t, vs, testIdentity, testIssuer, d.Digest))
		s.names[tag], s.digests[tag] = repo.Tag(tag).Name(), d.Digest
		to, err := (site.Mapping{Default: s.site.Host + "/site"}).Repository(repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		s.siteRepo[tag] = to
	}
	dir := t.TempDir()
	rootJSON := cosigntest.TrustedRootJSON(t, vs)
	writeFile(t, filepath.Join(dir, "trust", "trusted_root.json"), rootJSON)
	writeFile(t, filepath.Join(dir, "stowage.yaml"), fmt.Appendf(nil, `images:
  a: {reference: %q}
  b: {reference: %q}
helper: {image: %q}
profiles:
  p:
    pullers: [{name: pre, namespace: pre, images: [a, b]}]
verify:
  identities: [{identity: %q, issuer: %q}]
  trustedRoot: trust/trusted_root.json
`, s.names["a"], s.names["b"], s.names["helper"], testIdentity, testIssuer))
	if _, stderr, code := runCLI(t, nil, append([]string{"lock", dir, "-q"}, s.insecure...)...); code != 0 {
		t.Fatalf("lock exit %d:\n%s", code, stderr)
	}
	s.dir = dir
	s.bundle = filepath.Join(t.TempDir(), "bundle")
	if _, stderr, code := runCLI(t, nil, append([]string{"mirror", dir, "--to", "oci:" + s.bundle, "-q"}, s.insecure...)...); code != 0 {
		t.Fatalf("bundle: exit %d\n%s", code, stderr)
	}
	siteDir := t.TempDir()
	writeFile(t, filepath.Join(siteDir, "root.json"), rootJSON)
	s.trustFile = filepath.Join(siteDir, "site-trust.yaml")
	writeFile(t, s.trustFile, fmt.Appendf(nil, `apiVersion: stowage.dev/v1alpha1
kind: SiteTrust
verify:
  identities: [{identity: %q, issuer: %q}]
  trustedRoot: root.json
`, testIdentity, testIssuer))
	s.oldA = registrytest.PushRandom(t, s.siteRepo["a"].Tag("a")).Digest
	return s
}

// tagAt is the digest tag points at in repo, or the zero hash.
func tagAt(t *testing.T, ref name.Reference) v1.Hash {
	t.Helper()
	d, err := remote.Head(ref)
	if err != nil {
		return v1.Hash{}
	}
	return d.Digest
}

// bundleCopy copies the bundle to a new directory, every file writable.
func (s *siteTrustSetup) bundleCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dir, os.DirFS(s.bundle)); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chmod(p, 0o644)
		}
		return err
	})
	return dir
}

// index edits the bundle's index.json.
func editIndex(t *testing.T, dir string, edit func(ix *v1.IndexManifest)) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ix v1.IndexManifest
	if err := json.Unmarshal(raw, &ix); err != nil {
		t.Fatal(err)
	}
	edit(&ix)
	out, err := json.Marshal(ix)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "index.json"), out)
}

// putBlob writes data as a blob of the bundle and returns its descriptor.
func putBlob(t *testing.T, dir string, data []byte, mt string) v1.Descriptor {
	t.Helper()
	h, size, err := v1.SHA256(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "blobs", "sha256", h.Hex), data)
	return v1.Descriptor{MediaType: "application/octet-stream", Digest: h, Size: size}
}

// editTrust rewrites the bundle's trust material consistently (every
// digest recomputed, as a forger would): edit changes the policy
// document, and may swap a file's content (old digest to new bytes).
func editTrust(t *testing.T, dir string, edit func(doc map[string]any, swap func(old string, data []byte))) {
	t.Helper()
	editIndex(t, dir, func(ix *v1.IndexManifest) {
		for i, d := range ix.Manifests {
			if d.Annotations[mirror.AnnotationTrust] == "" {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", d.Digest.Hex))
			if err != nil {
				t.Fatal(err)
			}
			var m v1.Manifest
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			docRaw, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", m.Config.Digest.Hex))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(docRaw, &doc); err != nil {
				t.Fatal(err)
			}
			edit(doc, func(old string, data []byte) {
				nd := putBlob(t, dir, data, "")
				for j, l := range m.Layers {
					if l.Digest.String() == old {
						m.Layers[j].Digest, m.Layers[j].Size = nd.Digest, nd.Size
					}
				}
				for _, p := range doc["policies"].([]any) {
					files := p.(map[string]any)["files"].(map[string]any)
					for k, v := range files {
						if v == old {
							files[k] = nd.Digest.String()
						}
					}
				}
			})
			docRaw, _ = json.Marshal(doc)
			nd := putBlob(t, dir, docRaw, "")
			m.Config.Digest, m.Config.Size = nd.Digest, nd.Size
			raw, _ = json.Marshal(m)
			nm := putBlob(t, dir, raw, "")
			ix.Manifests[i].Digest, ix.Manifests[i].Size = nm.Digest, nm.Size
			return
		}
		t.Fatal("the bundle has no trust material")
	})
}

// trustedRootDigest is the digest of the trusted root the bundle's trust
// material holds.
func trustedRootDigest(doc map[string]any) string {
	for _, p := range doc["policies"].([]any) {
		pm := p.(map[string]any)
		root := pm["verify"].(map[string]any)["trustedRoot"].(string)
		return pm["files"].(map[string]any)[root].(string)
	}
	return ""
}

// setAnn sets (or, with value "", deletes) annotation key on the image
// descriptor (not an attachment) of the bundle at dir whose lock key is
// image (and digest, when given).
func setAnn(t *testing.T, dir, image, digest, key, value string) {
	t.Helper()
	editIndex(t, dir, func(ix *v1.IndexManifest) {
		for i, d := range ix.Manifests {
			a := d.Annotations
			if a[mirror.AnnotationRefName] != image || a[mirror.AnnotationAttachment] != "" || (digest != "" && d.Digest.String() != digest) {
				continue
			}
			if value == "" {
				delete(a, key)
			} else {
				a[key] = value
			}
			ix.Manifests[i].Annotations = a
			return
		}
		t.Fatalf("no descriptor of %s", image)
	})
}

// TestMirrorFromBundleHoldsSiteTrust: a bundle made hostile after it was
// written (trust material removed, weakened to optional, its trusted root
// swapped for another sigstore's, one image removed from the trust map,
// an image's descriptor pointed at another signed image, its signature
// dropped (refused before the push: the bundle recorded it), its
// signature and that record dropped (caught at the site after the push
// by digest, before the tag), a manifest's bytes replaced by another
// image's) is refused
// by the push with the site's own trust (--trust, or STOWAGE_SITE_TRUST):
// exit 1, a message naming the image, the site's tag of that image still
// at its former digest, and, where the bundle is refused before the
// push, the image's digest not at the site at all. Without a site trust
// a warning says the bundle's own trust is unauthenticated, and a removed
// trust entry or trust material is still refused. --dry-run checks the
// bundle at the site, its signatures included (read from the bundle),
// exits 1 for each hostile bundle and pushes nothing. The reports name the trust used.
func TestMirrorFromBundleHoldsSiteTrust(t *testing.T) {
	t.Parallel()
	s := newSiteTrustSetup(t)
	aRef, aDigest := s.siteRepo["a"].Tag("a"), s.siteRepo["a"].Digest(s.digests["a"].String())
	push := func(bundle string, extra ...string) ([]byte, string, int) {
		t.Helper()
		return runCLI(t, nil, append(append([]string{"mirror", "--from", "oci:" + bundle, "--to", s.site.Host + "/site", "-q"}, s.insecure...), extra...)...)
	}
	unchanged := func(what string, pushed bool) {
		t.Helper()
		if got := tagAt(t, aRef); got != s.oldA {
			t.Errorf("%s: the site's tag a points at %s, want its former %s", what, got, s.oldA)
		}
		if _, err := remote.Head(aDigest); !pushed && err == nil {
			t.Errorf("%s: the bundle's image a is at the site: something was pushed", what)
		}
	}
	// outside is an image the bundle does not carry.
	outside := registrytest.PushRandom(t, s.siteRepo["b"].Tag("db")).Digest
	srcHost, _, _ := strings.Cut(s.names["a"], "/")
	type hostile struct {
		name   string
		edit   func(dir string)
		want   []string // in stderr
		before bool     // refused before anything is pushed
		// bundleTrust: also refused without a site trust.
		bundleTrust bool
	}
	cases := []hostile{
		{"trust removed", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				var keep []v1.Descriptor
				for _, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationTrust] == "" {
						keep = append(keep, d)
					}
				}
				ix.Manifests = keep
			})
		}, []string{"image " + s.names["a"] + ": the bundle carries no trust material"}, true, true},
		{"weakened to optional", func(dir string) {
			editTrust(t, dir, func(doc map[string]any, _ func(string, []byte)) {
				for _, p := range doc["policies"].([]any) {
					p.(map[string]any)["verify"].(map[string]any)["mode"] = "optional"
				}
			})
		}, []string{"image " + s.names["a"] + ": the bundle's policy verify is optional; the site trust is required"}, true, false},
		{"trusted root swapped", func(dir string) {
			editTrust(t, dir, func(doc map[string]any, swap func(string, []byte)) {
				swap(trustedRootDigest(doc), s.strangerRoot)
			})
		}, []string{"image " + s.names["a"] + ": the bundle's policy verify trusts the trusted root trust/trusted_root.json (sha256:", "not the site trust's"}, true, false},
		{"image removed from the trust map", func(dir string) {
			editTrust(t, dir, func(doc map[string]any, _ func(string, []byte)) {
				delete(doc["images"].(map[string]any), s.names["a"])
			})
		}, []string{"image " + s.names["a"] + ": the bundle's trust material has no verify policy for it"}, true, true},
		// Where an image goes is the lock's, not index.json's.
		{"image sent to another repository", func(dir string) {
			setAnn(t, dir, s.names["a"], "", mirror.AnnotationSite, s.site.Host+"/prod/critical")
		}, []string{"image " + s.names["a"] + ": index.json's " + mirror.AnnotationSite + " \"" + s.site.Host + "/prod/critical\" is not where the site rule puts its lock reference", "nothing pushed"}, true, true},
		{"image retagged", func(dir string) {
			setAnn(t, dir, s.names["a"], "", mirror.AnnotationTag, "latest")
		}, []string{"image " + s.names["a"] + ": index.json's " + mirror.AnnotationTag + " \"latest\": its lock reference's tag is \"a\"", "nothing pushed"}, true, true},
		{"image renamed to a key the lock lacks", func(dir string) {
			setAnn(t, dir, s.names["a"], "", mirror.AnnotationReference, "")
			setAnn(t, dir, s.names["a"], "", mirror.AnnotationRefName, srcHost+"/lib/critical:a")
		}, []string{"image " + srcHost + "/lib/critical:a: index.json's " + mirror.AnnotationRefName + " names no entry of the bundle's lock", "nothing pushed"}, true, true},
		{"image's bytes sent under another locked name", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				var keep []v1.Descriptor
				for _, d := range ix.Manifests {
					a := d.Annotations
					switch {
					case a[mirror.AnnotationAttachment] != "":
					case a[mirror.AnnotationRefName] == s.names["helper"]:
						continue
					case a[mirror.AnnotationRefName] == s.names["a"]:
						a[mirror.AnnotationRefName], a[mirror.AnnotationTag] = s.names["helper"], "helper"
						delete(a, mirror.AnnotationReference)
					}
					keep = append(keep, d)
				}
				ix.Manifests = keep
			})
		}, []string{"image " + s.names["helper"] + ": index.json points at " + s.digests["a"].String() + ", the bundle's lock pins " + s.digests["helper"].String(), "nothing pushed"}, true, true},
		{"reference annotation naming another image", func(dir string) {
			setAnn(t, dir, s.names["a"], "", mirror.AnnotationReference, s.names["b"])
		}, []string{"image " + s.names["a"] + ": index.json's " + mirror.AnnotationReference + " \"" + s.names["b"] + "\" is not a reference to it"}, true, true},
		{"attachment bound to an image outside the bundle", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				for _, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationSubject] == s.digests["a"].String() {
						d.Annotations = maps.Clone(d.Annotations)
						d.Annotations[mirror.AnnotationSubject] = outside.String()
						ix.Manifests = append(ix.Manifests, d)
						return
					}
				}
				t.Fatal("no attachment of a")
			})
		}, []string{"of image " + s.names["a"] + ": index.json's " + mirror.AnnotationSubject + " " + outside.String() + " is neither the digest the bundle's lock pins", "nothing pushed"}, true, true},
		{"attachment sent to another repository", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				for i, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationSubject] == s.digests["a"].String() {
						ix.Manifests[i].Annotations[mirror.AnnotationRefName] = srcHost + "/prod/db:v1"
						ix.Manifests[i].Annotations[mirror.AnnotationReference] = ""
					}
				}
			})
		}, []string{"of image " + srcHost + "/prod/db:v1: index.json's " + mirror.AnnotationRefName + " names no entry of the bundle's lock", "nothing pushed"}, true, true},
		{"lock removed", func(dir string) {
			if err := os.Remove(filepath.Join(dir, mirror.BundleLock)); err != nil {
				t.Fatal(err)
			}
		}, []string{"the bundle holds no " + mirror.BundleLock + "; stowage writes one into every bundle", "nothing pushed"}, true, true},
		{"descriptor pointed at another signed image", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				var b v1.Descriptor
				for _, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationRefName] == s.names["b"] && d.Annotations[mirror.AnnotationAttachment] == "" {
						b = d
					}
				}
				for i, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationRefName] == s.names["a"] && d.Annotations[mirror.AnnotationAttachment] == "" {
						ix.Manifests[i].Digest, ix.Manifests[i].Size = b.Digest, b.Size
					}
				}
			})
		}, []string{"image " + s.names["a"] + ": index.json points at " + s.digests["b"].String() + ", the bundle's lock pins " + s.digests["a"].String()}, true, true},
		{"signature dropped", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				var keep []v1.Descriptor
				for _, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationSubject] != s.digests["a"].String() {
						keep = append(keep, d)
					}
				}
				ix.Manifests = keep
			})
		}, []string{"image " + s.names["a"] + ": its referrer sha256:", " of " + s.digests["a"].String() + ", which the bundle recorded when it was written, is not in the bundle"}, true, true},
		{"signature and its record dropped", func(dir string) {
			editIndex(t, dir, func(ix *v1.IndexManifest) {
				var keep []v1.Descriptor
				for _, d := range ix.Manifests {
					if d.Annotations[mirror.AnnotationSubject] != s.digests["a"].String() {
						delete(d.Annotations, mirror.AnnotationAttachments)
						keep = append(keep, d)
					}
				}
				ix.Manifests = keep
			})
		}, []string{s.names["a"], "verify signatures of " + s.siteRepo["a"].Tag("a").Name(), "(tag a not written)"}, false, true},
		{"manifest bytes replaced by another image's", func(dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", s.digests["b"].Hex))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "blobs", "sha256", s.digests["a"].Hex), b)
		}, []string{s.names["a"], s.digests["a"].String()}, false, true},
	}
	// In this order: a case that gets as far as the push leaves the
	// attachments of the images it pushed at the site (a signature
	// stored by digest, no image tag); "signature and its record
	// dropped" must come before them.
	for _, c := range cases {
		dir := s.bundleCopy(t)
		c.edit(dir)
		// --dry-run at the site: checked, nothing pushed.
		_, stderr, code := push(dir, "--trust", s.trustFile, "--dry-run")
		// Each names image a, or what it refuses instead (the lock,
		// another image's name).
		named := func(stderr string) bool {
			return strings.Contains(stderr, s.names["a"]) || strings.Contains(stderr, c.want[0])
		}
		if code != 1 || !named(stderr) || (c.before && !strings.Contains(stderr, c.want[0])) {
			t.Errorf("%s: --dry-run --trust: exit %d, want 1 naming the image:\n%s", c.name, code, stderr)
		}
		unchanged(c.name+" (--dry-run)", !c.before)
		// The push with the site trust, from the environment.
		stdout, stderr, code := runCLI(t, map[string]string{mirror.SiteTrustEnv: s.trustFile},
			append([]string{"mirror", "--from", "oci:" + dir, "--to", s.site.Host + "/site", "-q", "-o", "json"}, s.insecure...)...)
		all := stderr + string(stdout)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", c.name, code, all)
		}
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: the output lacks %q:\n%s", c.name, w, all)
			}
		}
		unchanged(c.name, !c.before)
		if c.bundleTrust {
			_, stderr, code := push(dir)
			if code != 1 || !named(stderr) {
				t.Errorf("%s, no site trust: exit %d, want 1 naming the image:\n%s", c.name, code, stderr)
			}
			unchanged(c.name+" (no site trust)", true)
		}
	}

	// An image the site trust accepts unsigned is bound to the lock
	// all the same: renamed to a key the lock lacks, it is refused.
	unverified := filepath.Join(filepath.Dir(s.trustFile), "unverified.yaml")
	trustDoc, err := os.ReadFile(s.trustFile)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, unverified, fmt.Appendf(trustDoc, "unverified: [%q]\n", srcHost+"/lib/critical:a"))
	renamed := s.bundleCopy(t)
	setAnn(t, renamed, s.names["a"], "", mirror.AnnotationReference, "")
	setAnn(t, renamed, s.names["a"], "", mirror.AnnotationRefName, srcHost+"/lib/critical:a")
	if _, stderr, code := push(renamed, "--trust", unverified); code != 1 ||
		!strings.Contains(stderr, "image "+srcHost+"/lib/critical:a: index.json's "+mirror.AnnotationRefName+" names no entry of the bundle's lock") {
		t.Errorf("an unlisted image the site trust accepts unsigned: exit %d, want 1\n%s", code, stderr)
	}
	critical, err := name.NewRepository(s.siteRepo["a"].RegistryStr()+"/site/"+strings.ReplaceAll(srcHost, ":", "_")+"/lib/critical", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if got := tagAt(t, critical.Tag("a")); got != (v1.Hash{}) {
		t.Errorf("refused, yet %s points at %s", critical.Tag("a"), got)
	}
	unchanged("an unlisted image the site trust accepts unsigned", true)

	// STOWAGE_SITE_TRUST is the site's environment: a mirror without
	// --from ignores it; --trust without --from is a usage error.
	if _, stderr, code := runCLI(t, map[string]string{mirror.SiteTrustEnv: s.trustFile},
		append([]string{"mirror", s.dir, "--to", "oci:" + filepath.Join(t.TempDir(), "again"), "-q"}, s.insecure...)...); code != 0 {
		t.Errorf("a bundle written with %s set: exit %d\n%s", mirror.SiteTrustEnv, code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "mirror", s.dir, "--to", "oci:"+filepath.Join(t.TempDir(), "again"), "--trust", s.trustFile); code != 2 ||
		!strings.Contains(stderr, "--trust is the site's trust for a push from a bundle") {
		t.Errorf("--trust without --from: exit %d, want 2\n%s", code, stderr)
	}

	// The bundle as written: --dry-run pushes nothing; the push with
	// the site trust tags every image and names the trust, and the
	// files it verifies with are the site trust's, not the bundle's.
	if stdout, stderr, code := push(s.bundle, "--trust", s.trustFile, "--dry-run"); code != 0 ||
		!strings.Contains(string(stdout), "signatures in the bundle: 3 of 3 checks verified at the site before the push, offline") ||
		!strings.Contains(string(stdout), "under their verify policies, offline (root.json sha256:") ||
		!strings.Contains(string(stdout), "trust: the site trust "+s.trustFile+" (sha256:") {
		t.Fatalf("--dry-run of the bundle as written: exit %d\n%s\n%s", code, stdout, stderr)
	}
	unchanged("the bundle as written (--dry-run)", true)
	// The site trust on standard input (--trust -), its files read from
	// the working directory.
	cmd := exec.Command(testbin.Stowage(t), append([]string{"mirror", "--from", "oci:" + s.bundle, "--to", s.site.Host + "/site", "-q", "--trust", "-", "--dry-run"}, s.insecure...)...)
	cmd.Dir, cmd.Env, cmd.Stdin = filepath.Dir(s.trustFile), []string{}, bytes.NewReader(readFile(t, s.trustFile))
	if out, err := cmd.CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "signatures in the bundle: 3 of 3 checks verified at the site before the push, offline") ||
		!strings.Contains(string(out), "trust: the site trust - (sha256:") {
		t.Errorf("--trust - --dry-run: %v\n%s", err, out)
	}
	stdout, stderr, code := push(s.bundle, "--trust", s.trustFile, "-o", "json")
	var rep v1alpha1.MirrorReport
	if err := json.Unmarshal(stdout, &rep); err != nil || code != 0 || !rep.OK {
		t.Fatalf("the bundle as written: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if st := rep.Plan.SiteTrust; st == nil || st.Source != "site" || st.File != s.trustFile || !strings.HasPrefix(st.Digest, "sha256:") || !st.Authenticated {
		t.Errorf("report's siteTrust %+v, want the site file", st)
	}
	if tf := rep.Plan.TrustFiles; len(tf) != 1 || tf[0].Policy != "site trust "+s.trustFile || tf[0].Path != "root.json" || !strings.HasPrefix(tf[0].Digest, "sha256:") {
		t.Errorf("plan.trustFiles %+v, want the site trust's root.json", tf)
	}
	if len(rep.Signatures) != 3 {
		t.Errorf("%d signature checks, want 3: %+v", len(rep.Signatures), rep.Signatures)
	}
	for _, sig := range rep.Signatures {
		if !sig.Verified || sig.Policy != "site trust "+s.trustFile || sig.Mode != "required" {
			t.Errorf("signature check %+v, want verified under the site trust", sig)
		}
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("a warning with the site trust:\n%s", stderr)
	}
	if got := tagAt(t, aRef); got != s.digests["a"] {
		t.Errorf("after the push the site's tag a points at %s, want %s", got, s.digests["a"])
	}
	// --no-verify pushes a bundle without trust material (one written
	// with --no-verify), as the operator asked.
	bare := s.bundleCopy(t)
	cases[0].edit(bare)
	if _, stderr, code := push(bare, "--no-verify"); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("no trust material, --no-verify: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := push(bare, "--no-verify", "--trust", s.trustFile); code != 2 || !strings.Contains(stderr, "contradict") {
		t.Errorf("--no-verify --trust: exit %d, want 2\n%s", code, stderr)
	}
	// Without a site trust: warned, and the text report says so.
	stdout, stderr, code = push(s.bundle)
	if code != 0 || !strings.Contains(stderr, "stowage: warning: no site trust (--trust FILE or "+mirror.SiteTrustEnv+")") ||
		!strings.Contains(string(stdout), "trust: the bundle's own trust material, unauthenticated") {
		t.Errorf("no site trust: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestMirrorFromBundleSiteTrustKeys: an image signed with a cosign key by
// the real cosign, locked and bundled under a policy of that key, is
// refused at a site whose trust holds another key (the bundle's key and
// the lock's signer named, exit 1, the site's tag untouched and nothing
// pushed), and at a site whose trust holds the same key checked with
// --dry-run (its cosign signatures read from the bundle) and pushed,
// verified under the site trust.
func TestMirrorFromBundleSiteTrustKeys(t *testing.T) {
	t.Parallel()
	cs := cosigntest.Lookup(t)
	src := registrytest.Start(t, registrytest.Options{})
	siteReg := registrytest.Start(t, registrytest.Options{})
	insecure := []string{"--insecure-registry", src.Host, "--insecure-registry", siteReg.Host}
	repo, err := name.NewRepository(src.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	key, pub := cs.KeyPair("release")
	_, otherPub := cs.KeyPair("other")
	imgs := map[string]v1.Hash{}
	for _, tag := range []string{"app", "helper"} {
		d := registrytest.PushRandom(t, repo.Tag(tag))
		cs.Must("sign", "--new-bundle-format=false", "--key", key, "--tlog-upload=false", "--use-signing-config=false",
			"--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+d.Digest.String())
		imgs[tag] = d.Digest
	}
	dir := t.TempDir()
	pem, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "keys", "release.pub"), pem)
	writeFile(t, filepath.Join(dir, "stowage.yaml"), fmt.Appendf(nil, `images:
  app: {reference: %q}
helper: {image: %q}
profiles:
  p:
    pullers: [{name: pre, namespace: pre, images: [app]}]
verify:
  keys: [keys/release.pub]
`, repo.Tag("app").Name(), repo.Tag("helper").Name()))
	if _, stderr, code := runCLI(t, nil, append([]string{"lock", dir, "-q"}, insecure...)...); code != 0 {
		t.Fatalf("lock exit %d:\n%s", code, stderr)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	if _, stderr, code := runCLI(t, nil, append([]string{"mirror", dir, "--to", "oci:" + bundle, "-q"}, insecure...)...); code != 0 {
		t.Fatalf("bundle: exit %d\n%s", code, stderr)
	}
	to, err := (site.Mapping{Default: siteReg.Host + "/site"}).Repository(repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	old := registrytest.PushRandom(t, to.Tag("app")).Digest
	siteTrust := func(pubFile string) string {
		d := t.TempDir()
		data, err := os.ReadFile(pubFile)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(d, "site.pub"), data)
		writeFile(t, filepath.Join(d, "trust.yaml"), []byte("apiVersion: stowage.dev/v1alpha1\nkind: SiteTrust\nverify: {keys: [site.pub]}\n"))
		return filepath.Join(d, "trust.yaml")
	}
	push := append([]string{"mirror", "--from", "oci:" + bundle, "--to", siteReg.Host + "/site", "-q"}, insecure...)

	_, stderr, code := runCLI(t, nil, append(push, "--trust", siteTrust(otherPub))...)
	for _, want := range []string{
		"image " + repo.Tag("app").Name() + ": the bundle's policy verify trusts keys[0] keys/release.pub (sha256:",
		"a key the site trust does not hold",
		"image " + repo.Tag("app").Name() + ": the lock records signer key sha256:",
		"nothing pushed",
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("another key at the site: exit %d, want 1 and %q:\n%s", code, want, stderr)
		}
	}
	if got := tagAt(t, to.Tag("app")); got != old {
		t.Errorf("the site's tag app points at %s, want its former %s", got, old)
	}
	if _, err := remote.Head(to.Digest(imgs["app"].String())); err == nil {
		t.Error("refused, yet the image is at the site")
	}

	same := siteTrust(pub)
	if stdout, stderr, code := runCLI(t, nil, append(push, "--trust", same, "--dry-run")...); code != 0 ||
		!strings.Contains(string(stdout), "signatures in the bundle: 2 of 2 checks verified at the site before the push, offline") {
		t.Errorf("--dry-run, the same key at the site: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code := runCLI(t, nil, append(push, "--trust", same, "-o", "json")...)
	var rep v1alpha1.MirrorReport
	if err := json.Unmarshal(stdout, &rep); err != nil || code != 0 || len(rep.Signatures) != 2 {
		t.Fatalf("the same key at the site: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	for _, s := range rep.Signatures {
		if !s.Verified || s.Signer == nil || s.Signer.Key == "" || !strings.HasPrefix(s.Policy, "site trust ") {
			t.Errorf("%+v, want verified by the key under the site trust", s)
		}
	}
	if got := tagAt(t, to.Tag("app")); got != imgs["app"] {
		t.Errorf("the site's tag app points at %s, want %s", got, imgs["app"])
	}
}
