package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/sigverify"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestLockVerifiesProfilePolicy: a profile's verify policy replaces the
// top-level one for its images (plan.VerifyPolicy), an image's own policy
// replaces the profile's, and an image used in two profiles is verified
// under the policy of each. Real cosign signatures on a docker-registry:
// an image signed with the profile's key alone is pinned with that key's
// fingerprint; one signed with the top-level key alone and used in both
// profiles is refused, the message naming the image, its uses, the
// profile's policy field, the digest and why; signed again with the
// profile's key, it is pinned.
func TestLockVerifiesProfilePolicy(t *testing.T) {
	t.Parallel()
	cs := cosigntest.Lookup(t)
	d := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(d.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string) v1.Hash { return registrytest.PushRandom(t, repo.Tag(tag)).Digest }
	labOnly, siteOnly, shared, own, helper := push("lab"), push("site"), push("shared"), push("own"), push("helper")
	keyA, pubA := cs.KeyPair("a")
	keyB, pubB := cs.KeyPair("b")
	sign := func(key string, h v1.Hash) {
		cs.Must("sign", "--new-bundle-format=false", "--key", key, "--tlog-upload=false", "--use-signing-config=false",
			"--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+h.String())
	}
	sign(keyA, labOnly)
	sign(keyB, siteOnly)
	sign(keyA, shared)
	sign(keyA, own)
	sign(keyA, helper)
	sign(keyB, helper)

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	fingerprint := func(pub, as string) string {
		pem, err := os.ReadFile(pub)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "keys", as), pem, 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := sigverify.LoadKey(as, pem)
		if err != nil {
			t.Fatal(err)
		}
		return k.Fingerprint
	}
	fpA, fpB := fingerprint(pubA, "release.pub"), fingerprint(pubB, "site.pub")
	var b strings.Builder
	b.WriteString("images:\n")
	for _, tag := range []string{"lab", "site", "shared"} {
		fmt.Fprintf(&b, "  %s: {reference: %q}\n", tag, repo.Tag(tag).Name())
	}
	fmt.Fprintf(&b, "  own: {reference: %q, verify: {keys: [keys/release.pub]}}\n", repo.Tag("own").Name())
	fmt.Fprintf(&b, "helper: {image: %q}\n", repo.Tag("helper").Name())
	b.WriteString("verify: {keys: [keys/release.pub]}\n")
	b.WriteString("profiles:\n")
	b.WriteString("  lab:\n    pullers: [{name: pre, namespace: lab, images: [lab, shared]}]\n")
	b.WriteString("  edge:\n    verify: {keys: [keys/site.pub]}\n    pullers: [{name: pre, namespace: edge, images: [site, shared, own]}]\n")
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lockFile := filepath.Join(dir, "stowage.lock.yaml")
	args := []string{"lock", dir, "--insecure-registry", d.Host, "-q"}

	_, stderr, code := runCLI(t, nil, args...)
	if code != 1 {
		t.Fatalf("lock exit %d, want 1:\n%s", code, stderr)
	}
	l, err := lock.Read(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		h  v1.Hash
		fp string
	}{
		"lab":    {labOnly, fpA},  // the top-level policy
		"site":   {siteOnly, fpB}, // the profile's, not the top level's
		"own":    {own, fpA},      // its own, over the profile's
		"helper": {helper, fpA},   // both policies (checked below)
	}
	if len(l.Entries) != len(want) {
		t.Fatalf("lock has %d entries, want %d (all but shared):\n%+v\n%s", len(l.Entries), len(want), l.Entries, stderr)
	}
	for tag, w := range want {
		e, ok := l.Lookup(repo.Tag(tag).Name())
		if !ok || e.Digest != w.h.String() || e.VerifiedBy == nil {
			t.Errorf("%s: entry %+v, want %s verified", tag, e, w.h)
			continue
		}
		if tag != "helper" && e.VerifiedBy.Key != w.fp {
			t.Errorf("%s: verified by key %s, want %s", tag, e.VerifiedBy.Key, w.fp)
		}
		if tag == "helper" && e.VerifiedBy.Key != fpA && e.VerifiedBy.Key != fpB {
			t.Errorf("helper: verified by key %s, want one of its two", e.VerifiedBy.Key)
		}
	}
	ref := repo.Tag("shared").Name()
	prefix := fmt.Sprintf("image %q (used by ", ref)
	mid := fmt.Sprintf("): verify under profiles.edge.verify: image %s@%s: no trusted signature: ", repo.Name(), shared)
	line := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, prefix) && strings.Contains(l, mid) {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "does not verify with key keys/site.pub") ||
		!strings.Contains(line, `image "shared" in edge/pre`) || !strings.Contains(line, `image "shared" in lab/pre`) {
		t.Errorf("stderr lacks %q … %q … does not verify with key keys/site.pub:\n%s", prefix, mid, stderr)
	}
	if n := strings.Count(stderr, "stowage: image "); n != 1 {
		t.Errorf("stderr has %d refusals, want the one:\n%s", n, stderr)
	}

	// Signed with the profile's key too, shared verifies under both.
	sign(keyB, shared)
	if _, stderr, code := runCLI(t, nil, args...); code != 0 {
		t.Fatalf("second lock exit %d, want 0:\n%s", code, stderr)
	}
	if l, err = lock.Read(lockFile); err != nil {
		t.Fatal(err)
	}
	if e, ok := l.Lookup(ref); !ok || e.Digest != shared.String() || e.VerifiedBy == nil {
		t.Errorf("shared: entry %+v, want %s verified", e, shared)
	}
}
