package mirror

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/site"
)

// BindBundle checks that every descriptor of the bundle at path goes
// where the bundle's lock (lockBytes, the lock render used) says, so that
// index.json's annotations, which nothing authenticates, cannot choose a
// destination at the site. images are the bundle's (BundleImages). Each
// image's lock key (AnnotationRefName) must be an entry of the lock, in
// its one spelling (imageref.Ref.Key), and AnnotationReference must name
// the same key. An image must be at the entry's digest with the tag of its
// lock reference (AnnotationTag; none for a reference by digest), or at
// one of the entry's index children (Platforms, a child pinned alone)
// with no tag. An attachment (AnnotationAttachment) must be named by an
// image of the bundle and hang off that image's digest or one of its
// index children (AnnotationSubject); its tag is the tag scheme's for
// that subject (parseBundleIndex). A site repository (AnnotationSite) is
// what the one site rule (site.Mapping.Repository) gives for the lock
// reference under the prefix the bundle was written for: the lock's
// repository path kept (several configs may write one bundle, each with
// its own mapping, so the prefix is not checked against the others'); an
// image without one goes where the operator's --to maps it. A bundle without a lock
// is refused: stowage writes one into every bundle. Errors name each
// image and annotation refused; nothing is pushed then.
func BindBundle(path string, images []Image, lockBytes []byte) error {
	if lockBytes == nil {
		return fmt.Errorf("oci:%s: the bundle holds no %s; stowage writes one into every bundle, and where each image goes at the site is bound to it: refused, nothing pushed", path, BundleLock)
	}
	l, err := lock.Parse(lockBytes, "oci:"+path+"/"+BundleLock)
	if err != nil {
		return err
	}
	var problems []string
	say := func(img Image, format string, args ...any) {
		what := "image " + img.Name
		if a := img.Attachment; a != nil {
			what = fmt.Sprintf("%s %s of image %s", a.Kind, img.Digest, img.Name)
		}
		problems = append(problems, what+": "+fmt.Sprintf(format, args...))
	}
	owners := map[string]bool{}
	for _, img := range images {
		if img.Attachment == nil {
			owners[img.Name] = true
		}
	}
	refs := make([]imageref.Ref, len(images))
	bound := make([]bool, len(images))
	for i, img := range images {
		e, ok := l.Lookup(img.Name)
		if !ok {
			say(img, "index.json's %s names no entry of the bundle's lock; only locked images are pushed from a bundle", AnnotationRefName)
			continue
		}
		ref, err := imageref.Parse(img.Name)
		if err != nil || ref.Key() != img.Name {
			say(img, "index.json's %s is not a lock key", AnnotationRefName)
			continue
		}
		refs[i] = ref
		if img.Written != "" && img.Written != img.Name {
			if w, err := imageref.Parse(img.Written); err != nil || w.Key() != img.Name {
				say(img, "index.json's %s %q is not a reference to it", AnnotationReference, img.Written)
				continue
			}
		}
		child := slices.ContainsFunc(e.Platforms, func(p lock.Platform) bool { return p.Digest == img.Digest.String() })
		if a := img.Attachment; a != nil {
			subject := a.Subject.String()
			switch {
			case !owners[img.Name]:
				say(img, "index.json's %s names an image the bundle does not carry", AnnotationRefName)
			case subject != e.Digest && !slices.ContainsFunc(e.Platforms, func(p lock.Platform) bool { return p.Digest == subject }):
				say(img, "index.json's %s %s is neither the digest the bundle's lock pins (%s) nor one of its index's children", AnnotationSubject, subject, e.Digest)
			default:
				bound[i] = true
			}
			continue
		}
		switch {
		case img.Digest.String() == e.Digest:
			if img.Tag != ref.Tag {
				say(img, "index.json's %s %q: its lock reference's tag is %q", AnnotationTag, img.Tag, ref.Tag)
				continue
			}
		case child:
			if img.Tag != "" {
				say(img, "index.json's %s %q on %s, a child of the index the bundle's lock pins: a child pinned alone is pushed by digest, untagged", AnnotationTag, img.Tag, img.Digest)
				continue
			}
		default:
			say(img, "index.json points at %s, the bundle's lock pins %s", img.Digest, e.Digest)
			continue
		}
		bound[i] = true
	}
	// The site repositories: the site rule's for the lock reference, its
	// repository path kept under the prefix the bundle was written for.
	// (Several configs may write one bundle, each with its own site
	// mapping, so the prefix is not one per bundle.)
	for i, img := range images {
		if !bound[i] || img.Site == "" {
			continue
		}
		ref := refs[i]
		want := ""
		if prefix, ok := strings.CutSuffix(img.Site, "/"+ref.Repository.RepositoryStr()); ok {
			m := site.Mapping{Default: prefix, Registries: map[string]string{ref.Repository.RegistryStr(): prefix}}
			if r, err := m.Repository(ref.Repository); err == nil {
				want = r.Name()
			}
		}
		if want != img.Site {
			say(img, "index.json's %s %q is not where the site rule puts its lock reference (its repository path %s under the site's prefix)", AnnotationSite, img.Site, ref.Repository.RepositoryStr())
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("oci:%s: index.json sends images where the bundle's lock does not; nothing pushed; write the bundle again from one config and its lock:\n  %s", path, strings.Join(slices.Compact(problems), "\n  "))
	}
	return nil
}

// LockWithArtifacts is lockBytes with an entry for each of artifacts (OCI
// artifacts carried with the images, such as the one `stowage push`
// writes) at its digest, a single manifest: the lock a bundle records, so
// that BindBundle binds them as it binds the images. An artifact whose key
// the lock pins at another digest is an error naming both.
func LockWithArtifacts(lockBytes []byte, artifacts []Image) ([]byte, error) {
	if len(artifacts) == 0 {
		return lockBytes, nil
	}
	l, err := lock.Parse(lockBytes, "the lock")
	if err != nil {
		return nil, err
	}
	for _, a := range artifacts {
		if e, ok := l.Lookup(a.Name); ok {
			if e.Digest != a.Digest.String() {
				return nil, fmt.Errorf("artifact %s at %s: the lock pins that reference at %s", a.Name, a.Digest, e.Digest)
			}
			continue
		}
		written := a.Written
		if written == "" {
			written = a.Name
		}
		l.Put(lock.Entry{Name: a.Name, Reference: written, Digest: a.Digest.String(), Kind: lock.KindManifest})
	}
	return l.Marshal(), nil
}
