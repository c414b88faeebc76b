package fluxoci

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	yaml "go.yaml.in/yaml/v3"
)

// TestFluxExample checks examples/gitops-flux/oci/ocirepository.yaml: an
// OCIRepository whose url is a destination stowage push takes (with the
// tag of ref.tag), and a Kustomization applying it from the artifact's
// root, where render -o puts kustomization.yaml.
func TestFluxExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "gitops-flux", "oci", "ocirepository.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Spec struct {
			URL string `yaml:"url"`
			Ref struct {
				Tag string `yaml:"tag"`
			} `yaml:"ref"`
			SourceRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"sourceRef"`
			Path string `yaml:"path"`
		} `yaml:"spec"`
	}
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(false)
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	if len(objs) != 2 || objs[0].Kind != "OCIRepository" || objs[0].APIVersion != "source.toolkit.fluxcd.io/v1" ||
		objs[1].Kind != "Kustomization" || objs[1].APIVersion != "kustomize.toolkit.fluxcd.io/v1" {
		t.Fatalf("want an OCIRepository (source.toolkit.fluxcd.io/v1) and a Kustomization (kustomize.toolkit.fluxcd.io/v1), got %+v", objs)
	}
	repo, k := objs[0], objs[1]
	rest, ok := strings.CutPrefix(repo.Spec.URL, "oci://")
	if !ok {
		t.Fatalf("url %q does not start with oci://", repo.Spec.URL)
	}
	if _, err := name.NewTag(rest+":"+repo.Spec.Ref.Tag, name.StrictValidation); err != nil {
		t.Errorf("url %q with tag %q: %v", repo.Spec.URL, repo.Spec.Ref.Tag, err)
	}
	if k.Spec.SourceRef.Kind != "OCIRepository" || k.Spec.SourceRef.Name != repo.Metadata.Name || k.Metadata.Namespace != repo.Metadata.Namespace || k.Spec.Path != "./" {
		t.Errorf("the Kustomization does not apply the OCIRepository's root: %+v", k)
	}
}
