package workload

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestEachImageFindsPodTemplatesAnywhere: on custom resources whose pod
// templates sit outside kyaml's conventional paths (the fn fixture), every
// container image is found at its field, and a policy's pattern with a
// container list's shape is not; at a conventional path an image that does
// not parse is still reported (the function refuses it there), while one
// found by shape elsewhere is not.
func TestEachImageFindsPodTemplatesAnywhere(t *testing.T) {
	b, err := os.ReadFile("../../fn/testdata/kustomize/pin-custom-resources/resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	items, err := kio.FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := yaml.Parse(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: a, image: "Bad Image"}
  volumes:
  - {name: m, image: {reference: "quay.io/org/model:v1"}}
  overhead:
    containers:
    - {name: b, image: "Not An Image"}
    - {image: "quay.io/org/noname:v1"}
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	EachImage(append(items, extra), func(item, img *yaml.RNode, field string) {
		got = append(got, item.GetKind()+" "+field+" "+img.YNode().Value)
	})
	want := []string{
		"ServingRuntime spec.containers[0].image kserve/huggingfaceserver:v0.15.0",
		"ServingRuntime spec.workerSpec.containers[0].image kserve/huggingfaceserver:v0.15.0-gpu",
		"Notebook spec.template.spec.containers[0].image kubeflownotebookswg/jupyter-scipy:v1.9.0",
		"PyTorchJob spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image docker.io/kubeflowkatib/pytorch-mnist-cpu:v0.17.0",
		"PyTorchJob spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[0].image busybox:1.36",
		"PyTorchJob spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image docker.io/kubeflowkatib/pytorch-mnist-cpu:v0.17.0",
		"Experiment spec.trialTemplate.trialSpec.spec.template.spec.containers[0].image docker.io/kubeflowkatib/mxnet-mnist:v0.17.0",
		"WorkflowTemplate spec.templates[1].sidecars[0].image nginx:1.27",
		"WorkflowTemplate spec.templates[1].container.image argoproj/argosay:v2",
		"WorkflowTemplate spec.templates[2].initContainers[0].image alpine:3.20",
		"WorkflowTemplate spec.templates[2].script.image python:3.12-alpine",
		"Pod spec.containers[0].image Bad Image",
		"Pod spec.volumes[0].image.reference quay.io/org/model:v1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
