// Package bump computes what a lock update changes and words it for a
// reviewer: the images a config pulls and who pulls them (Images), the
// difference between two locks (Diff), and a pull request's title, markdown
// body, branch name and JSON report (Title, Body, Branch, NewReport). It is
// pure: no file, network or environment access, so that the same change
// gives the same text, byte for byte.
package bump

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/schema"
)

// Use is one thing in the config that makes a puller pull an image.
type Use struct {
	// Profile, Namespace and Puller name the puller (a DaemonSet per node
	// group in Namespace).
	Profile, Namespace, Puller string
	// Item is what in the puller pulls it: `environment "jupyter"`,
	// `image "tool"`, "OpenPAI images", "helper image", "pause image".
	Item string
	// Platforms are the platforms the item asks for (see
	// schema.Image.Platforms); empty for the whole index.
	Platforms []string
}

// PullerName is "namespace/puller", the puller's identity in messages.
func (u Use) PullerName() string { return u.Namespace + "/" + u.Puller }

// Image is one unique normalised reference of a config (one lock entry)
// with everything that uses it.
type Image struct {
	// Ref is the spelling the lock records: when some spelling pins a
	// digest, the smallest pinned spelling (a pin applies to every
	// spelling of its key); otherwise the smallest spelling in byte order.
	Ref imageref.Ref
	// Platforms is the union of the uses' platforms, sorted.
	Platforms []string
	// Auth is the credential to resolve the image with: the first
	// username/password auth among the uses (in Uses order); nil when
	// there is none (an auth naming an existing Secret cannot be used
	// outside the cluster).
	Auth *schema.Auth
	// Uses are sorted by profile, namespace, puller and item.
	Uses []Use
}

// Images lists every image of every profile of cfg, one per lock key,
// sorted by key: exactly what a complete lock holds. Errors: the profile
// errors of render.Images, and a key pinned to two different digests
// (naming both spellings).
func Images(cfg *schema.Config) ([]Image, error) {
	type acc struct {
		spellings map[string]imageref.Ref
		uses      []Use
		useAuth   []*schema.Auth // the auth of uses[i]
	}
	byKey := map[string]*acc{}
	var errs []string
	for _, pname := range cfg.ProfileNames() {
		_, prof, err := cfg.Profile(pname)
		if err != nil {
			return nil, err
		}
		refs, err := render.Images(cfg, pname)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", pname, err)
		}
		// What each puller pulls, by spelling.
		type item struct {
			use  Use
			auth *schema.Auth
		}
		bySpelling := map[string][]item{}
		var openpaiPullers []Use
		for _, p := range prof.Pullers {
			base := Use{Profile: pname, Namespace: p.Namespace, Puller: p.Name}
			add := func(written, what string, platforms []string, auth *schema.Auth) {
				u := base
				u.Item, u.Platforms = what, sortedUnique(platforms)
				bySpelling[written] = append(bySpelling[written], item{u, auth})
			}
			for _, e := range p.Environments {
				env := cfg.Environments[e]
				add(env.Image, fmt.Sprintf("environment %q", e), env.Platforms, env.Auth)
			}
			for _, k := range p.Images {
				im := cfg.Images[k]
				add(im.Reference, fmt.Sprintf("image %q", k), im.Platforms, im.Auth)
			}
			add(prof.Helper.Image, "helper image", nil, nil)
			add(prof.Helper.Pause, "pause image", nil, nil)
			if len(p.OpenPAI) > 0 {
				u := base
				u.Item = "OpenPAI images"
				openpaiPullers = append(openpaiPullers, u)
			}
		}
		for _, ref := range refs {
			a := byKey[ref.Key()]
			if a == nil {
				a = &acc{spellings: map[string]imageref.Ref{}}
				byKey[ref.Key()] = a
			}
			a.spellings[ref.Written] = ref
			items := bySpelling[ref.Written]
			if len(items) == 0 {
				for _, u := range openpaiPullers {
					items = append(items, item{use: u})
				}
			}
			for _, it := range items {
				a.uses = append(a.uses, it.use)
				a.useAuth = append(a.useAuth, it.auth)
			}
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Image, 0, len(keys))
	for _, k := range keys {
		a := byKey[k]
		img := Image{}
		spellings := make([]string, 0, len(a.spellings))
		for s := range a.spellings {
			spellings = append(spellings, s)
		}
		sort.Strings(spellings)
		img.Ref = a.spellings[spellings[0]]
		pins := map[string]string{} // digest -> smallest spelling
		for _, s := range spellings {
			if d := a.spellings[s].Digest; d != "" {
				if _, ok := pins[d]; !ok {
					pins[d] = s
				}
			}
		}
		switch len(pins) {
		case 0:
		case 1:
			for _, s := range pins {
				img.Ref = a.spellings[s]
			}
		default:
			var ss []string
			for _, s := range pins {
				ss = append(ss, fmt.Sprintf("%q", s))
			}
			sort.Strings(ss)
			errs = append(errs, fmt.Sprintf("image %s is pinned to %d different digests: %s; pin one digest (or none) for every spelling", k, len(pins), strings.Join(ss, ", ")))
			continue
		}
		idx := make([]int, len(a.uses))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return useLess(a.uses[idx[i]], a.uses[idx[j]]) })
		seen := map[string]bool{}
		var platforms []string
		for _, i := range idx {
			u := a.uses[i]
			id := u.Profile + "\x00" + u.PullerName() + "\x00" + u.Item
			if seen[id] {
				continue
			}
			seen[id] = true
			img.Uses = append(img.Uses, u)
			platforms = append(platforms, u.Platforms...)
			if au := a.useAuth[i]; img.Auth == nil && au != nil && au.Username != "" && au.Password != "" {
				img.Auth = au
			}
		}
		img.Platforms = sortedUnique(platforms)
		out = append(out, img)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

// UsedBy describes the uses in one line for messages:
// `environment "jupyter" in tenant-a/notebook-images, …`.
func (img Image) UsedBy() string {
	var parts []string
	seen := map[string]bool{}
	for _, u := range img.Uses {
		s := u.Item + " in " + u.PullerName()
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("%d more", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

func useLess(a, b Use) bool {
	switch {
	case a.Profile != b.Profile:
		return a.Profile < b.Profile
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.Puller != b.Puller:
		return a.Puller < b.Puller
	default:
		return a.Item < b.Item
	}
}

func sortedUnique(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := append([]string(nil), ss...)
	sort.Strings(out)
	n := 1
	for _, s := range out[1:] {
		if s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
