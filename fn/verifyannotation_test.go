package fn

import (
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestVerifyAnnotation: a JupyterImagePuller's stowage.dev/verify
// annotation becomes its profile's verify policy (profiles.NAME.verify),
// the one plan.VerifyPolicy applies to its environments.
func TestVerifyAnnotation(t *testing.T) {
	fc, err := yaml.Parse(`apiVersion: org.apache.submarine/v1
kind: JupyterImagePuller
metadata:
  name: puller
  namespace: submarine
  annotations:
    stowage.dev/verify: '{mode: optional, keys: [keys/release.pub]}'
spec:
  images:
  - {name: jupyter, image: apache/submarine:jupyter-notebook-0.7.0}
`)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{p: &Processor{Dir: t.TempDir()}}
	conf, ok := s.submarine(fc)
	if !ok {
		t.Fatalf("not converted: %+v", s.results)
	}
	v := conf.cfg.Profiles["puller"].Verify
	if v == nil || v.Mode != "optional" || !slices.Equal(v.Keys, []string{"keys/release.pub"}) || conf.cfg.Verify != nil {
		t.Errorf("profile verify %+v, top-level %+v; want the annotation's policy on the profile alone", v, conf.cfg.Verify)
	}
}
