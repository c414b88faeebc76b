package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/internal/words"
	"github.com/stowage/stowage/schema"
)

// renderedImages returns every image a rendered stream names, each with
// where: the image field of every container, init container and ephemeral
// container of every workload (kyaml's conventional container paths), and
// every line of every images*.list key of every ConfigMap.
func renderedImages(t *testing.T, out []byte) map[string]string {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]string{}
	for _, n := range nodes {
		obj := n.GetKind() + "/" + n.GetName()
		for _, path := range yaml.ConventionalContainerPaths {
			spec := path[:len(path)-1]
			for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
				cs, err := n.Pipe(yaml.Lookup(append(append([]string{}, spec...), list)...))
				if err != nil || cs == nil {
					continue
				}
				elems, _ := cs.Elements()
				for _, c := range elems {
					img, _ := c.Pipe(yaml.Lookup("image"))
					if img == nil {
						t.Errorf("%s: a container without an image", obj)
						continue
					}
					images[yaml.GetValue(img)] = obj + " " + list
				}
			}
		}
		if n.GetKind() != "ConfigMap" {
			continue
		}
		for k, v := range n.GetDataMap() {
			if !strings.HasPrefix(k, "images") || !strings.HasSuffix(k, ".list") {
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(v), "\n") {
				if line != "" {
					images[line] = obj + " " + k
				}
			}
		}
	}
	return images
}

// TestOpenPAIOfflineOnSite is the issue's done-when check: `stowage render
// examples/openpai-offline` names no image outside the site registry, in
// any image field or image list it renders.
func TestOpenPAIOfflineOnSite(t *testing.T) {
	t.Parallel()
	out, stderr, code := runCLI(t, nil, "render", filepath.Join(repoRoot, "examples", "openpai-offline"))
	if code != 0 {
		t.Fatalf("render exit %d: %s", code, stderr)
	}
	images := renderedImages(t, out)
	// The OpenPAI ConfigMap's lists name the DaemonSets' pinned
	// references: 14 OpenPAI images and the helper.
	if len(images) < 15 {
		t.Fatalf("found %d images in the output; the walk is broken", len(images))
	}
	const site = "registry.pai.lab.internal:5000/"
	var mirrored, own int
	for img, where := range images {
		if !strings.HasPrefix(img, site) {
			t.Errorf("%s names %s, outside the site registry %s", where, img, site)
		}
		switch {
		case strings.HasPrefix(img, site+"mirror/docker.io/"):
			mirrored++
		case strings.HasPrefix(img, site+"openpai/"), strings.HasPrefix(img, site+"stowage/"):
			own++
		default:
			t.Errorf("%s names %s: neither mirrored under %smirror/docker.io/ nor the site's own", where, img, site)
		}
	}
	if mirrored == 0 || own == 0 {
		t.Errorf("%d mirrored and %d site images; want both", mirrored, own)
	}
	// The Docker Hub images keep repository, tag and the lock's digest;
	// every reference, in an image field or a list, is pinned.
	const fc = site + "mirror/docker.io/frameworkcontroller/frameworkcontroller:v0.9.0"
	for img, where := range images {
		if !strings.Contains(img, "@sha256:") {
			t.Errorf("%s names %s without a digest", where, img)
		}
	}
	found := false
	for img := range images {
		if strings.HasPrefix(img, fc+"@sha256:") {
			found = true
		}
	}
	if !found {
		t.Errorf("no DaemonSet pulls %s@sha256:…", fc)
	}
}

// TestLockViaSite: on the site, `stowage lock --via-site` reads every image
// of examples/openpai-offline at the site registry its site field names
// (here a docker-registry seeded, under the same mapping, with the
// stand-ins) and writes byte for byte the committed lock, keyed by the
// original references: one lock serves the connected side and the site.
// `stowage mirror` without --to plans against the same site registry.
func TestLockViaSite(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	example := filepath.Join(repoRoot, "examples", "openpai-offline")
	work := copyConfig(t, example)
	sitePath := filepath.Join(work, "site.cue")
	src := string(readFile(t, sitePath))
	const written = `site: registry: "registry.pai.lab.internal:5000/mirror"`
	if !strings.Contains(src, written) {
		t.Fatalf("site.cue lacks %s", written)
	}
	if err := os.WriteFile(sitePath, []byte(strings.Replace(src, written, `site: registry: "`+d.Host+`/site"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(work, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := registrytest.SeedFor(cfg, d.Host)
	if err != nil {
		t.Fatal(err)
	}
	push := mustResolver(t, registry.WithInsecure(d.Host), registry.WithSite(site.Mapping{Default: d.Host + "/site"}))
	if err := registrytest.SeedStandIns(context.Background(), push, nil, p.Refs, 4); err != nil {
		t.Fatal(err)
	}
	// The images exist only at their site repositories (the test contacts
	// no other host): a lock that resolves read them there.
	if _, stderr, code := runCLI(t, nil, "lock", work, "--via-site", "--insecure-registry", d.Host); code != 0 {
		t.Fatalf("lock --via-site exit %d:\n%s", code, stderr)
	}
	got := readFile(t, filepath.Join(work, lock.FileName))
	want := readFile(t, filepath.Join(example, lock.FileName))
	if !bytes.Equal(got, want) {
		t.Errorf("lock --via-site differs from the committed lock:\n%s", linediff.First(want, got))
	}
	// mirror without --to goes to the config's site registry, mapped as
	// render names the images: everything seeded there is present, so the
	// dry run contacts no source.
	stdout, stderr, code := runCLI(t, nil, "mirror", work, "--dry-run", "--insecure-registry", d.Host)
	if code != 0 {
		t.Fatalf("mirror --dry-run without --to: exit %d:\n%s", code, stderr)
	}
	n := len(p.Refs)
	if want := fmt.Sprintf("%d images: %d present, 0 missing", n, n); !strings.Contains(string(stdout), want) {
		t.Errorf("mirror --dry-run without --to lacks %q:\n%s", want, stdout)
	}
	if want := d.Host + "/site/docker.io/frameworkcontroller/frameworkcontroller:v0.9.0"; !strings.Contains(string(stdout), want) {
		t.Errorf("mirror --dry-run names no destination %s:\n%s", want, stdout)
	}
	// A config without a site: a clear error.
	flux := filepath.Join(repoRoot, "examples", "gitops-flux", "config")
	plain := copyConfig(t, flux)
	if err := os.WriteFile(filepath.Join(plain, lock.FileName), readFile(t, filepath.Join(flux, lock.FileName)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, nil, "lock", plain, "--via-site"); code != 1 || !strings.Contains(stderr, "the config names no site registry") {
		t.Errorf("lock --via-site without a site: exit %d, stderr %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "mirror", plain, "--dry-run"); code != 2 || !strings.Contains(stderr, "the config names no site registry") {
		t.Errorf("mirror without --to nor a site: exit %d, stderr %s", code, stderr)
	}
}

// TestSiteRulePinOnlyKustomization: a kustomization whose functionConfig
// only pins, with a top-level site, has that site for every command as
// for the function: lock --via-site reads the workload image at the site
// repository render names, and mirror without --to plans against it.
func TestSiteRulePinOnlyKustomization(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	push := mustResolver(t, registry.WithInsecure(d.Host))
	if err := registrytest.SeedStandIns(context.Background(), push, nil, []string{d.Host + "/site/ghcr.io/example-org/web:1"}, 1); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\ntransformers: [stowage.yaml]\n",
		"web.yaml": `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: web, image: ghcr.io/example-org/web:1}
`,
		"stowage.yaml": `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: pin
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: stowage
        args: [fn]
spec:
  site: {registry: "` + d.Host + `/site"}
`,
	})
	if _, stderr, code := runCLI(t, nil, "lock", root, "--via-site", "--quiet", "--insecure-registry", d.Host); code != 0 {
		t.Fatalf("lock --via-site: exit %d\n%s", code, stderr)
	}
	if _, names := lockEntryNames(t, filepath.Join(root, lock.FileName)); names != "ghcr.io/example-org/web:1" {
		t.Errorf("lock --via-site wrote entries %s, want ghcr.io/example-org/web:1", names)
	}
	stdout, stderr, code := runCLI(t, nil, "mirror", root, "--dry-run", "--insecure-registry", d.Host)
	if code != 0 || !strings.Contains(string(stdout), "\n1 image: 1 present, 0 missing") || !strings.Contains(string(stdout), d.Host+"/site/ghcr.io/example-org/web:1") {
		t.Errorf("mirror --dry-run without --to: exit %d\n%s%s", code, stdout, stderr)
	}
	// vet --site checks the pinned workload at the same site: its pin,
	// and each child when the stand-in is an index.
	l, err := lock.Read(filepath.Join(root, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	web, _ := l.Lookup("ghcr.io/example-org/web:1")
	stdout, stderr, code = runCLI(t, nil, "vet", root, "--site", "--insecure-registry", d.Host)
	if want := "ok: 1 workload image pinned, " + words.Count(1+len(web.Platforms), "manifest") + " on the site registry\n"; code != 0 || string(stdout) != want {
		t.Errorf("vet --site: exit %d\n%s%s", code, stdout, stderr)
	}
	// Without the site field, vet --site has no site to check.
	writeTree(t, root, map[string]string{"stowage.yaml": strings.Replace(string(readFile(t, filepath.Join(root, "stowage.yaml"))), `  site: {registry: "`+d.Host+`/site"}`, "  images: {}", 1)})
	if _, stderr, code := runCLI(t, nil, "vet", root, "--site", "--insecure-registry", d.Host); code != 1 || !strings.Contains(stderr, "--site: the functionConfig names no site registry") {
		t.Errorf("vet --site without a site: exit %d\n%s", code, stderr)
	}
}

// TestSiteRuleTwoProfiles: with two profiles on two sites, mirror
// --profile a plans against profile a's site (seeded there only), and
// mirror and lock --via-site over both refuse, naming each profile and
// its site.
func TestSiteRuleTwoProfiles(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	push := mustResolver(t, registry.WithInsecure(d.Host))
	refs := []string{d.Host + "/a/ghcr.io/example-org/tool:1", d.Host + "/a/ghcr.io/stowage/stowage-helper:v0.1.0"}
	if err := registrytest.SeedStandIns(context.Background(), push, nil, refs, 2); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"config.cue": `
images: tool: reference: "ghcr.io/example-org/tool:1"
profiles: {
	a: {namespace: "a", site: registry: "` + d.Host + `/a", pullers: [{name: "p", namespace: "a", images: ["tool"]}]}
	b: {namespace: "b", site: registry: "` + d.Host + `/b", pullers: [{name: "p", namespace: "b", images: ["tool"]}]}
}
`})
	// The lock, read at profile a's site through --mirror.
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--quiet", "--insecure-registry", d.Host, "--mirror", "ghcr.io="+d.Host+"/a/ghcr.io"); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, nil, "mirror", dir, "--profile", "a", "--dry-run", "--insecure-registry", d.Host)
	if code != 0 || !strings.Contains(string(stdout), "2 images: 2 present, 0 missing") || !strings.Contains(string(stdout), d.Host+"/a/ghcr.io/example-org/tool:1") {
		t.Errorf("mirror --profile a --dry-run: exit %d\n%s%s", code, stdout, stderr)
	}
	want := `the profiles name different site registries: profile "a": ` + d.Host + `/a; profile "b": ` + d.Host + `/b`
	if _, stderr, code := runCLI(t, nil, "mirror", dir, "--dry-run"); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("mirror over both profiles: exit %d, stderr %s\nwant %s", code, stderr, want)
	}
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--via-site"); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("lock --via-site over both profiles: exit %d, stderr %s\nwant %s", code, stderr, want)
	}
}
