package render

import (
	"path/filepath"
	"reflect"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/configgen"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

// TestMarshalIsYAMLv2 checks that Marshal, which builds the unstructured map
// through a JSON round trip, gives the bytes of yaml.v2 over apimachinery's
// ToUnstructured for every object the examples render.
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
				checkUnstructured(t, o)
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

func placeholderPasswords(t *testing.T, cfg *v1alpha1.Config, profile string) map[string][]byte {
	t.Helper()
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string][]byte{}
	for _, s := range p.PasswordSources() {
		pw[s.Source] = []byte("pw:\x00\xff\"")
	}
	return pw
}

// checkUnstructured checks that unstructured gives the map
// runtime.DefaultUnstructuredConverter.ToUnstructured gives.
func checkUnstructured(t *testing.T, o Object) {
	t.Helper()
	got, err := unstructured(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s/%s: unstructured differs from ToUnstructured:\ngot  %#v\nwant %#v", o.Kind, o.Namespace, o.Name, got, want)
	}
}

// TestUnstructuredIsToUnstructured checks unstructured against
// ToUnstructured on a synthetic config (every DaemonSet shape of a large
// render: split node groups, records ConfigMaps).
func TestUnstructuredIsToUnstructured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scale")
	if err := configgen.Generate(100, 40, dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(Input{Config: cfg, Lock: l})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		checkUnstructured(t, o)
	}
}
