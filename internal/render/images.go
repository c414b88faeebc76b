package render

import (
	"errors"
	"sort"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/schema"
)

// Images returns every image the profile pre-pulls, including the helper
// and pause images, as parsed references sorted by lock key and then by
// spelling; each (key, spelling) appears once. It reads no lock: this is
// what a lock for the profile must cover.
func Images(cfg *schema.Config, profile string) ([]imageref.Ref, error) {
	name, prof, err := cfg.Profile(profile)
	if err != nil {
		return nil, err
	}
	r := &renderer{in: Input{Config: cfg}, profileName: name, prof: prof, missing: map[string][]string{}}
	plan := r.openpaiPlan()
	seen := map[string]imageref.Ref{}
	add := func(ref imageref.Ref) { seen[ref.Key()+"\x00"+ref.Written] = ref }
	for i := range prof.Pullers {
		for _, it := range r.items(&prof.Pullers[i], plan) {
			add(it.ref)
		}
	}
	if len(prof.Pullers) > 0 {
		for _, s := range []string{prof.Helper.Image, prof.Helper.Pause} {
			ref, err := imageref.Parse(s)
			if err != nil {
				r.fail("profile %q helper: %v", name, err)
				continue
			}
			add(ref)
		}
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	var out []imageref.Ref
	for _, k := range sortedKeys(seen) {
		out = append(out, seen[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}
