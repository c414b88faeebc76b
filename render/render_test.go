package render_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// TestRenderChecksTheLock: an ImageLock handed to Render in Go passes the
// rules a lock file does: an entry with a malformed digest, one whose
// name is not the normalised reference, a duplicate name and a lock of
// another kind are each refused, naming the entry; nothing is rendered.
func TestRenderChecksTheLock(t *testing.T) {
	t.Parallel()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/c.yaml", Data: []byte(
		"images:\n  app: {reference: busybox:1.36}\nprofiles:\n  lab:\n    namespace: prepull\n    pullers: [{name: tools, namespace: prepull, images: [app]}]\n")}})
	if err != nil {
		t.Fatal(err)
	}
	good := v1alpha1.ImageLockEntry{Name: "docker.io/library/busybox:1.36", Reference: "busybox:1.36", Digest: "sha256:" + strings.Repeat("a", 64), Kind: v1alpha1.KindManifest}
	for _, tc := range []struct {
		name string
		lock v1alpha1.ImageLock
		want string
	}{
		{"bad digest", v1alpha1.ImageLock{Spec: v1alpha1.ImageLockSpec{Images: []v1alpha1.ImageLockEntry{{Name: good.Name, Reference: good.Reference, Digest: "sha256:abc", Kind: v1alpha1.KindManifest}}}}, `lock spec.images[0]: image docker.io/library/busybox:1.36: digest: invalid digest "sha256:abc"`},
		{"name not the key", v1alpha1.ImageLock{Spec: v1alpha1.ImageLockSpec{Images: []v1alpha1.ImageLockEntry{{Name: "busybox:1.36", Reference: good.Reference, Digest: good.Digest, Kind: v1alpha1.KindManifest}}}}, `lock spec.images[0]: image busybox:1.36: name: "busybox:1.36" is not the normalised form of reference "busybox:1.36"`},
		{"duplicate", v1alpha1.ImageLock{Spec: v1alpha1.ImageLockSpec{Images: []v1alpha1.ImageLockEntry{good, good}}}, "lock spec.images[1]: duplicate name docker.io/library/busybox:1.36"},
		{"other kind", v1alpha1.ImageLock{APIVersion: v1alpha1.APIVersion, Kind: "Stowage"}, "render: the lock is a stowage.dev/v1alpha1 Stowage, want stowage.dev/v1alpha1 ImageLock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render.Render(render.Input{Config: cfg, Lock: &tc.lock})
			if err == nil || !strings.Contains(err.Error(), tc.want) || objs != nil {
				t.Errorf("got %d objects, %v; want an error containing %q", len(objs), err, tc.want)

			}
		})
	}
	if _, err := render.Render(render.Input{Config: cfg, Lock: &v1alpha1.ImageLock{Spec: v1alpha1.ImageLockSpec{Images: []v1alpha1.ImageLockEntry{good}}}}); err == nil || !strings.Contains(err.Error(), "stowage-helper") {
		t.Errorf("a lock without the helper image: %v; want the helper named as missing", err)
	}
}

// TestNeedsAndReadNeeded: a profile with secrets: render needs its
// password source, read under the CLI's rule (a variable outside
// STOWAGE_* only when STOWAGE_ALLOW_ENV names it, one trailing newline
// cut); a trust file outside the config directory is refused, naming the
// field that writes it; a missing lock wraps fs.ErrNotExist.
func TestNeedsAndReadNeeded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("c.yaml", "images:\n  app: {reference: registry.example/app:1, auth: {username: robot, password: env:HARBOR_PASSWORD}}\n"+
		"  tool: {reference: registry.example/tool:1, auth: {username: robot, password: file:secrets/tool}, verify: {keys: [../outside.pub]}}\n"+
		"profiles:\n  lab:\n    namespace: prepull\n    secrets: render\n    pullers: [{name: tools, namespace: prepull, images: [app, tool]}]\n"+
		"  site:\n    namespace: prepull\n    secrets: reference\n    policy: {kinds: [kyverno]}\n    pullers: [{name: tools, namespace: prepull, images: [tool]}]\n")
	if err := os.Mkdir(filepath.Join(dir, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("secrets/tool", "tool-password\n")
	cfg, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := render.Needs(cfg, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if want := (render.Needed{Passwords: []string{"env:HARBOR_PASSWORD", "file:secrets/tool"}}); !reflect.DeepEqual(n, want) {
		t.Errorf("Needs(lab) = %#v, want %#v", n, want)
	}
	env := map[string]string{"HARBOR_PASSWORD": "harbor-password"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if _, _, err := render.ReadNeeded(dir, cfg, "lab", getenv); err == nil || !strings.Contains(err.Error(), "environment variable HARBOR_PASSWORD may not be read") {
		t.Errorf("HARBOR_PASSWORD not allowed by STOWAGE_ALLOW_ENV: %v", err)
	}
	env["STOWAGE_ALLOW_ENV"] = "HARBOR_PASSWORD"
	pw, trust, err := render.ReadNeeded(dir, cfg, "lab", getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]byte{"env:HARBOR_PASSWORD": []byte("harbor-password"), "file:secrets/tool": []byte("tool-password")}; !reflect.DeepEqual(pw, want) || len(trust) != 0 {
		t.Errorf("ReadNeeded(lab) = %q, %q; want %q and no trust file", pw, trust, want)
	}

	n, err = render.Needs(cfg, "site")
	if err != nil {
		t.Fatal(err)
	}
	if want := (render.Needed{Trust: []string{"../outside.pub"}}); !reflect.DeepEqual(n, want) {
		t.Errorf("Needs(site) = %#v, want %#v", n, want)
	}
	if _, _, err := render.ReadNeeded(dir, cfg, "site", getenv); err == nil || !strings.Contains(err.Error(), "profiles.site.policy: images.tool.verify.keys[0]: verify key file ../outside.pub") {
		t.Errorf("a key outside the config directory: %v", err)
	}

	if _, err := render.Needs(cfg, "nope"); err == nil {
		t.Error("Needs of an unknown profile: no error")
	}
	if _, err := render.ReadLock(filepath.Join(dir, v1alpha1.ImageLockFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLock of a missing lock: %v; want fs.ErrNotExist", err)
	}
}

// TestParseLockIsTheCLIs: ParseLock gives the lock of a committed example
// with its metadata, and refuses what the lock parser refuses.
func TestParseLockIsTheCLIs(t *testing.T) {
	t.Parallel()
	l, err := render.ReadLock("../examples/gpu-platform/stowage.lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if l.APIVersion != v1alpha1.APIVersion || l.Kind != v1alpha1.ImageLockKind || l.Metadata.Name != v1alpha1.ImageLockName || len(l.Spec.Images) == 0 {
		t.Errorf("ReadLock: %s %s %s with %d entries", l.APIVersion, l.Kind, l.Metadata.Name, len(l.Spec.Images))
	}
	_, err = render.ParseLock([]byte("apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nspec:\n  images: []\n---\nkind: ImageLock\n"), "x.lock.yaml")
	if want := "x.lock.yaml:6: more than one YAML document; a lock file holds one"; err == nil || err.Error() != want {
		t.Errorf("two documents: %v; want %s", err, want)
	}
}

// TestWriteDirSecretMode: WriteDir writes a Secret's file 0600, readable
// by its owner alone, and every other file 0644.
func TestWriteDirSecretMode(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
	digest := func(n int) string { return fmt.Sprintf("@sha256:%064x", n) }
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/c.yaml", Data: []byte(
		"helper: {image: \"ghcr.io/stowage/stowage-helper:v0.1.0" + digest(2) + "\"}\n" +
			"images:\n  app: {reference: \"registry.example/app:1" + digest(1) + "\", auth: {username: robot, password: env:STOWAGE_APP_PASSWORD}}\n" +
			"profiles:\n  lab:\n    namespace: prepull\n    secrets: render\n    pullers: [{name: tools, namespace: prepull, images: [app]}]\n")}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(render.Input{Config: cfg, Passwords: map[string][]byte{"env:STOWAGE_APP_PASSWORD": []byte("pw")}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := render.WriteDir(context.Background(), dir, objs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		want := fs.FileMode(0o644)
		if o.Kind == "Secret" {
			want = 0o600
		}
		kinds[o.Kind] = true
		if fi, err := os.Stat(filepath.Join(dir, o.FileName())); err != nil || fi.Mode().Perm() != want {
			t.Errorf("mode of %s = %v, %v; want %v", o.FileName(), fi.Mode().Perm(), err, want)
		}
	}
	if !kinds["Secret"] || !kinds["ConfigMap"] {
		t.Errorf("rendered kinds %v, want a Secret and a ConfigMap", kinds)
	}
	if fi, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of kustomization.yaml = %v, %v; want 0644", fi.Mode().Perm(), err)
	}
}
