package lock

import (
	"fmt"
	"slices"
	"strings"

	yaml2 "go.yaml.in/yaml/v2"
)

// file is the document shape written by Marshal; field order is output order.
type file struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	Spec       spec     `yaml:"spec"`
}

type metadata struct {
	Name        string            `yaml:"name"`
	Annotations map[string]string `yaml:"annotations"`
}

type spec struct {
	Images []Entry `yaml:"images"`
}

// Marshal returns the canonical bytes of the lock file: the object shown in
// the package documentation, entries sorted by name, platforms sorted by
// platform, fields in a fixed order, two-space indentation, no timestamps.
// Equal entries give equal bytes whatever order they were added in. Marshal
// does not validate the entries (Parse does when reading them back).
func (l *Lock) Marshal() []byte {
	entries := []Entry{}
	if l != nil {
		entries = slices.Clone(l.Entries)
	}
	for i := range entries {
		entries[i].Platforms = sortedPlatforms(entries[i].Platforms)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	out, err := yaml2.Marshal(file{
		APIVersion: APIVersion,
		Kind:       ObjectKind,
		Metadata: metadata{
			Name:        ObjectName,
			Annotations: map[string]string{LocalConfigAnnotation: "true"},
		},
		Spec: spec{Images: entries},
	})
	if err != nil {
		// Only strings and integers are encoded: this cannot happen.
		panic(fmt.Sprintf("lock: marshal: %v", err))
	}
	return out
}
