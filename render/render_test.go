package render_test

import (
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
