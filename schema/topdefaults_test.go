package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestTopLevelDefaults: secrets and resources set once at the top level
// apply to every profile; a profile's own value overrides them field by
// field, and secrets without any setting stays render.
func TestTopLevelDefaults(t *testing.T) {
	dir := t.TempDir()
	conf := `secrets: reference
resources:
  requests: {cpu: 5m, memory: 20Mi}
  limits: {cpu: 100m}
environments:
  app: {image: "busybox:1.36"}
profiles:
  inherit:
    pullers: [{name: p, namespace: a, environments: [app]}]
  own:
    secrets: render
    resources: {requests: {cpu: 7m}}
    pullers: [{name: p, namespace: a, environments: [app]}]
`
	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		profile, secrets    string
		cpu, memory, limCPU v1alpha1.Quantity
	}{
		{"inherit", v1alpha1.SecretsReference, "5m", "20Mi", "100m"},
		{"own", v1alpha1.SecretsRender, "7m", "20Mi", "100m"},
	} {
		p := cfg.Profiles[tc.profile]
		if p.Secrets != tc.secrets {
			t.Errorf("profile %s: secrets %q, want %q", tc.profile, p.Secrets, tc.secrets)
		}
		if p.Resources == nil {
			t.Fatalf("profile %s: no resources", tc.profile)
		}
		if got := p.Resources.Requests; got.CPU != tc.cpu || got.Memory != tc.memory {
			t.Errorf("profile %s: requests %+v, want cpu %s memory %s", tc.profile, got, tc.cpu, tc.memory)
		}
		if p.Resources.Limits.CPU != tc.limCPU {
			t.Errorf("profile %s: limits.cpu %s, want %s", tc.profile, p.Resources.Limits.CPU, tc.limCPU)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte("environments: {app: {image: \"busybox:1.36\"}}\nprofiles: {p: {pullers: [{name: p, namespace: a, environments: [app]}]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Profiles["p"].Secrets; got != v1alpha1.SecretsRender {
		t.Errorf("secrets with no setting = %q, want %q", got, v1alpha1.SecretsRender)
	}
}
