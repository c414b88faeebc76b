package mirror

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/internal/lock"
)

// TestBindBundle: each image of a bundle goes where its lock says. An
// index entry's image is bound to the index digest with its reference's
// tag; a child of that index only untagged; attachments hang off the
// locked digest or a child of it, named by an image of the bundle; a site
// repository keeps the lock's repository path under its prefix (two
// configs' prefixes may share a bundle). Each refusal names the image and
// the annotation.
func TestBindBundle(t *testing.T) {
	hash := func(c byte) v1.Hash {
		return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat(string(c), 64)}
	}
	index, child, other := hash('a'), hash('b'), hash('c')
	l := &lock.Lock{}
	l.Put(lock.Entry{Name: "ghcr.io/acme/app:v1", Reference: "ghcr.io/acme/app:v1", Digest: index.String(), Kind: lock.KindIndex,
		Platforms: []lock.Platform{{Platform: "linux/amd64", Digest: child.String()}}})
	l.Put(lock.Entry{Name: "docker.io/library/db:v2", Reference: "db:v2", Digest: other.String(), Kind: lock.KindManifest})
	lockBytes := l.Marshal()
	app := func(d v1.Hash, tag, site string) Image {
		return Image{Name: "ghcr.io/acme/app:v1", Source: name.MustParseReference("ghcr.io/acme/app").Context(), Digest: d, Tag: tag, Site: site}
	}
	db := Image{Name: "docker.io/library/db:v2", Written: "db:v2", Source: name.MustParseReference("db").Context(), Digest: other, Tag: "v2", Site: "site.lan/m/docker.io/library/db"}
	sig := func(subject v1.Hash, owner Image) Image {
		owner.Digest, owner.Tag, owner.Attachment = hash('d'), attachmentTag(subject, KindSignature), &Attachment{Subject: subject, Kind: KindSignature}
		return owner
	}
	good := app(index, "v1", "site.lan/m/ghcr.io/acme/app")
	for _, c := range []struct {
		name   string
		images []Image
		want   string // "" is bound
	}{
		{"as written", []Image{good, db, sig(index, good), sig(child, good)}, ""},
		{"a child alone, untagged", []Image{app(child, "", "site.lan/m/ghcr.io/acme/app"), db}, ""},
		{"no site at all", []Image{app(index, "v1", ""), app(child, "", "")}, ""},
		{"a child tagged", []Image{app(child, "v1", "site.lan/m/ghcr.io/acme/app"), db},
			`image ghcr.io/acme/app:v1: index.json's dev.stowage.tag "v1" on ` + child.String() + `, a child of the index the bundle's lock pins`},
		{"another image's digest", []Image{app(other, "v1", "site.lan/m/ghcr.io/acme/app"), db},
			"image ghcr.io/acme/app:v1: index.json points at " + other.String() + ", the bundle's lock pins " + index.String()},
		{"retagged", []Image{app(index, "latest", "site.lan/m/ghcr.io/acme/app"), db},
			`image ghcr.io/acme/app:v1: index.json's dev.stowage.tag "latest": its lock reference's tag is "v1"`},
		{"another repository", []Image{app(index, "v1", "site.lan/prod/critical"), db},
			`image ghcr.io/acme/app:v1: index.json's dev.stowage.site "site.lan/prod/critical" is not where the site rule puts its lock reference`},
		{"two configs' sites in one bundle", []Image{good, app(index, "v1", "site.lan/other/acme/app"), app(child, "", "")}, ""},
		{"a repository path changed under the prefix", []Image{app(index, "v1", "site.lan/m/ghcr.io/acme/critical")},
			`image ghcr.io/acme/app:v1: index.json's dev.stowage.site "site.lan/m/ghcr.io/acme/critical" is not where the site rule puts its lock reference`},
		{"a prefix that is no registry", []Image{app(index, "v1", "acme/app")},
			`index.json's dev.stowage.site "acme/app" is not where the site rule puts its lock reference`},
		{"a signature of an image outside the bundle", []Image{good, db, sig(hash('e'), good)},
			"sig " + hash('d').String() + " of image ghcr.io/acme/app:v1: index.json's dev.stowage.subject " + hash('e').String() + " is neither the digest"},
		{"a signature of an image the bundle does not carry", []Image{good, sig(other, db)},
			"sig " + hash('d').String() + " of image docker.io/library/db:v2: index.json's org.opencontainers.image.ref.name names an image the bundle does not carry"},
		{"an image the lock lacks", []Image{good, {Name: "ghcr.io/acme/critical:v1", Source: name.MustParseReference("ghcr.io/acme/critical").Context(), Digest: index, Tag: "v1"}},
			"image ghcr.io/acme/critical:v1: index.json's org.opencontainers.image.ref.name names no entry of the bundle's lock"},
	} {
		err := BindBundle("b", c.images, lockBytes)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing pushed")):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// An artifact carried with the images gets its lock entry, and is
	// then bound like them; one the lock pins elsewhere is refused.
	art := Image{Name: "ghcr.io/acme/deploy:v1", Source: name.MustParseReference("ghcr.io/acme/deploy").Context(), Digest: hash('f'), Tag: "v1", Site: "site.lan/m/ghcr.io/acme/deploy"}
	withArt, err := LockWithArtifacts(lockBytes, []Image{art})
	if err != nil {
		t.Fatal(err)
	}
	if err := BindBundle("b", []Image{good, db, art}, lockBytes); err == nil || !strings.Contains(err.Error(), "image ghcr.io/acme/deploy:v1: index.json's org.opencontainers.image.ref.name names no entry") {
		t.Errorf("an artifact the lock lacks: %v", err)
	}
	if err := BindBundle("b", []Image{good, db, art}, withArt); err != nil {
		t.Errorf("an artifact with its lock entry: %v", err)
	}
	art.Name, art.Digest = "ghcr.io/acme/app:v1", hash('f')
	if _, err := LockWithArtifacts(lockBytes, []Image{art}); err == nil || err.Error() != "artifact ghcr.io/acme/app:v1 at "+hash('f').String()+": the lock pins that reference at "+index.String() {
		t.Errorf("an artifact the lock pins elsewhere: %v", err)
	}
	if err := BindBundle("b", []Image{good}, nil); err == nil || err.Error() != fmt.Sprintf("oci:b: the bundle holds no %s; stowage writes one into every bundle, and where each image goes at the site is bound to it: refused, nothing pushed", BundleLock) {
		t.Errorf("no lock: %v", err)
	}
}
