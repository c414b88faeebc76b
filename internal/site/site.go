// Package site maps image references to a site registry: the registry an
// offline site pulls from, which `stowage mirror` fills and render points
// every reference at. One function decides the mapping, so that what the
// mirror writes and what render names are the same repository.
//
// The rule (Mapping.Repository): a repository of registry H is written to
//
//	<prefix>/<H>/<repository path>
//
// where prefix is Mapping.Default ("registry.site:5000/mirror") and H is the
// source registry as lock keys write it (Docker Hub is "docker.io"), in lower
// case, with a port's ':' written '_' ("registry.lab:5000" becomes
// "registry.lab_5000": host names have no '_', so no two registries meet).
// A registry listed in Mapping.Registries goes to its own prefix instead,
// without the H component: the `--mirror REGISTRY=HOST[/PATH]` vocabulary of
// `stowage lock`. A repository already on the site registry (its registry is
// the host of the prefix that would apply) is left as it is. The tag and
// digest of a reference are kept.
//
// Under the default prefix the mapping is one to one: distinct
// (registry, path) pairs give distinct paths. Registries entries can make two
// registries meet (two sources given one prefix); Check finds every such
// collision in a set of repositories.
package site

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
)

// Mapping names a site registry: where each source registry's repositories
// go.
type Mapping struct {
	// Default is "host[:port][/path]", the prefix for every registry not in
	// Registries; the source registry becomes the next path component.
	Default string
	// Registries maps a source registry, host[:port] as written in
	// references ("docker.io", "ghcr.io"), to "host[:port][/path]", the
	// prefix its repository paths are put under directly.
	Registries map[string]string
}

// Error is a mapping that cannot be applied. It names the prefix or the
// repository and says why.
type Error struct {
	// What is the prefix, repository or collision concerned.
	What string
	// Reason says what is wrong.
	Reason string
}

// Error formats the failure as "site registry: <what>: <reason>".
func (e *Error) Error() string { return "site registry: " + e.What + ": " + e.Reason }

// prefix is a parsed "host[:port][/path]".
type prefix struct {
	host, path string
}

func parsePrefix(s string) (prefix, error) {
	host, path, _ := strings.Cut(strings.TrimSuffix(s, "/"), "/")
	if redacted, ok := withoutUserinfo(s); ok {
		return prefix{}, &Error{What: fmt.Sprintf("%q", redacted), Reason: "credentials in the registry's name are refused (they would be printed and stored); give them in the docker config"}
	}
	if host == "" || strings.Contains(s, "://") || strings.Contains(s, "@") {
		return prefix{}, &Error{What: fmt.Sprintf("%q", s), Reason: "want host[:port][/path]"}
	}
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return prefix{}, &Error{What: fmt.Sprintf("%q", s), Reason: "host: " + err.Error()}
	}
	if path != "" {
		if _, err := name.NewRepository(reg.RegistryStr()+"/"+path, name.StrictValidation); err != nil {
			return prefix{}, &Error{What: fmt.Sprintf("%q", s), Reason: fmt.Sprintf("path %q is not a repository path: %v", path, err)}
		}
		// pkg/name takes "..", "." and "a..b" as path components; the
		// distribution grammar, and so the registry, does not.
		if _, err := imageref.Parse(reg.RegistryStr() + "/" + path); err != nil {
			return prefix{}, &Error{What: fmt.Sprintf("%q", s), Reason: fmt.Sprintf("path %q is not a repository path: %v", path, err)}
		}
	}
	return prefix{host: reg.RegistryStr(), path: path}, nil
}

// withoutUserinfo returns s with the user:password@ before its host
// (after a scheme, if any) replaced by ***@, and whether s had one.
func withoutUserinfo(s string) (string, bool) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	} else {
		scheme += "://"
	}
	authority, _, _ := strings.Cut(rest, "/")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return s, false
	}
	return scheme + "***@" + rest[at+1:], true
}

// Validate checks every prefix of m. Errors are *Error.
func (m Mapping) Validate() error {
	if _, err := parsePrefix(m.Default); err != nil {
		return err
	}
	for _, from := range slices.Sorted(maps.Keys(m.Registries)) {
		if _, err := name.NewRegistry(from, name.StrictValidation); err != nil || strings.ContainsAny(from, "/@") {
			return &Error{What: fmt.Sprintf("registry %q", from), Reason: "want host[:port]"}
		}
		if _, err := parsePrefix(m.Registries[from]); err != nil {
			return err
		}
	}
	return nil
}

// HostComponent is the path component a source registry gets under the
// default prefix: "docker.io" for Docker Hub, else host[:port] in lower
// case with ':' written '_'.
func HostComponent(reg name.Registry) string {
	h := reg.RegistryStr()
	if h == name.DefaultRegistry {
		h = imageref.DockerHub
	}
	return strings.ReplaceAll(strings.ToLower(h), ":", "_")
}

// Repository returns the site repository of src, parsed with opts (for
// example name.Insecure for a plain-HTTP site). Errors are *Error: a bad
// prefix, or a result that is not a valid repository name.
func (m Mapping) Repository(src name.Repository, opts ...name.Option) (name.Repository, error) {
	p, ok := prefix{}, false
	reg := src.RegistryStr()
	for _, from := range slices.Sorted(maps.Keys(m.Registries)) {
		r, err := name.NewRegistry(from)
		if err == nil && r.RegistryStr() == reg {
			pp, err := parsePrefix(m.Registries[from])
			if err != nil {
				return name.Repository{}, err
			}
			p, ok = pp, true
			break
		}
	}
	path := src.RepositoryStr()
	if !ok {
		pp, err := parsePrefix(m.Default)
		if err != nil {
			return name.Repository{}, err
		}
		p = pp
		if reg != p.host {
			path = HostComponent(src.Registry) + "/" + path
		}
	}
	var full string
	switch {
	case reg == p.host:
		// Already on the site registry: left as it is.
		full = p.host + "/" + src.RepositoryStr()
	case p.path != "":
		full = p.host + "/" + p.path + "/" + path
	default:
		full = p.host + "/" + path
	}
	out, err := name.NewRepository(full, append([]name.Option{name.StrictValidation}, opts...)...)
	if err != nil {
		return name.Repository{}, &Error{What: imageref.RepositoryName(src), Reason: fmt.Sprintf("site repository %q: %v", full, err)}
	}
	return out, nil
}

// Reference returns ref at its site repository with the same tag and
// digest: a tag stays a tag, a digest a digest. (A reference written with
// both keeps both in its text; name.Reference carries one of them, so the
// caller that must print "repo:tag@digest" joins them.)
func (m Mapping) Reference(ref name.Reference, opts ...name.Option) (name.Reference, error) {
	repo, err := m.Repository(ref.Context(), opts...)
	if err != nil {
		return nil, err
	}
	if d, ok := ref.(name.Digest); ok {
		return repo.Digest(d.DigestStr()), nil
	}
	return repo.Tag(ref.Identifier()), nil
}

// Check maps every repository of srcs and returns an *Error naming the first
// (in sorted order) site repository that two different source repositories
// map to, or a mapping error.
func (m Mapping) Check(srcs []name.Repository) error {
	seen := map[string]string{}
	names := make([]string, 0, len(srcs))
	byName := map[string]name.Repository{}
	for _, s := range srcs {
		n := imageref.RepositoryName(s)
		if _, ok := byName[n]; !ok {
			names = append(names, n)
			byName[n] = s
		}
	}
	sort.Strings(names)
	for _, n := range names {
		to, err := m.Repository(byName[n])
		if err != nil {
			return err
		}
		if other, ok := seen[to.Name()]; ok {
			return &Error{What: to.Name(), Reason: fmt.Sprintf("both %s and %s map to it; give them different prefixes", other, n)}
		}
		seen[to.Name()] = n
	}
	return nil
}

// Of returns the mapping of a config's site registry (nil: the zero
// Mapping, which maps nothing).
func Of(s *v1alpha1.Site) Mapping {
	if s == nil {
		return Mapping{}
	}
	return Mapping{Default: s.Registry, Registries: s.Registries}
}
