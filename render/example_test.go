package render_test

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// Render a profile of an example config with its lock. The profile needs
// no password, so Passwords stays empty.
func ExampleRender() {
	cfg, err := schema.Load("../examples/openpai-offline")
	if err != nil {
		panic(err)
	}
	data, err := os.ReadFile("../examples/openpai-offline/stowage.lock.yaml")
	if err != nil {
		panic(err)
	}
	var l v1alpha1.ImageLock
	if err := yaml.UnmarshalStrict(data, &l); err != nil {
		panic(err)
	}
	objs, err := render.Render(render.Input{Config: cfg, Lock: &l, Profile: "offline"})
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
	// stowage.lock.yaml has no entry for 2 image(s); run `stowage lock` to resolve them:
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
