package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/sigverify"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestLockVerifiesSignatures: with a verify policy naming a cosign key,
// `stowage lock` pins an image the real cosign signed with that key and
// records the key's fingerprint and the signature's digest; an image
// signed with another key, an unsigned one, one whose signature was
// tampered with and one carrying a signature of another digest are not
// pinned, lock exits 1 and names each with its
// digest and why; an image with a policy of its own is verified with its
// key alone. Under mode optional all are pinned, the four with a warning,
// and the signed ones keep their signer.
func TestLockVerifiesSignatures(t *testing.T) {
	t.Parallel()
	cs := cosigntest.Lookup(t)
	d := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(d.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string) v1.Hash { return registrytest.PushRandom(t, repo.Tag(tag)).Digest }
	good, wrong, unsigned, copied, helper, other, tampered := push("good"), push("wrong"), push("unsigned"), push("copied"), push("helper"), push("other"), push("tampered")
	keyA, pubA := cs.KeyPair("a")
	keyB, pubB := cs.KeyPair("b")
	sign := func(key string, h v1.Hash) {
		cs.Must("sign", "--new-bundle-format=false", "--key", key, "--tlog-upload=false", "--use-signing-config=false",
			"--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+h.String())
	}
	sign(keyA, good)
	sign(keyA, helper)
	sign(keyB, wrong)
	sign(keyB, other)
	sign(keyA, tampered)
	// good's signature, copied under copied's signature tag.
	sigTag := func(h v1.Hash) name.Tag { return repo.Tag(h.Algorithm + "-" + h.Hex + ".sig") }
	desc, err := remote.Get(sigTag(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(sigTag(copied), desc); err != nil {
		t.Fatal(err)
	}
	sigGood := desc.Digest
	// tampered's signature, one byte of it changed: the manifest is
	// written again with the annotation altered.
	tdesc, err := remote.Get(sigTag(tampered))
	if err != nil {
		t.Fatal(err)
	}
	var sm v1.Manifest
	if err := json.Unmarshal(tdesc.Manifest, &sm); err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(sm.Layers[0].Annotations["dev.cosignproject.cosign/signature"])
	if err != nil || len(sig) < 20 {
		t.Fatalf("signature annotation: %v", err)
	}
	sig[len(sig)-1] ^= 1
	sm.Layers[0].Annotations["dev.cosignproject.cosign/signature"] = base64.StdEncoding.EncodeToString(sig)
	rawSig, err := json.Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(sigTag(tampered), rawManifest{rawSig, sm.MediaType}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	pem, err := os.ReadFile(pubA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys", "release.pub"), pem, 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := sigverify.LoadKey("a.pub", pem)
	if err != nil {
		t.Fatal(err)
	}
	pemB, err := os.ReadFile(pubB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys", "other.pub"), pemB, 0o644); err != nil {
		t.Fatal(err)
	}
	kB, err := sigverify.LoadKey("b.pub", pemB)
	if err != nil {
		t.Fatal(err)
	}
	config := func(mode string) {
		var b strings.Builder
		b.WriteString("images:\n")
		for _, tag := range []string{"good", "wrong", "unsigned", "copied", "tampered"} {
			fmt.Fprintf(&b, "  %s: {reference: %q}\n", tag, repo.Tag(tag).Name())
		}
		// An image with a policy of its own: another key, required.
		fmt.Fprintf(&b, "  other: {reference: %q, verify: {keys: [keys/other.pub]}}\n", repo.Tag("other").Name())
		fmt.Fprintf(&b, "helper: {image: %q}\n", repo.Tag("helper").Name())
		b.WriteString("profiles:\n  p:\n    pullers: [{name: pre, namespace: pre, images: [good, wrong, unsigned, copied, other, tampered]}]\n")
		fmt.Fprintf(&b, "verify:\n  mode: %s\n  keys: [keys/release.pub]\n", mode)
		if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lockFile := filepath.Join(dir, "stowage.lock.yaml")
	args := []string{"lock", dir, "--insecure-registry", d.Host, "-q"}

	config("required")
	_, stderr, code := runCLI(t, nil, args...)
	if code != 1 {
		t.Fatalf("lock exit %d, want 1:\n%s", code, stderr)
	}
	l, err := lock.Read(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 3 {
		t.Fatalf("lock has %d entries, want only the good one, the helper and the other:\n%+v", len(l.Entries), l.Entries)
	}
	if o, _ := l.Lookup(repo.Tag("other").Name()); o.Digest != other.String() || o.VerifiedBy == nil || o.VerifiedBy.Key != kB.Fingerprint {
		t.Errorf("other: entry %+v verifiedBy %+v, want %s verified by its own key %s", o, o.VerifiedBy, other, kB.Fingerprint)
	}
	e, _ := l.Lookup(repo.Tag("good").Name())
	if e.Name != repo.Tag("good").Name() || e.Digest != good.String() || e.VerifiedBy == nil ||
		e.VerifiedBy.Key != k.Fingerprint || e.VerifiedBy.Signature != sigGood.String() || e.VerifiedBy.Identity != "" {
		t.Errorf("entry %+v verifiedBy %+v, want %s verified by key %s with signature %s", e, e.VerifiedBy, good, k.Fingerprint, sigGood)
	}
	data, _ := os.ReadFile(lockFile)
	if want := "    verifiedBy:\n      key: " + k.Fingerprint + "\n      signature: " + sigGood.String() + "\n"; !strings.Contains(string(data), want) {
		t.Errorf("lock file lacks\n%s\n%s", want, data)
	}
	for _, c := range []struct {
		tag string
		h   v1.Hash
		why string
	}{
		{"wrong", wrong, "does not verify with key keys/release.pub"},
		{"unsigned", unsigned, "no signature tag " + sigTag(unsigned).TagStr() + "; no Sigstore bundle among the referrers"},
		{"copied", copied, "verifies with key keys/release.pub but signs " + good.String() + ", another digest"},
		{"tampered", tampered, "does not verify with key keys/release.pub"},
	} {
		ref := repo.Tag(c.tag).Name()
		want := fmt.Sprintf("image %q (used by image %q in pre/pre): verify: image %s@%s: no trusted signature: ", ref, c.tag, repo.Name(), c.h)
		line := ""
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, want) {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, c.why) {
			t.Errorf("%s: stderr lacks %q … %q:\n%s", c.tag, want, c.why, stderr)
		}
	}

	config("optional")
	_, stderr, code = runCLI(t, nil, args...)
	if code != 0 {
		t.Fatalf("optional: lock exit %d, want 0:\n%s", code, stderr)
	}
	l, err = lock.Read(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 7 {
		t.Fatalf("optional: lock has %d entries, want 7", len(l.Entries))
	}
	for _, e := range l.Entries {
		if signed := e.Name == repo.Tag("good").Name() || e.Name == repo.Tag("helper").Name() || e.Name == repo.Tag("other").Name(); signed != (e.VerifiedBy != nil) {
			t.Errorf("optional: %s verifiedBy %+v", e.Name, e.VerifiedBy)
		}
	}
	if n := strings.Count(stderr, "pinned unverified (verify.mode is optional)"); n != 4 || strings.Count(stderr, "\n") != 4 {
		t.Errorf("optional: %d warnings, want 4:\n%s", n, stderr)
	}
}

// TestBumpShowsSigners: a tag pushed again and signed with another trusted
// key is bumped, and the pull request body shows the new signer and flags
// the change; pushed again unsigned under a required policy, bump refuses,
// naming the image and its digest, and leaves the lock as it was.
func TestBumpShowsSigners(t *testing.T) {
	t.Parallel()
	cs := cosigntest.Lookup(t)
	d := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(d.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string) v1.Hash { return registrytest.PushRandom(t, repo.Tag(tag)).Digest }
	keyA, pubA := cs.KeyPair("a")
	keyB, pubB := cs.KeyPair("b")
	sign := func(key string, h v1.Hash) {
		cs.Must("sign", "--new-bundle-format=false", "--key", key, "--tlog-upload=false", "--use-signing-config=false",
			"--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+h.String())
	}
	dir := t.TempDir()
	fps := map[string]string{}
	for n, pub := range map[string]string{"a.pub": pubA, "b.pub": pubB} {
		pem, err := os.ReadFile(pub)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), pem, 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := sigverify.LoadKey(n, pem)
		if err != nil {
			t.Fatal(err)
		}
		fps[n] = k.Fingerprint
	}
	sign(keyA, push("helper"))
	first := push("1")
	sign(keyA, first)
	cfg := fmt.Sprintf("images: {app: {reference: %q}}\nhelper: {image: %q}\nprofiles: {p: {pullers: [{name: pre, namespace: pre, images: [app]}]}}\nverify: {keys: [a.pub, b.pub]}\n",
		repo.Tag("1").Name(), repo.Tag("helper").Name())
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	lockFile := filepath.Join(dir, "stowage.lock.yaml")
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", d.Host, "-q"); code != 0 {
		t.Fatalf("lock exit %d:\n%s", code, stderr)
	}

	// lock --check, offline: current; then, with a policy that trusts only
	// key b, both entries are unverified.
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--check"); code != 0 {
		t.Fatalf("lock --check exit %d:\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "vet", dir); code != 0 {
		t.Fatalf("vet of a verified lock: exit %d:\n%s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(strings.Replace(cfg, "keys: [a.pub, b.pub]", "keys: [b.pub]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, nil, "lock", dir, "--check")
	if code != 1 || strings.Count(stderr, "unverified ") != 2 || !strings.Contains(stderr, "unverified "+repo.Tag("1").Name()+" (no signer its required verify policy trusts)") {
		t.Errorf("lock --check with another key: exit %d, want 1 and two unverified entries:\n%s", code, stderr)
	}
	// vet, offline, refuses the same lock: config and lock do not agree
	// while the lock pins digests the required policy does not trust.
	_, stderr, code = runCLI(t, nil, "vet", dir)
	if code != 1 || strings.Count(stderr, "unverified ") != 2 || !strings.Contains(stderr, "run `stowage lock`") {
		t.Errorf("vet with another key: exit %d, want 1 and two unverified entries:\n%s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	second := push("1")
	sign(keyB, second)
	stdout, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", d.Host, "-q")
	if code != 0 {
		t.Fatalf("bump exit %d:\n%s", code, stderr)
	}
	short := func(s string) string { return strings.TrimPrefix(s, "sha256:")[:12] }
	for _, want := range []string{
		"| Signer |",
		"| `key " + short(fps["a.pub"]) + "` → `key " + short(fps["b.pub"]) + "` ⚠ |",
		"signed by another signer than before",
	} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("bump body lacks %q:\n%s", want, stdout)
		}
	}
	l, err := lock.Read(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := l.Lookup(repo.Tag("1").Name()); e.Digest != second.String() || e.VerifiedBy == nil || e.VerifiedBy.Key != fps["b.pub"] {
		t.Errorf("bumped entry %+v verifiedBy %+v, want %s by key b", e, e.VerifiedBy, second)
	}

	before, _ := os.ReadFile(lockFile)
	third := push("1")
	_, stderr, code = runCLI(t, nil, "bump", dir, "--insecure-registry", d.Host, "-q")
	if code != 1 {
		t.Fatalf("bump of an unsigned digest: exit %d, want 1:\n%s", code, stderr)
	}
	want := fmt.Sprintf("verify: image %s@%s: no trusted signature: no signature tag", repo.Name(), third)
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "not changed") {
		t.Errorf("stderr lacks %q and \"not changed\":\n%s", want, stderr)
	}
	if after, _ := os.ReadFile(lockFile); string(after) != string(before) {
		t.Errorf("the lock changed:\n%s", after)
	}
}

// rawManifest is a manifest to PUT as it is.
type rawManifest struct {
	b  []byte
	mt types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.b, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }
