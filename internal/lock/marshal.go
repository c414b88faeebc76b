package lock

import (
	"fmt"
	"slices"
	"strings"

	yaml2 "go.yaml.in/yaml/v2"

	"github.com/stowage/stowage/internal/yamlenc"
)

// Marshal returns the canonical bytes of the lock file: the object shown in
// the package documentation, entries sorted by name, platforms sorted by
// platform, fields in a fixed order, two-space indentation, no timestamps.
// Equal entries give equal bytes whatever order they were added in. Marshal
// does not validate the entries (Parse does when reading them back).
//
// The bytes are yaml.v2's encoding of the document (struct fields in
// order, omitempty for platforms and sizes), written through
// internal/yamlenc, which gives the same bytes several times faster.
func (l *Lock) Marshal() []byte {
	entries := []Entry{}
	if l != nil {
		entries = slices.Clone(l.Entries)
	}
	for i := range entries {
		entries[i].Platforms = sortedPlatforms(entries[i].Platforms)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	images := make([]any, len(entries))
	for i, e := range entries {
		images[i] = entryDoc(e)
	}
	out, err := yamlenc.Marshal(yaml2.MapSlice{
		{Key: "apiVersion", Value: APIVersion},
		{Key: "kind", Value: ObjectKind},
		{Key: "metadata", Value: yaml2.MapSlice{
			{Key: "name", Value: ObjectName},
			{Key: "annotations", Value: map[string]any{LocalConfigAnnotation: "true"}},
		}},
		{Key: "spec", Value: yaml2.MapSlice{{Key: "images", Value: images}}},
	})
	if err != nil {
		// Only strings and integers are encoded: this cannot happen.
		panic(fmt.Sprintf("lock: marshal: %v", err))
	}
	return out
}

// entryDoc is e as yaml.v2 encodes the Entry struct: fields in declaration
// order, Platforms and Size left out when empty (omitempty).
func entryDoc(e Entry) yaml2.MapSlice {
	d := make(yaml2.MapSlice, 0, 6)
	d = append(d,
		yaml2.MapItem{Key: "name", Value: e.Name},
		yaml2.MapItem{Key: "reference", Value: e.Reference},
		yaml2.MapItem{Key: "digest", Value: e.Digest},
		yaml2.MapItem{Key: "kind", Value: string(e.Kind)},
	)
	if len(e.Platforms) > 0 {
		ps := make([]any, len(e.Platforms))
		for i, p := range e.Platforms {
			pd := yaml2.MapSlice{{Key: "platform", Value: p.Platform}, {Key: "digest", Value: p.Digest}}
			if p.Size != 0 {
				pd = append(pd, yaml2.MapItem{Key: "size", Value: p.Size})
			}
			ps[i] = pd
		}
		d = append(d, yaml2.MapItem{Key: "platforms", Value: ps})
	}
	if e.Size != 0 {
		d = append(d, yaml2.MapItem{Key: "size", Value: e.Size})
	}
	return d
}
