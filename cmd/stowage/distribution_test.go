package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// These tests run stowage against Debian's docker-registry (CNCF
// distribution 2.8), started on 127.0.0.1 by the test. Unlike the
// in-process registry, it honours Accept: asked without the full list it
// converts a manifest to schema 1 (another digest) or answers 404 for an
// index. So every resolution path runs here: a tag of a single manifest, a
// tag of an index, a child picked by platform, a digest written in the
// config, with and without a tag. The tests are skipped when docker-registry
// is not installed, unless STOWAGE_REQUIRE_REGISTRY is set (CI sets it).

// refOfKind returns repo:tag for the first tag v1, v2, … whose stand-in is
// an index (index true) or a single manifest.
func refOfKind(t *testing.T, repo string, index bool) string {
	t.Helper()
	for i := 1; i < 100; i++ {
		s := fmt.Sprintf("%s:v%d", repo, i)
		ref, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		if offlineimage.IsIndex(ref) == index {
			return s
		}
	}
	t.Fatalf("no tag of %s has a stand-in of the kind wanted", repo)
	return ""
}

func standinEntry(t *testing.T, written string) lock.Entry {
	t.Helper()
	e, err := offlineimage.Entry(written)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustResolver(t *testing.T, opts ...registry.Option) *registry.Resolver {
	t.Helper()
	r, err := registry.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDistributionPlainHTTP covers every resolution path over plain HTTP
// (marked insecure), then bump with a moved tag, vet --remote and a
// deleted pin.
func TestDistributionPlainHTTP(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	h := d.Host
	single := refOfKind(t, h+"/team/single", false)
	multi := refOfKind(t, h+"/team/multi", true)
	arm := refOfKind(t, h+"/team/arm", true)
	pinSrc := refOfKind(t, h+"/team/pinned", true)
	other := refOfKind(t, h+"/team/other", true)
	helper, pause := h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	push := mustResolver(t, registry.WithInsecure(h))
	if err := registrytest.SeedStandIns(context.Background(), push, nil, []string{single, multi, arm, pinSrc, helper, pause}, 4); err != nil {
		t.Fatal(err)
	}
	// The real server answers by Accept: a client that does not list the
	// OCI index type gets a 404 for an index (the in-process registry
	// would answer anyway). stowage must list every type.
	tag := mustTag(t, multi)
	req, _ := http.NewRequest(http.MethodGet, "http://"+h+"/v2/team/multi/manifests/"+tag, nil)
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("docker-registry answered %s to a GET of an index without the OCI index type in Accept; want 404 (the premise of these tests)", resp.Status)
	}
	pinDigest := standinEntry(t, pinSrc).Digest
	pinned := h + "/team/pinned@" + pinDigest
	pinnedTag := pinSrc + "@" + pinDigest
	dir := writeConfig(t, map[string]configImage{
		"single":    {Ref: single},
		"multi":     {Ref: multi},
		"arm":       {Ref: arm, Platforms: []string{"linux/arm64"}},
		"pinned":    {Ref: pinned},
		"pinnedtag": {Ref: pinnedTag},
	}, helper, pause)
	lockPath := filepath.Join(dir, lock.FileName)

	// Plain HTTP is refused unless the registry is marked insecure.
	_, stderr, code := runCLI(t, nil, "lock", dir)
	if code != 1 || !strings.Contains(stderr, "plain HTTP to "+h+" refused") {
		t.Fatalf("lock without --insecure-registry: exit %d, want 1 naming the refusal:\n%s", code, stderr)
	}
	if readFile(t, lockPath) != nil {
		t.Fatal("a failed lock wrote a file")
	}

	if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
		t.Fatalf("lock exit %d:\n%s", code, stderr)
	}
	want := &lock.Lock{}
	for _, r := range []string{single, multi, arm, helper, pause} {
		want.Put(standinEntry(t, r))
	}
	for _, p := range []string{pinned, pinnedTag} {
		e := standinEntry(t, pinSrc)
		e.Name, e.Reference = mustKey(t, p), p
		want.Put(e)
	}
	got := readFile(t, lockPath)
	if !bytes.Equal(got, want.Marshal()) {
		t.Fatalf("lock differs from the stand-ins pushed:\n%s", linediff.First(want.Marshal(), got))
	}

	// The single-platform image is pinned to its linux/arm64/v8 child.
	stdout, stderr, code := runCLI(t, nil, "render", dir)
	if code != 0 {
		t.Fatalf("render exit %d: %s", code, stderr)
	}
	armEntry := standinEntry(t, arm)
	child, err := lock.DigestFor(armEntry, "linux/arm64")
	if err != nil || child == armEntry.Digest {
		t.Fatalf("stand-in child for linux/arm64: %s, %v", child, err)
	}
	for _, pin := range []string{arm + "@" + child, multi + "@" + standinEntry(t, multi).Digest, pinned, pinnedTag} {
		if !bytes.Contains(stdout, []byte(pin)) {
			t.Errorf("render does not pin %s", pin)
		}
	}

	// vet --remote finds every pinned digest; a steady bump changes nothing.
	if stdout, stderr, code := runCLI(t, nil, "vet", dir, "--remote", "--insecure-registry", h); code != 0 || !strings.HasSuffix(string(stdout), "\nok: 7 pinned digests exist in their registries\n") {
		t.Fatalf("vet --remote: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if stdout, stderr, code := runCLI(t, nil, "bump", dir, "--insecure-registry", h, "--exit-code"); code != 0 || len(stdout) != 0 {
		t.Fatalf("steady bump: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}

	// Move the single-manifest tag to an index: bump reports it, with the
	// kind change, and writes the lock; the same change gives the same
	// branch name.
	otherRef, _ := name.ParseReference(other)
	img, idx, err := offlineimage.For(otherRef)
	if err != nil {
		t.Fatal(err)
	}
	singleRef, _ := name.ParseReference(single)
	if err := registrytest.Write(context.Background(), push, singleRef, nil, img, idx); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, lockPath)
	var branches []string
	for range 2 {
		if err := os.WriteFile(lockPath, before, 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code = runCLI(t, nil, "bump", dir, "--insecure-registry", h, "-o", "json", "--exit-code")
		if code != 1 {
			t.Fatalf("bump of a moved tag: exit %d, want 1 (--exit-code): %s", code, stderr)
		}
		var rep bump.Report
		if err := json.Unmarshal(stdout, &rep); err != nil {
			t.Fatalf("bump -o json: %v\n%s", err, stdout)
		}
		if !rep.Changed || len(rep.Changes) != 1 || rep.Changes[0].Reference != single || rep.Changes[0].OldKind != "manifest" || rep.Changes[0].NewKind != "index" {
			t.Errorf("report = %+v", rep)
		}
		if !strings.Contains(rep.Body, "**Kind changed**") || !strings.Contains(rep.Title, single) {
			t.Errorf("title %q / body lacks the kind change:\n%s", rep.Title, rep.Body)
		}
		branches = append(branches, rep.Branch)
	}
	if branches[0] != branches[1] || !strings.HasPrefix(branches[0], bump.BranchPrefix) {
		t.Errorf("branches %v: want one stable name", branches)
	}
	moved := standinEntry(t, other)
	l, err := lock.Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := l.Lookup(mustKey(t, single)); e.Digest != moved.Digest || e.Kind != lock.KindIndex || len(e.Platforms) != 2 || e.Reference != single {
		t.Errorf("bumped entry = %+v, want the index %s", e, moved.Digest)
	}

	// A pinned digest deleted from the registry: vet --remote names it.
	req, _ = http.NewRequest(http.MethodDelete, "http://"+h+"/v2/team/pinned/manifests/"+pinDigest, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE pinned manifest: %s", resp.Status)
	}
	_, stderr, code = runCLI(t, nil, "vet", dir, "--remote", "--insecure-registry", h)
	if code != 1 {
		t.Fatalf("vet --remote after a delete: exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{`image "` + pinned + `"`, `image "` + pinnedTag + `"`, "HEAD digest " + pinDigest + ": 404 Not Found", "2 images failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("vet --remote stderr lacks %q:\n%s", want, stderr)
		}
	}
	// -o json says how many it found on failure too (the README's promise).
	stdout, _, code = runCLI(t, nil, "vet", dir, "--remote", "--insecure-registry", h, "-o", "json")
	var rep v1alpha1.VetReport
	if err := json.Unmarshal(stdout, &rep); err != nil || code != 1 || rep.OK || rep.PinnedDigests == nil || *rep.PinnedDigests != 5 || len(rep.Errors) == 0 {
		t.Errorf("vet --remote -o json after a delete: exit %d, %v, pinnedDigests %v, want 5 of 7 found:\n%s", code, err, rep.PinnedDigests, stdout)
	}
}

// TestDistributionBasicAuth resolves through htpasswd basic auth: the
// config's credentials for one image, the Docker config (the default
// keychain) for the others, an existing-Secret auth falling back to the
// keychain; a wrong password is named without the password. The canary
// password never appears in stdout, stderr, the lock or the PR body.
func TestDistributionBasicAuth(t *testing.T) {
	// Not parallel: t.Setenv (the Docker config is read from the process's
	// $DOCKER_CONFIG, authn.DefaultKeychain).
	d := registrytest.Start(t, registrytest.Options{Users: map[string]string{"alice": canary, "bob": canary + "-bob"}})
	h := d.Host
	app := refOfKind(t, h+"/team/app", false)
	chinese := refOfKind(t, h+"/team/chinese", true)
	helper, pause := h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	push := mustResolver(t, registry.WithInsecure(h))
	if err := registrytest.SeedStandIns(context.Background(), push, &authn.AuthConfig{Username: "alice", Password: canary}, []string{app, chinese, helper, pause}, 4); err != nil {
		t.Fatal(err)
	}
	dockerConfig := t.TempDir()
	auths := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, h, base64.StdEncoding.EncodeToString([]byte("bob:"+canary+"-bob")))
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(auths), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, map[string]configImage{
		"app":     {Ref: app, User: "alice", Password: "env:REGISTRY_PASSWORD"},
		"chinese": {Ref: chinese, Secret: "dockerhub-pull"},
	}, helper, pause)
	lockPath := filepath.Join(dir, lock.FileName)
	var outputs [][]byte
	check := func(what string, b []byte) {
		outputs = append(outputs, b)
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("the password appears in %s:\n%s", what, b)
		}
	}

	// Without a Docker config the images without config credentials fail.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	stdout, stderr, code := runCLI(t, map[string]string{"REGISTRY_PASSWORD": canary, "STOWAGE_ALLOW_ENV": "REGISTRY_PASSWORD"}, "lock", dir, "--insecure-registry", h)
	check("stdout", stdout)
	check("stderr", []byte(stderr))
	if code != 1 || !strings.Contains(stderr, "3 images failed") || !strings.Contains(stderr, "401 Unauthorized") || strings.Contains(stderr, `"`+app+`"`) {
		t.Fatalf("lock without a Docker config: exit %d, want 1 with the three images without config credentials:\n%s", code, stderr)
	}

	// The lock kept what it learned: the image with config credentials.
	if l, err := lock.Parse(readFile(t, lockPath), lockPath); err != nil || len(l.Entries) != 1 || l.Entries[0].Reference != app {
		t.Fatalf("lock after the failed run: %v, %+v; want the one entry for %s", err, l, app)
	}
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}

	// A wrong password: named by its source, never shown.
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	stdout, stderr, code = runCLI(t, map[string]string{"REGISTRY_PASSWORD": "wrong-" + canary, "STOWAGE_ALLOW_ENV": "REGISTRY_PASSWORD"}, "lock", dir, "--insecure-registry", h)
	check("stdout", stdout)
	check("stderr", []byte(stderr))
	if code != 1 || !strings.Contains(stderr, `image "`+app+`"`) || !strings.Contains(stderr, "401 Unauthorized") || !strings.Contains(stderr, "password from env:REGISTRY_PASSWORD") {
		t.Fatalf("lock with a wrong password: exit %d:\n%s", code, stderr)
	}

	stdout, stderr, code = runCLI(t, map[string]string{"REGISTRY_PASSWORD": canary, "STOWAGE_ALLOW_ENV": "REGISTRY_PASSWORD"}, "lock", dir, "--insecure-registry", h)
	check("stdout", stdout)
	check("stderr", []byte(stderr))
	if code != 0 {
		t.Fatalf("lock with credentials: exit %d:\n%s", code, stderr)
	}
	want := &lock.Lock{}
	for _, r := range []string{app, chinese, helper, pause} {
		want.Put(standinEntry(t, r))
	}
	if got := readFile(t, lockPath); !bytes.Equal(got, want.Marshal()) {
		t.Fatalf("lock differs from the stand-ins:\n%s", linediff.First(want.Marshal(), got))
	}

	// Move app's tag; bump writes a PR body that names it, and nothing
	// secret.
	img, idx, err := offlineimage.For(registrytest.Ref(t, refOfKind(t, h+"/team/elsewhere", false)))
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.Write(context.Background(), push, registrytest.Ref(t, app), &authn.AuthConfig{Username: "alice", Password: canary}, img, idx); err != nil {
		t.Fatal(err)
	}
	body := filepath.Join(t.TempDir(), "body.md")
	stdout, stderr, code = runCLI(t, map[string]string{"REGISTRY_PASSWORD": canary, "STOWAGE_ALLOW_ENV": "REGISTRY_PASSWORD"}, "bump", dir, "--insecure-registry", h, "--pr-body", body)
	check("stdout", stdout)
	check("stderr", []byte(stderr))
	if code != 0 || !strings.Contains(string(stdout), "stowage: bump "+app) {
		t.Fatalf("bump: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}
	b := readFile(t, body)
	check("PR body", b)
	if !strings.Contains(string(b), "| `"+h+"/team/app` | `"+mustTag(t, app)+"` |") {
		t.Errorf("PR body lacks the row of the app:\n%s", b)
	}
	check("lock", readFile(t, lockPath))
}

// TestDistributionTLS resolves over HTTPS with a certificate signed by a CA
// made for the test: refused without --ca-file, resolved with it.
func TestDistributionTLS(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{TLS: true})
	h := d.Host
	app := refOfKind(t, h+"/team/app", true)
	helper, pause := h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	push := mustResolver(t, registry.WithCAFile(d.CAFile))
	if err := registrytest.SeedStandIns(context.Background(), push, nil, []string{app, helper, pause}, 4); err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
	_, stderr, code := runCLI(t, nil, "lock", dir)
	if code != 1 || !strings.Contains(stderr, "certificate is signed by an unknown authority; pass the CA with --ca-file") {
		t.Fatalf("lock without the CA: exit %d:\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--ca-file", d.CAFile); code != 0 {
		t.Fatalf("lock with the CA: exit %d:\n%s", code, stderr)
	}
	want := &lock.Lock{}
	for _, r := range []string{app, helper, pause} {
		want.Put(standinEntry(t, r))
	}
	if got := readFile(t, filepath.Join(dir, lock.FileName)); !bytes.Equal(got, want.Marshal()) {
		t.Fatalf("lock differs from the stand-ins:\n%s", linediff.First(want.Marshal(), got))
	}
}

func mustTag(t *testing.T, s string) string {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag.TagStr()
}

// mustKey is the lock key of the reference s.
func mustKey(t *testing.T, s string) string {
	t.Helper()
	ref, err := imageref.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Key()
}
