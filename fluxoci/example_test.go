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
	v1 "github.com/google/go-containerregistry/pkg/v1"
	yaml "go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/site"
)

type fluxObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		URL string `yaml:"url"`
		Ref struct {
			Tag    string `yaml:"tag"`
			Digest string `yaml:"digest"`
		} `yaml:"ref"`
		SourceRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"sourceRef"`
		Path string `yaml:"path"`
	} `yaml:"spec"`
}

// readFluxExample reads an OCIRepository and the Kustomization applying it
// from the artifact's root, where render -o puts kustomization.yaml, from
// a file of examples/gitops-flux/oci, and returns the OCIRepository and
// its url's repository.
func readFluxExample(t *testing.T, file string) (fluxObject, name.Repository) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "gitops-flux", "oci", file))
	if err != nil {
		t.Fatal(err)
	}
	var objs []fluxObject
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(false)
	for {
		var o fluxObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objs = append(objs, o)
	}
	if len(objs) != 2 || objs[0].Kind != "OCIRepository" || objs[0].APIVersion != "source.toolkit.fluxcd.io/v1" ||
		objs[1].Kind != "Kustomization" || objs[1].APIVersion != "kustomize.toolkit.fluxcd.io/v1" {
		t.Fatalf("%s: want an OCIRepository (source.toolkit.fluxcd.io/v1) and a Kustomization (kustomize.toolkit.fluxcd.io/v1), got %+v", file, objs)
	}
	repo, k := objs[0], objs[1]
	if k.Spec.SourceRef.Kind != "OCIRepository" || k.Spec.SourceRef.Name != repo.Metadata.Name || k.Metadata.Namespace != repo.Metadata.Namespace || k.Spec.Path != "./" {
		t.Errorf("%s: the Kustomization does not apply the OCIRepository's root: %+v", file, k)
	}
	rest, ok := strings.CutPrefix(repo.Spec.URL, "oci://")
	if !ok {
		t.Fatalf("%s: url %q does not start with oci://", file, repo.Spec.URL)
	}
	r, err := name.NewRepository(rest, name.StrictValidation)
	if err != nil {
		t.Fatalf("%s: url %q: %v", file, repo.Spec.URL, err)
	}
	return repo, r
}

// TestFluxExample checks examples/gitops-flux/oci: ocirepository.yaml's
// url is a destination stowage push takes (with the tag of ref.tag), and
// site/ocirepository.yaml's is where stowage mirror puts that artifact at
// the site registry of its comment (the site rule, internal/site), pinned
// by a digest.
func TestFluxExample(t *testing.T) {
	pushed, from := readFluxExample(t, "ocirepository.yaml")
	if _, err := name.NewTag(from.Name()+":"+pushed.Spec.Ref.Tag, name.StrictValidation); err != nil {
		t.Errorf("ocirepository.yaml: url %q with tag %q: %v", pushed.Spec.URL, pushed.Spec.Ref.Tag, err)
	}
	atSite, to := readFluxExample(t, filepath.Join("site", "ocirepository.yaml"))
	want, err := site.Mapping{Default: "registry.site.example:5000"}.Repository(from)
	if err != nil {
		t.Fatal(err)
	}
	if to != want {
		t.Errorf("site/ocirepository.yaml: url %s, want %s, where stowage mirror --to registry.site.example:5000 puts %s", to, want, from)
	}
	if _, err := v1.NewHash(atSite.Spec.Ref.Digest); err != nil || atSite.Spec.Ref.Tag != "" {
		t.Errorf("site/ocirepository.yaml: ref %+v: want a digest alone (%v)", atSite.Spec.Ref, err)
	}
}
