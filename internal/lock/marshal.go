package lock

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/api/v1alpha1"
)

// file is the lock document, read by Parse and written by Marshal; field
// order is output order. Its metadata accepts namespace and labels because
// kustomize's `namespace:` and `labels:` set them on every resource, the
// lock included; they mean nothing to stowage and Marshal does not write
// them.
type file = v1alpha1.ImageLock

// Marshal returns the canonical bytes of the lock file: the object shown in
// the package documentation, entries sorted by name, platforms sorted by
// platform, fields in a fixed order, two-space indentation with list items
// at their key's column, no timestamps. Equal entries give equal bytes
// whatever order they were added in. Marshal does not validate the entries
// (Parse does when reading them back).
func (l *Lock) Marshal() []byte {
	entries := []Entry{}
	if l != nil {
		entries = slices.Clone(l.Entries)
	}
	for i := range entries {
		entries[i].Platforms = sortedPlatforms(entries[i].Platforms)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	err := enc.Encode(file{
		APIVersion: APIVersion,
		Kind:       ObjectKind,
		Metadata: v1alpha1.ObjectMeta{
			Name:        ObjectName,
			Annotations: map[string]string{LocalConfigAnnotation: "true"},
		},
		Spec: v1alpha1.ImageLockSpec{Images: entries},
	})
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		// Only strings and integers are encoded: this cannot happen.
		panic(fmt.Sprintf("lock: marshal: %v", err))
	}
	return b.Bytes()
}
