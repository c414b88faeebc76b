package render_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// Render a config directory from Go as `stowage render DIR --profile gpu`
// does: load the config, read its lock, read the files Needs lists (here
// the vendor's cosign key, which the profile's admission policies
// inline), render and write the stream. The bytes are those of the CLI,
// whose output for this example is committed as
// golden/gpu-platform/gpu.yaml.
func Example_directory() {
	const dir = "../examples/gpu-platform"
	// schema.Load evaluates the CUE in this process; for a config you do
	// not trust, load it WithChild (see schema.WithChild).
	cfg, err := schema.Load(dir)
	if err != nil {
		panic(err)
	}
	l, err := render.ReadLock(filepath.Join(dir, v1alpha1.ImageLockFile))
	if err != nil {
		panic(err)
	}
	passwords, trust, err := render.ReadNeeded(dir, cfg, "gpu", os.LookupEnv)
	if err != nil {
		panic(err)
	}
	objs, err := render.Render(render.Input{Config: cfg, Lock: l, Profile: "gpu", Passwords: passwords, Trust: trust})
	if err != nil {
		panic(err)
	}
	var stream bytes.Buffer
	if err := render.WriteStream(&stream, objs); err != nil {
		panic(err)
	}
	golden, err := os.ReadFile("../golden/gpu-platform/gpu.yaml")
	if err != nil {
		panic(err)
	}
	for _, o := range objs {
		fmt.Println(o.FileName())
	}
	fmt.Println("the bytes of stowage render:", bytes.Equal(stream.Bytes(), golden))
	// Output:
	// clusterrole-stowage-startup-gpu-operator-gpu-platform.yaml
	// clusterrolebinding-stowage-startup-gpu-operator-gpu-platform.yaml
	// validatingadmissionpolicy-stowage-startup-gpu-operator-gpu-platform.yaml
	// validatingadmissionpolicybinding-stowage-startup-gpu-operator-gpu-platform.yaml
	// serviceaccount-gpu-operator-gpu-platform-startup.yaml
	// role-gpu-operator-gpu-platform-startup.yaml
	// rolebinding-gpu-operator-gpu-platform-startup.yaml
	// configmap-gpu-operator-gpu-platform-records.yaml
	// configmap-gpu-operator-stowage-gpu-crio.yaml
	// daemonset-gpu-operator-gpu-platform.yaml
	// daemonset-gpu-operator-gpu-platform-5-15-0-91-generic-212095.yaml
	// daemonset-gpu-operator-gpu-platform-6-8-0-1015-aws-fd386b.yaml
	// imagevalidatingpolicy-stowage-gpu-environments.yaml
	// the bytes of stowage render: true
}

// Needs lists what Input must carry beside the config and the lock: the
// gpu profile has a policy field, so its admission policies need the key
// its verify policies name; it renders no Secret, so no password.
func ExampleNeeds() {
	cfg, err := schema.Load("../examples/gpu-platform")
	if err != nil {
		panic(err)
	}
	n, err := render.Needs(cfg, "gpu")
	if err != nil {
		panic(err)
	}
	fmt.Println("passwords:", n.Passwords)
	fmt.Println("trust:", n.Trust)
	// Output:
	// passwords: []
	// trust: [keys/vendor-cosign.pub]
}

// ParseLock refuses what every stowage command refuses, naming the file,
// line and field: here a field the lock does not have and a malformed
// digest.
func ExampleParseLock() {
	_, err := render.ParseLock([]byte(`apiVersion: stowage.dev/v1alpha1
kind: ImageLock
metadata:
  name: stowage-lock
spec:
  images:
  - name: docker.io/library/busybox:1.36
    reference: busybox:1.36
    digest: sha256:abc
    kind: manifest
extra: 1
`), "stowage.lock.yaml")
	fmt.Println(err)
	// Output:
	// stowage.lock.yaml:11: extra: field not allowed (allowed here: apiVersion, kind, metadata, spec)
	// stowage.lock.yaml:9: spec.images[0] (docker.io/library/busybox:1.36): digest: invalid digest "sha256:abc": wrong number of hex digits for sha256: abc
}

// Render a profile of an example config with its lock. The profile needs
// no password and no trust file (Needs lists none), so Passwords and Trust
// stay empty.
func ExampleRender() {
	cfg, err := schema.Load("../examples/openpai-offline")
	if err != nil {
		panic(err)
	}
	l, err := render.ReadLock("../examples/openpai-offline/stowage.lock.yaml")
	if err != nil {
		panic(err)
	}
	objs, err := render.Render(render.Input{Config: cfg, Lock: l, Profile: "offline"})
	if err != nil {
		panic(err)
	}
	for _, o := range objs {
		fmt.Println(o.FileName())
	}
	// Output:
	// configmap-default-openpai-package-cache.yaml
	// configmap-default-openpai-services.yaml
	// configmap-pai-prepull-openpai-prepull-records.yaml
	// daemonset-pai-prepull-openpai-prepull.yaml
	// daemonset-pai-prepull-openpai-prepull-master.yaml
	// daemonset-pai-prepull-openpai-prepull-worker.yaml
}

// An image the lock does not pin is an error naming it and its user.
func ExampleRender_missing() {
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/stowage.yaml", Data: []byte(
		"images:\n  app: {reference: busybox:1.36}\nprofiles:\n  lab:\n    namespace: prepull\n    pullers: [{name: tools, namespace: prepull, images: [app]}]\n")}})
	if err != nil {
		panic(err)
	}
	_, err = render.Render(render.Input{Config: cfg})
	fmt.Println(err)
	// Output:
	// stowage.lock.yaml has no entry for 2 images; run `stowage lock` to resolve them:
	//   docker.io/library/busybox:1.36 (used by image "app")
	//   ghcr.io/stowage/stowage-helper:v0.1.0 (used by profile "lab" helper.image)
}

// WriteStream writes the objects as `stowage render` prints them; here
// the records ConfigMap of a config whose references carry digests, so
// that it needs no lock.
func ExampleWriteStream() {
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/stowage.yaml", Data: []byte(
		"helper: {image: \"ghcr.io/stowage/stowage-helper:v0.1.0@sha256:" + fmt.Sprintf("%064x", 2) + "\"}\n" +
			"images:\n  app: {reference: \"busybox:1.36@sha256:" + fmt.Sprintf("%064x", 1) + "\"}\nprofiles:\n  lab:\n    namespace: prepull\n    pullers: [{name: tools, namespace: prepull, images: [app]}]\n")}})
	if err != nil {
		panic(err)
	}
	objs, err := render.Render(render.Input{Config: cfg})
	if err != nil {
		panic(err)
	}
	if err := render.WriteStream(os.Stdout, objs[:1]); err != nil {
		panic(err)
	}
	// Output:
	// apiVersion: v1
	// data:
	//   images.list: |
	//     busybox:1.36@sha256:0000000000000000000000000000000000000000000000000000000000000001
	// kind: ConfigMap
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: image-records
	//     app.kubernetes.io/instance: tools
	//     app.kubernetes.io/managed-by: stowage
	//     app.kubernetes.io/name: stowage
	//     app.kubernetes.io/part-of: stowage
	//     stowage.dev/profile: lab
	//   name: tools-records
	//   namespace: prepull
}
