package render

import (
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stowage/stowage/schema"
)

// TestMarshalIsYAMLv2 checks that Marshal, which writes through
// internal/yamlenc, gives yaml.v2's bytes for every object the examples
// render.
func TestMarshalIsYAMLv2(t *testing.T) {
	for _, s := range exampleSeeds(t) {
		var files []schema.File
		if len(s.cue) > 0 {
			files = append(files, schema.File{Name: "config/site.cue", Data: s.cue})
		}
		if len(s.yaml) > 0 {
			files = append(files, schema.File{Name: "config/site.yaml", Data: s.yaml})
		}
		cfg, err := schema.LoadFiles("config", files, schema.Options{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, profile := range cfg.ProfileNames() {
			renderChecked(t, cfg, profile)
			objs, err := Render(Input{Config: cfg, Profile: profile, Lock: standinLock(t, cfg, profile), Passwords: placeholderPasswords(t, cfg, profile)})
			if err != nil {
				t.Fatalf("%s/%s: %v", s.name, profile, err)
			}
			for _, o := range objs {
				got, err := Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				prune(u)
				delete(u, "status")
				want, err := yamlv2.Marshal(u)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("%s/%s: %s %s/%s:\ngot\n%s\nwant (yaml.v2)\n%s", s.name, profile, o.Kind, o.Namespace, o.Name, got, want)
				}
			}
		}
	}
}

func placeholderPasswords(t *testing.T, cfg *schema.Config, profile string) map[string][]byte {
	t.Helper()
	sources, err := PasswordSources(cfg, profile)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string][]byte{}
	for _, s := range sources {
		pw[s.Source] = []byte("pw:\x00\xff\"")
	}
	return pw
}
