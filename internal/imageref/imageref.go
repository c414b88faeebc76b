// Package imageref parses image references as users write them in a config,
// with go-containerregistry's pkg/name, and explains the mistakes people make
// (a URL scheme, a digest after ':', upper case, an empty tag) in words.
package imageref

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// DockerHubAuthKey is the key kubelet and docker use for Docker Hub in a
// docker config's "auths" map.
const DockerHubAuthKey = "https://index.docker.io/v1/"

// Ref is a parsed image reference.
type Ref struct {
	// Written is the reference exactly as the config spelled it.
	Written string
	// Repository is the normalised repository, e.g.
	// index.docker.io/library/busybox (pkg/name's normalisation).
	Repository name.Repository
	// Tag is the tag: as written, or "latest" when neither a tag nor a
	// digest was written. Empty for a digest-only reference.
	Tag string
	// Digest is the digest written after '@' ("sha256:…"), or empty.
	Digest string
}

// Parse parses s with pkg/name (weak validation: Docker Hub and "latest"
// defaults apply). Errors name the image and say what is wrong and how to
// write it instead.
func Parse(s string) (Ref, error) {
	if err := explain(s); err != nil {
		return Ref{}, err
	}
	base, dig, hasDigest := strings.Cut(s, "@")
	r := Ref{Written: s}
	if hasDigest {
		d, err := name.NewDigest(s)
		if err != nil {
			return Ref{}, fmt.Errorf("image %q: %w", s, err)
		}
		r.Repository = d.Context()
		r.Digest = dig
		if t, err := name.NewTag(base); err == nil && hasExplicitTag(base, t) {
			r.Tag = t.TagStr()
		}
		return r, nil
	}
	t, err := name.NewTag(s)
	if err != nil {
		if lower, lerr := name.NewTag(strings.ToLower(s)); lerr == nil && lower.String() != "" {
			return Ref{}, fmt.Errorf("image %q: repository names must be lowercase", s)
		}
		return Ref{}, fmt.Errorf("image %q: %w", s, err)
	}
	r.Repository = t.Context()
	r.Tag = t.TagStr()
	return r, nil
}

// explain catches the mistakes pkg/name reports in terms that do not tell a
// user what to change.
func explain(s string) error {
	switch {
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\n"):
		return fmt.Errorf("image %q: a reference has no white space", s)
	case strings.Contains(s, "://"):
		_, rest, _ := strings.Cut(s, "://")
		return fmt.Errorf("image %q: a reference has no URL scheme; write %q", s, rest)
	case strings.HasSuffix(s, ":"):
		return fmt.Errorf("image %q: the tag after ':' is empty; write a tag or leave out the ':'", s)
	case strings.HasSuffix(s, "@"):
		return fmt.Errorf("image %q: the digest after '@' is empty", s)
	}
	for _, alg := range []string{":sha256:", ":sha384:", ":sha512:"} {
		if i := strings.Index(s, alg); i >= 0 && !strings.Contains(s[:i], "@") {
			return fmt.Errorf("image %q: the digest must follow '@', not ':'; write %q", s, s[:i]+"@"+s[i+1:])
		}
	}
	return nil
}

// hasExplicitTag reports whether base spelled a tag (pkg/name fills in
// "latest" when it did not).
func hasExplicitTag(base string, t name.Tag) bool {
	return strings.HasSuffix(base, ":"+t.TagStr())
}

// Key is the normalised lock key: registry/repository:tag, or
// registry/repository@digest for a digest-only reference. Spellings that
// name the same image ("nginx", "docker.io/library/nginx",
// "index.docker.io/library/nginx:latest") share one key,
// "docker.io/library/nginx:latest".
func (r Ref) Key() string {
	if r.Tag != "" {
		return RepositoryName(r.Repository) + ":" + r.Tag
	}
	return RepositoryName(r.Repository) + "@" + r.Digest
}

// DockerHub is the registry name lock keys use for Docker Hub, the
// familiar form of docker's own normalisation ("docker.io/library/nginx").
const DockerHub = "docker.io"

// RepositoryName is the normalised repository name of lock keys: pkg/name's
// fully qualified name (registry, "library/" for official images), with
// Docker Hub written "docker.io" rather than pkg/name's "index.docker.io".
func RepositoryName(repo name.Repository) string {
	if repo.RegistryStr() == name.DefaultRegistry {
		return DockerHub + "/" + repo.RepositoryStr()
	}
	return repo.Name()
}

// Reference returns the parsed pkg/name reference: the digest when one was
// written, else the tag.
func (r Ref) Reference() name.Reference {
	if r.Digest != "" {
		return r.Repository.Digest(r.Digest)
	}
	return r.Repository.Tag(r.Tag)
}

// Pin returns the written spelling with digest attached after '@'. A digest
// the user wrote is replaced, keeping the tag: "busybox:1.31.1@sha256:…".
func (r Ref) Pin(digest string) string {
	base, _, _ := strings.Cut(r.Written, "@")
	return base + "@" + digest
}

// Registry is the registry host[:port] as pkg/name normalises it
// ("index.docker.io" for Docker Hub).
func (r Ref) Registry() string { return r.Repository.RegistryStr() }

// AuthKey is the key of this image's registry in a docker config "auths"
// map: DockerHubAuthKey for Docker Hub, the bare host[:port] otherwise (no
// scheme), as kubelet's credential matching expects.
func (r Ref) AuthKey() string {
	if r.Registry() == name.DefaultRegistry {
		return DockerHubAuthKey
	}
	return r.Registry()
}

// Base is the last path element of the repository ("busybox",
// "rest-server"): a readable seed for container names.
func (r Ref) Base() string {
	p := r.Repository.RepositoryStr()
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// ShortHash is the first n hex digits of sha256(Key()): stable across runs
// and machines, used to keep derived names distinct.
func (r Ref) ShortHash(n int) string {
	sum := sha256.Sum256([]byte(r.Key()))
	return hex.EncodeToString(sum[:])[:n]
}
