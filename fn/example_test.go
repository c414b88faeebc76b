package fn_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/fn"
)

// exampleInput is a ResourceList as kustomize hands it to the function: a
// Stowage functionConfig and the ImageLock item (here empty: every
// reference of the config carries its digest).
var exampleInput = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig:
  apiVersion: stowage.dev/v1alpha1
  kind: Stowage
  metadata: {name: prepull}
  spec:
    profile: lab
    helper: {image: "ghcr.io/stowage/stowage-helper:v0.1.0@sha256:` + strings.Repeat("2", 64) + `"}
    images:
      app: {reference: "busybox:1.36@sha256:` + strings.Repeat("1", 64) + `"}
    profiles:
      lab:
        namespace: prepull
        pullers: [{name: tools, namespace: prepull, images: [app]}]
items:
- apiVersion: stowage.dev/v1alpha1
  kind: ImageLock
  metadata:
    name: stowage-lock
    annotations: {config.kubernetes.io/local-config: "true"}
  spec: {images: []}
`

// The Processor is a framework.ResourceListProcessor: kyaml's framework
// reads the ResourceList, the processor renders the profile into it.
func ExampleProcessor() {
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: strings.NewReader(exampleInput), Writer: &out, KeepReaderAnnotations: true}
	if err := framework.Execute(&fn.Processor{}, rw); err != nil {
		fmt.Println(err)
		return
	}
	items, err := (&kio.ByteReader{Reader: &out}).Read()
	if err != nil {
		panic(err)
	}
	for _, it := range items {
		fmt.Println(it.GetKind(), it.GetNamespace()+"/"+it.GetName())
	}
	// Output:
	// ImageLock /stowage-lock
	// ConfigMap prepull/tools-records
	// DaemonSet prepull/tools
}

// NewCommand is the function as a command, flags included, for a
// program that composes it: that program prints the command's errors and
// dispatches the config-evaluation child itself (a binary of its own is
// fn.Main).
func ExampleNewCommand() {
	cmd := fn.NewCommand()
	var out bytes.Buffer
	cmd.SetIn(strings.NewReader(exampleInput))
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--max-input-bytes", "100000"})
	if err := cmd.Execute(); err != nil {
		fmt.Println(err)
		return
	}
	rl, err := yaml.Parse(out.String())
	if err != nil {
		panic(err)
	}
	items, _ := rl.Pipe(yaml.Lookup("items"))
	n, _ := items.Elements()
	fmt.Println(len(n), "items")
	// Output: 3 items
}

// Main is the whole program of a function binary of its own: declared in
// a kustomization with its name as the exec path (args: [fn], written for
// stowage, works too), it evaluates configs in a child process of itself
// and prints every error to stderr.
func ExampleMain() {
	// func main() {
	os.Exit(fn.Main())
	// }
}
