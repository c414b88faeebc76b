package plan

import (
	"fmt"
	"slices"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
)

// OpenPAIList returns the images of role in the profile's reduced OpenPAI
// selection as the rendered OpenPAI ConfigMap lists them in
// images.<role>.list, sorted: each at its site reference when a site
// applies (Site), pinned like images.list ("ref@sha256:…") to the digest
// its pre-pulling use pins. An image of a role no puller pre-pulls has no
// use; it is pinned to its lock entry in l (PinOf) when l has one, and
// written without a digest otherwise (nothing pins it). Empty without an
// OpenPAI selection. Errors: a reference that does not parse or map.
func (p *Plan) OpenPAIList(role openpai.Role, l *lock.Lock) ([]string, error) {
	if p.OpenPAI == nil {
		return nil, nil
	}
	pins := map[string]string{}
	for _, img := range p.Images {
		for _, u := range img.Uses {
			if u.Kind == KindOpenPAI && u.Pin.Digest != "" {
				pins[img.Key] = u.Pin.Digest
			}
		}
	}
	out := make([]string, 0, len(p.OpenPAI.Images[role]))
	for _, s := range p.OpenPAI.Images[role] {
		ref, err := imageref.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("OpenPAI image %q: %w", s, err)
		}
		at, err := SiteReference(p.Site, ref)
		if err != nil {
			return nil, fmt.Errorf("OpenPAI image %q: %w", s, err)
		}
		d, ok := pins[ref.Key()]
		if !ok {
			d = PinOf(ref, nil, l).Digest
		}
		if d != "" {
			at += "@" + d
		}
		out = append(out, at)
	}
	slices.Sort(out)
	return out, nil
}
