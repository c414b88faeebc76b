package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestNodeLabelLockMirrorVetSite: a driver image chosen per kernel label
// is handled like any image by every command. lock pins each value's
// reference to its stand-in; mirror carries each into a bundle and from
// the bundle to docker-registry as the site; vet --site finds every one
// there; render gives each value a DaemonSet on its nodes only.
func TestNodeLabelLockMirrorVetSite(t *testing.T) {
	t.Parallel()
	src := startInProcess(t)
	d := registrytest.Start(t, registrytest.Options{})
	h := src.Host
	drivers := []string{h + "/nvidia/driver:550.54.15-5.15.0-91-generic", h + "/nvidia/driver:550.54.15-6.8.0-1015-aws"}
	toolkit, helper := h+"/nvidia/container-toolkit:v1.17.0", h+"/stowage/helper:v1"
	refs := append(append([]string(nil), drivers...), toolkit, helper)
	seed(t, nil, refs, registry.WithInsecure(h))
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"config.cue": fmt.Sprintf(`
environments: driver: byNodeLabel: {
	label: "feature.node.kubernetes.io/kernel-version.full"
	references: {
		"5.15.0-91-generic": %q
		"6.8.0-1015-aws":    %q
	}
}
images: toolkit: reference: %q
helper: image: %q
site: registry: %q
profiles: gpu: pullers: [{name: "gpu", namespace: "gpu-operator", environments: ["driver"], images: ["toolkit"]}]
`, drivers[0], drivers[1], toolkit, helper, d.Host+"/site")})

	if _, stderr, code := runCLI(t, nil, "lock", dir, "--quiet", "--insecure-registry", h); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := &lock.Lock{}
	for _, r := range refs {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		want.Put(e)
	}
	if got := l.Marshal(); !bytes.Equal(got, want.Marshal()) {
		t.Fatalf("lock differs from the stand-ins:\n%s", linediff.First(want.Marshal(), got))
	}

	bundle := filepath.Join(t.TempDir(), "bundle")
	if _, stderr, code := runCLI(t, nil, "mirror", dir, "--to", "oci:"+bundle, "--insecure-registry", h); code != 0 {
		t.Fatalf("mirror --to oci: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "vet", dir, "--site", "--insecure-registry", d.Host); code != 1 {
		t.Fatalf("vet --site before the bundle is pushed: exit %d, want 1\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "mirror", "--from", "oci:"+bundle, "--insecure-registry", d.Host); code != 0 {
		t.Fatalf("mirror --from: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, nil, "vet", dir, "--site", "--insecure-registry", d.Host)
	if code != 0 {
		t.Fatalf("vet --site after the bundle: exit %d\n%s%s", code, stdout, stderr)
	}

	out := t.TempDir()
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out); code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	for _, c := range []struct{ file, kernel, ref string }{
		{"daemonset-gpu-operator-gpu-5-15-0-91-generic-212095.yaml", "5.15.0-91-generic", drivers[0]},
		{"daemonset-gpu-operator-gpu-6-8-0-1015-aws-fd386b.yaml", "6.8.0-1015-aws", drivers[1]},
	} {
		b, err := os.ReadFile(filepath.Join(out, c.file))
		if err != nil {
			entries, _ := os.ReadDir(out)
			t.Fatalf("%v (rendered: %v)", err, entries)
		}
		e, _ := l.Lookup(c.ref)
		site := d.Host + "/site/" + strings.Replace(c.ref, ":", "_", 1) + "@" + e.Digest
		if !strings.Contains(string(b), "feature.node.kubernetes.io/kernel-version.full: "+c.kernel+"\n") || !strings.Contains(string(b), "image: "+site+"\n") {
			t.Errorf("%s lacks nodeSelector %s or image %s:\n%s", c.file, c.kernel, site, b)
		}
	}
}
