package mirror

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/plan"
)

// Selection is what a mirror run copies of a config's image plans.
type Selection struct {
	// Images are the images to copy, in plan order.
	Images []Image
	// Roles are the lock keys of each OpenPAI role's images (the role
	// "all" images with each), for bytes per role; empty without OpenPAI.
	Roles map[openpai.Role]map[string]bool
	// AuthImages are the plan images with registry credentials, which
	// give the password sources their users in messages.
	AuthImages []*plan.Image
}

// UnpinnedError lists the images of a selection the lock does not pin
// (or whose digest or site reference does not parse), one message each,
// sorted, without repeats.
type UnpinnedError struct {
	Problems []string
}

// Error lists the problems, one an indented line.
func (e *UnpinnedError) Error() string {
	return "the lock does not pin every image:\n  " + strings.Join(e.Problems, "\n  ")
}

// Select lists the images of groups (each a plan's Images: the profiles
// copied, then the workloads a KRM function pins) with the digests their
// plan pins (internal/plan): one Image per distinct pinned digest, tag
// and site repository of each lock key. An index or manifest pin writes
// the tag; a child pin (one platform) is copied by digest alone; the site
// repository is the one of the use's site reference, where render points.
// Registry credentials go with an image only when they name a username
// and a password. Errors: an *UnpinnedError naming every image the lock
// does not pin.
func Select(groups [][]*plan.Image) (*Selection, error) {
	sel := &Selection{Roles: map[openpai.Role]map[string]bool{}}
	seen := map[string]bool{}
	var problems []string
	for _, images := range groups {
		for _, img := range images {
			for _, u := range img.Uses {
				if u.Kind == plan.KindOpenPAI {
					sel.addRole(openpai.Role(u.Name), img.Key)
				}
				for _, e := range u.Pin.Errs {
					problems = append(problems, e.Error())
				}
				if u.Pin.Digest == "" {
					continue
				}
				mi, err := imageOf(img, u)
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				id := img.Key + "\x00" + u.Pin.Digest + "\x00" + mi.Tag + "\x00" + mi.Site
				if seen[id] {
					continue
				}
				seen[id] = true
				if mi.Digest, err = v1.NewHash(u.Pin.Digest); err != nil {
					problems = append(problems, fmt.Sprintf("image %s: digest %q: %v", u.Ref.Written, u.Pin.Digest, err))
					continue
				}
				sel.Images = append(sel.Images, mi)
			}
			if img.Auth != nil {
				sel.AuthImages = append(sel.AuthImages, img)
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return sel, &UnpinnedError{Problems: slices.Compact(problems)}
	}
	return sel, nil
}

// addRole records that the image with lock key key serves role.
func (sel *Selection) addRole(role openpai.Role, key string) {
	if sel.Roles[role] == nil {
		sel.Roles[role] = map[string]bool{}
	}
	sel.Roles[role][key] = true
}

// imageOf is the mirror image of u, a pinned use of img, without its
// digest: its tag (none for a child pin), its site repository and the
// credentials it is read with. Errors: a site reference that does not
// parse, naming the use.
func imageOf(img *plan.Image, u *plan.Use) (Image, error) {
	tag := u.Ref.Tag
	if u.Pin.Why == plan.PinChild {
		tag = ""
	}
	siteRepo, err := siteRepository(u)
	if err != nil {
		return Image{}, err
	}
	mi := Image{Name: img.Key, Written: img.Ref.Written, Source: img.Ref.Repository, Tag: tag, Site: siteRepo}
	if a := img.Auth; a != nil && a.Username != "" && a.Password != "" {
		mi.Auth = a
	}
	return mi, nil
}

// siteRepository is the repository of the use's site reference (the
// plan's Use.Site, where render points), or "" when its profile names no
// site registry.
func siteRepository(u *plan.Use) (string, error) {
	if u.Site == "" {
		return "", nil
	}
	ref, err := name.ParseReference(u.Site, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("%s: site reference %q: %v", u.UsedBy(), u.Site, err)
	}
	return ref.Context().Name(), nil
}

// LeaveOut drops the images the site lock have already pins: its entry
// for the image's key has the same digest, as the entry or as one of its
// children. It also returns what the site holds of the images' keys (the
// site lock's entry for each key, at the image's source and site
// repositories, once per key and site), whose blobs a delta bundle leaves
// out (WithHave).
func LeaveOut(images []Image, have *lock.Lock) (copied, held []Image) {
	seen := map[string]bool{}
	for _, img := range images {
		e, ok := have.Lookup(lockKey(img))
		if ok {
			if h, err := v1.NewHash(e.Digest); err == nil && !seen[img.Name+"\x00"+img.Site] {
				seen[img.Name+"\x00"+img.Site] = true
				held = append(held, Image{Name: img.Name, Written: img.Written, Source: img.Source, Digest: h, Site: img.Site, Auth: img.Auth})
			}
		}
		if ok && holds(e, img.Digest.String()) {
			continue
		}
		copied = append(copied, img)
	}
	return copied, held
}

// lockKey is the lock key of a mirror image: its name is one already, from
// the plan or a bundle's annotation; parsed again so that any spelling
// keys alike.
func lockKey(img Image) string {
	ref, err := imageref.Parse(img.Name)
	if err != nil {
		return img.Name
	}
	return ref.Key()
}

// holds reports whether e pins digest, as its own digest or a child's.
func holds(e lock.Entry, digest string) bool {
	if e.Digest == digest {
		return true
	}
	for _, p := range e.Platforms {
		if p.Digest == digest {
			return true
		}
	}
	return false
}
