package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/cosigntest"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestSignatureFormatsAdmitted: the real cosign signs one image in its
// tag scheme (--new-bundle-format=false) and one as a Sigstore bundle
// referrer (cosign 3's default); lock records each signature's format in
// verifiedBy.format and warns, naming the bundle-signed image and the
// kind, when the profile's admission kind cannot read it. render and vet
// then refuse kyverno (ClusterPolicy), policy-controller (a key
// authority) and crio, each naming the image and the kind, and nothing
// else; kyverno-ivpol renders an ImageValidatingPolicy and vets. A lock
// whose signers carry no format (written before stowage recorded it) is
// reported unrecorded by lock --check, and lock records the format again.
func TestSignatureFormatsAdmitted(t *testing.T) {
	t.Parallel()
	cs := cosigntest.Lookup(t)
	d := registrytest.Start(t, registrytest.Options{})
	repo, err := name.NewRepository(d.Host+"/lib/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string) v1.Hash { return registrytest.PushRandom(t, repo.Tag(tag)).Digest }
	tagged, bundled, helper := push("tagged"), push("bundled"), push("helper")
	key, pub := cs.KeyPair("a")
	sign := func(bundle bool, h v1.Hash) {
		cs.Must("sign", fmt.Sprintf("--new-bundle-format=%t", bundle), "--key", key, "--tlog-upload=false", "--use-signing-config=false",
			"--allow-http-registry", "--allow-insecure-registry", "--yes", repo.Name()+"@"+h.String())
	}
	sign(false, tagged)
	sign(false, helper)
	sign(true, bundled)

	dir := t.TempDir()
	pem, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys", "release.pub"), pem, 0o644); err != nil {
		t.Fatal(err)
	}
	config := func(kind string) {
		conf := fmt.Sprintf(`images:
  tagged: {reference: %q}
  bundled: {reference: %q}
helper: {image: %q}
verify: {keys: [keys/release.pub]}
profiles:
  p:
    policy: {kinds: [%s]}
    pullers: [{name: pre, namespace: pre, images: [tagged, bundled]}]
`, repo.Tag("tagged").Name(), repo.Tag("bundled").Name(), repo.Tag("helper").Name(), kind)
		if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lockFile := filepath.Join(dir, "stowage.lock.yaml")
	lockArgs := []string{"lock", dir, "--insecure-registry", d.Host, "-q"}
	bundledKey := repo.Tag("bundled").Name()

	config(v1alpha1.AdmissionKyverno)
	_, stderr, code := runCLI(t, nil, lockArgs...)
	if code != 0 {
		t.Fatalf("lock exit %d, want 0:\n%s", code, stderr)
	}
	warn := "stowage: warning: image " + bundledKey + ": its signature is a Sigstore bundle (an OCI 1.1 referrer, cosign 3's default), which kyverno in profiles.p.policy.kinds cannot read; render will refuse profile p"
	if !strings.Contains(stderr, warn) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("lock stderr, want the one warning\n%s\ngot:\n%s", warn, stderr)
	}
	l, err := lock.Read(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]string{"tagged": v1alpha1.SignatureTag, "helper": v1alpha1.SignatureTag, "bundled": v1alpha1.SignatureBundle} {
		e, _ := l.Lookup(repo.Tag(tag).Name())
		if e.VerifiedBy == nil || e.VerifiedBy.Format != want {
			t.Errorf("%s: verifiedBy %+v, want format %s", tag, e.VerifiedBy, want)
		}
	}
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--check"); code != 0 {
		t.Errorf("lock --check exit %d, want 0:\n%s", code, stderr)
	}

	for _, kind := range []string{v1alpha1.AdmissionKyverno, v1alpha1.AdmissionPolicyController, v1alpha1.AdmissionCRIO} {
		config(kind)
		want := "image " + bundledKey + ": " + kind + " cannot read its signature, which the lock records as a Sigstore bundle"
		for _, cmd := range []string{"render", "vet"} {
			out, stderr, code := runCLI(t, nil, cmd, dir)
			if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, repo.Tag("tagged").Name()) || (cmd == "render" && len(out) != 0) {
				t.Errorf("%s with %s: exit %d, %d bytes out, stderr:\n%s\nwant exit 1, nothing out, and %q alone", cmd, kind, code, len(out), stderr, want)
			}
		}
	}
	config(v1alpha1.AdmissionKyvernoIVPol)
	out, stderr, code := runCLI(t, nil, "render", dir)
	if code != 0 || !strings.Contains(string(out), "kind: ImageValidatingPolicy\n") {
		t.Errorf("render with kyverno-ivpol: exit %d, stderr:\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "vet", dir); code != 0 {
		t.Errorf("vet with kyverno-ivpol: exit %d:\n%s", code, stderr)
	}

	// A lock written before the format was recorded.
	data, err := os.ReadFile(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`(?m)^ +format: .*\n`).ReplaceAll(data, nil)
	if err := os.WriteFile(lockFile, old, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, nil, "lock", dir, "--check")
	if code != 1 || strings.Count(stderr, "unrecorded ") != 3 {
		t.Errorf("lock --check on an old lock: exit %d, want 1 and three unrecorded entries:\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, lockArgs...); code != 0 {
		t.Fatalf("lock on an old lock: exit %d:\n%s", code, stderr)
	}
	if again, _ := os.ReadFile(lockFile); string(again) != string(data) {
		t.Errorf("lock on an old lock wrote\n%s\nwant\n%s", again, data)
	}
}
