package lock

import (
	"slices"
	"strings"
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
)

// v2File is the document Marshal wrote with yaml.v2 before it went through
// internal/yamlenc: the oracle of TestMarshalIsYAMLv2.
type v2File struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec struct {
		Images []Entry `yaml:"images"`
	} `yaml:"spec"`
}

func v2Marshal(t *testing.T, l *Lock) []byte {
	t.Helper()
	var f v2File
	f.APIVersion, f.Kind = APIVersion, ObjectKind
	f.Metadata.Name = ObjectName
	f.Metadata.Annotations = map[string]string{LocalConfigAnnotation: "true"}
	f.Spec.Images = []Entry{}
	if l != nil {
		f.Spec.Images = slices.Clone(l.Entries)
	}
	for i := range f.Spec.Images {
		f.Spec.Images[i].Platforms = sortedPlatforms(f.Spec.Images[i].Platforms)
	}
	slices.SortStableFunc(f.Spec.Images, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	b, err := yaml2.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMarshalIsYAMLv2 checks that Marshal gives the bytes yaml.v2 gave for
// the same lock, for valid entries and for strings Marshal does not
// validate (quotes, numbers, white space, line breaks).
func TestMarshalIsYAMLv2(t *testing.T) {
	d := "sha256:" + strings.Repeat("0a", 32)
	odd := []string{"", "1", "true", "a b", "a: b", "'q'", "x\ny\n", " lead", "é", "-", "2001-01-01", strings.Repeat("long ", 30)}
	locks := []*Lock{nil, {}, {Entries: []Entry{
		{Name: "docker.io/library/busybox:1.31.1", Reference: "busybox:1.31.1", Digest: d, Kind: KindManifest, Size: 1234},
		{Name: "ghcr.io/a/b:v1", Reference: "ghcr.io/a/b:v1", Digest: d, Kind: KindIndex, Platforms: []Platform{
			{Platform: "linux/arm64/v8", Digest: d, Size: 7}, {Platform: "linux/amd64", Digest: d},
		}},
		{Name: "registry.lab:5000/x@" + d, Reference: "registry.lab:5000/x@" + d, Digest: d, Kind: KindManifest},
	}}}
	for _, s := range odd {
		locks = append(locks, &Lock{Entries: []Entry{{Name: s, Reference: s, Digest: s, Kind: Kind(s), Platforms: []Platform{{Platform: s, Digest: s, Size: -1}}, Size: 1}}})
	}
	for _, l := range locks {
		if got, want := string(l.Marshal()), string(v2Marshal(t, l)); got != want {
			t.Errorf("Marshal(%+v):\ngot\n%s\nwant (yaml.v2)\n%s", l, got, want)
		}
	}
}
