// Package imageref parses image references as users write them in a config,
// with go-containerregistry's pkg/name, and explains the mistakes people make
// (a URL scheme, a digest after ':', upper case, an empty tag) in words.
package imageref

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
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

// Error is a reference Parse refuses. It prints as `image "<as written>":
// <reason>`, the reason saying what is wrong and, where it can, how to
// write it instead.
type Error struct {
	// Image is the reference exactly as the config wrote it.
	Image string
	// Reason says what is wrong, in the user's terms.
	Reason string
	// Err is pkg/name's error when pkg/name found the fault, else nil.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("image %q: %s", e.Image, e.Reason) }

// Unwrap returns pkg/name's error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Parse parses s with pkg/name (weak validation: Docker Hub and "latest"
// defaults apply), after checking it against the reference grammar that
// kubelet and containerd apply (distribution/reference), which is stricter
// than pkg/name's character sets: see grammar. Errors are *Error, naming
// the image and saying what is wrong and how to write it instead.
func Parse(s string) (Ref, error) {
	if reason := grammar(s); reason != "" {
		return Ref{}, &Error{Image: s, Reason: reason}
	}
	base, dig, hasDigest := strings.Cut(s, "@")
	r := Ref{Written: s}
	if hasDigest {
		d, err := name.NewDigest(s)
		if err != nil {
			return Ref{}, &Error{Image: s, Reason: err.Error(), Err: err}
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
		return Ref{}, &Error{Image: s, Reason: err.Error(), Err: err}
	}
	r.Repository = t.Context()
	r.Tag = t.TagStr()
	return r, nil
}

// digestAlgorithms are the algorithms a written digest may use.
var digestAlgorithms = []string{"sha256", "sha384", "sha512"}

// isPathComponent reports whether c is one '/'-separated component of a
// repository path in the distribution reference grammar,
// [a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*: lowercase letters and digits,
// separated by one '.', one or two '_', or any number of '-'. It is
// written out rather than a regexp because Parse runs it for every
// component of every image (and a regexp would be compiled at start-up).
func isPathComponent(c string) bool {
	alnum := func(b byte) bool { return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' }
	i := 0
	for {
		// A run of letters and digits.
		start := i
		for i < len(c) && alnum(c[i]) {
			i++
		}
		if i == start {
			return false
		}
		if i == len(c) {
			return true
		}
		// A separator, then another run.
		switch c[i] {
		case '.':
			i++
		case '_':
			i++
			if i < len(c) && c[i] == '_' {
				i++
			}
		case '-':
			for i < len(c) && c[i] == '-' {
				i++
			}
		default:
			return false
		}
	}
}

// isTag reports whether t is a tag in the distribution reference grammar,
// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func isTag(t string) bool {
	if len(t) == 0 || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// grammar returns why s is not a reference kubelet would pull, in words,
// or "". pkg/name accepts some references the runtime refuses (an empty
// path component, a tag starting with '.' or '-') and words other faults
// in terms of character sets; grammar catches the mistakes people make:
// white space; a URL scheme; more than one '@'; an empty or malformed
// digest after '@'; a digest after ':' instead of '@'; an empty or invalid
// tag; an empty repository path component (a leading, trailing or doubled
// '/'); upper case or other characters outside the grammar in the
// repository path. The registry part (host[:port]) is left to pkg/name.
//
// pkg/name is the one parser; these checks cover only what it lacks.
// github.com/distribution/reference has those rules, but its package
// initialiser compiles its regular expressions: 0.55 ms, 415 KB and 3,600
// allocations before main in every stowage process (GODEBUG=inittrace=1),
// about a tenth of stowage's whole start-up, which issue 9's start-up goals
// cannot spare; and its errors do not say which component or tag is wrong.
func grammar(s string) string {
	switch {
	case s == "":
		return "the reference is empty"
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n"):
		return "a reference has no white space"
	case strings.Contains(s, "://"):
		_, rest, _ := strings.Cut(s, "://")
		return fmt.Sprintf("a reference has no URL scheme; write %q", rest)
	case strings.Count(s, "@") > 1:
		return "a reference has at most one '@', before the digest"
	}
	base, dig, hasDigest := strings.Cut(s, "@")
	if hasDigest {
		if reason := digestGrammar(dig); reason != "" {
			return reason
		}
	}
	for _, alg := range digestAlgorithms {
		if i := strings.Index(base, ":"+alg+":"); i >= 0 {
			return fmt.Sprintf("the digest must follow '@', not ':'; write %q", base[:i]+"@"+base[i+1:]+strings.TrimPrefix(s, base))
		}
	}
	repo, tag, hasTag := base, "", false
	if i := strings.LastIndexByte(base, ':'); i > strings.LastIndexByte(base, '/') {
		repo, tag, hasTag = base[:i], base[i+1:], true
	}
	switch {
	case hasTag && tag == "":
		return "the tag after ':' is empty; write a tag or leave out the ':'"
	case hasTag && !isTag(tag):
		return fmt.Sprintf("tag %q is not valid: a tag is 1 to 128 letters, digits, '_', '.' and '-', and does not start with '.' or '-'", tag)
	case repo == "":
		return "the repository name is empty"
	}
	// The registry is the first component when it looks like a host: it
	// has a '.' or a ':' or is "localhost" (pkg/name and docker agree).
	path := repo
	if host, rest, ok := strings.Cut(repo, "/"); ok && (host == "localhost" || strings.ContainsAny(host, ".:")) {
		path = rest
	}
	for _, c := range strings.Split(path, "/") {
		switch {
		case c == "":
			return fmt.Sprintf("repository path %q has an empty component (a leading, trailing or doubled '/')", path)
		case isPathComponent(c):
		case isPathComponent(strings.ToLower(c)):
			return fmt.Sprintf("repository names must be lowercase: %q; write %q", c, strings.ToLower(c))
		default:
			return fmt.Sprintf("repository path component %q is not valid: use lowercase letters and digits, separated by '.', '_', '__' or '-'", c)
		}
	}
	return ""
}

// digestGrammar returns why d, the text after '@', is not a digest, or "".
// pkg/name checks the hex length of the algorithm.
func digestGrammar(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	switch {
	case d == "":
		return "the digest after '@' is empty; write @sha256:<64 hex digits> or leave out the '@'"
	case !ok || hex == "":
		return fmt.Sprintf("the digest %q after '@' must be algorithm:hex, e.g. sha256:<64 hex digits>", d)
	case !slices.Contains(digestAlgorithms, alg):
		return fmt.Sprintf("digest algorithm %q is not supported; use %s", alg, strings.Join(digestAlgorithms, ", "))
	case strings.ToLower(hex) != hex:
		return fmt.Sprintf("the digest's hex digits must be lowercase; write %q", alg+":"+strings.ToLower(hex))
	}
	return ""
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
