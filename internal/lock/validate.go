package lock

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
)

// Error is one problem in a lock file or a lock entry. Parse returns them
// joined (errors.Join); use errors.As to get at the fields.
type Error struct {
	// File is the file name given to Parse; empty for Validate.
	File string
	// Line is the 1-based line of the offending node; 0 when unknown.
	Line int
	// Column is the 1-based column (in characters) on Line, for a YAML
	// syntax error that names one (a character YAML does not allow); 0
	// otherwise.
	Column int
	// Index is the position of the entry in spec.images (0-based), or -1
	// when the problem is not inside an entry.
	Index int
	// Image names the entry: its name, else its reference; may be empty.
	Image string
	// Field is the offending field: relative to the entry for entry problems
	// ("digest", "platforms[1].platform"), else a path from the document
	// root ("apiVersion", "spec.images").
	Field string
	// Err is the problem itself.
	Err error
}

// Error formats the problem as
// "file:line[:column]: spec.images[i] (image): field: message", leaving out
// the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, "spec.images[%d]", e.Index)
		if e.Image != "" {
			fmt.Fprintf(&b, " (%s)", e.Image)
		}
		b.WriteString(": ")
	} else if e.Image != "" {
		fmt.Fprintf(&b, "image %s: ", e.Image)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

// problem is a rule broken by an entry; field is relative to the entry.
type problem struct {
	field string
	err   error
}

// Validate checks e against the rules Parse applies to every entry: name is
// Key of the parsed reference, digests are "sha256:<64 hex>", kind is known,
// only an index has platforms (canonical os/arch[/variant], no duplicates),
// only a manifest has a size, sizes are not negative. It returns nil or the
// problems as joined *Error values (File empty, Index -1).
func Validate(e Entry) error {
	var errs []error
	for _, p := range problems(e) {
		errs = append(errs, &Error{Index: -1, Image: ident(e), Field: p.field, Err: p.err})
	}
	return errors.Join(errs...)
}

// ident is the short name of the entry used in errors.
func ident(e Entry) string {
	if e.Name != "" {
		return e.Name
	}
	return e.Reference
}

func problems(e Entry) []problem {
	var ps []problem
	add := func(field string, err error) { ps = append(ps, problem{field, err}) }

	var ref *imageref.Ref
	if e.Reference == "" {
		add("reference", errors.New("required: the image reference as written in the config"))
	} else if r, err := imageref.Parse(e.Reference); err != nil {
		add("reference", err)
	} else {
		ref = &r
	}
	if e.Name == "" {
		add("name", errors.New("required: the normalised reference"))
	} else if ref != nil && e.Name != ref.Key() {
		add("name", fmt.Errorf("%q is not the normalised form of reference %q; want %q", e.Name, e.Reference, ref.Key()))
	}

	if err := checkDigest(e.Digest); err != nil {
		add("digest", err)
	}

	switch e.Kind {
	case KindManifest:
		if len(e.Platforms) > 0 {
			add("platforms", fmt.Errorf("a %s entry has no platforms; only an %s lists its children", KindManifest, KindIndex))
		}
	case KindIndex:
		if e.Size != 0 {
			add("size", fmt.Errorf("an %s has no size of its own; sizes are per platform", KindIndex))
		}
		if e.Platform != "" {
			add("platform", fmt.Errorf("an %s has no platform of its own; its children carry theirs", KindIndex))
		}
	case "":
		add("kind", fmt.Errorf("required: %q or %q", KindIndex, KindManifest))
	default:
		add("kind", fmt.Errorf("unknown kind %q; want %q or %q", e.Kind, KindIndex, KindManifest))
	}
	if e.Size < 0 {
		add("size", fmt.Errorf("%d is negative; want bytes >= 0", e.Size))
	}
	if e.Platform != "" {
		if err := checkPlatform(e.Platform); err != nil {
			add("platform", err)
		}
	}

	seen := map[string]int{}
	for j, p := range e.Platforms {
		at := fmt.Sprintf("platforms[%d]", j)
		if err := checkPlatform(p.Platform); err != nil {
			add(at+".platform", err)
		} else if k, dup := seen[p.Platform]; dup {
			add(at+".platform", fmt.Errorf("duplicate platform %q, also at platforms[%d]", p.Platform, k))
		} else {
			seen[p.Platform] = j
		}
		if err := checkDigest(p.Digest); err != nil {
			add(at+".digest", err)
		}
		if p.Size < 0 {
			add(at+".size", fmt.Errorf("%d is negative; want bytes >= 0", p.Size))
		}
	}
	if v := e.VerifiedBy; v != nil {
		switch {
		case v.Key != "" && (v.Identity != "" || v.Issuer != ""):
			add("verifiedBy", errors.New("give either key or identity with issuer, not both"))
		case v.Key != "":
			if err := checkDigest(v.Key); err != nil {
				add("verifiedBy.key", err)
			}
		case v.Identity == "" || v.Issuer == "":
			add("verifiedBy", errors.New("needs a key fingerprint, or a keyless identity and issuer"))
		}
		if err := checkDigest(v.Signature); err != nil {
			add("verifiedBy.signature", err)
		}
		switch v.Format {
		case "", v1alpha1.SignatureTag, v1alpha1.SignatureBundle:
		default:
			add("verifiedBy.format", fmt.Errorf("%q is not a signature format; want %q (cosign's sha256-<hex>.sig tag) or %q (a Sigstore bundle referrer)", v.Format, v1alpha1.SignatureTag, v1alpha1.SignatureBundle))
		}
	}
	return ps
}

// checkDigest accepts exactly "sha256:" followed by 64 lowercase hex digits.
func checkDigest(s string) error {
	if s == "" {
		return errors.New("required: sha256:<64 hex digits>")
	}
	h, err := v1.NewHash(s)
	if err != nil {
		return fmt.Errorf("invalid digest %q: %w", s, err)
	}
	if h.Algorithm != "sha256" {
		return fmt.Errorf("digest %q uses %s; want sha256", s, h.Algorithm)
	}
	return nil
}

// platformWord is the grammar of a platform's os, architecture and
// variant (containerd's platform specifier components; the OCI image
// spec's values, such as linux, amd64, arm64, v8, are all of this form),
// and platformVersion that of os.version (10.0.17763.1234). Both are
// compiled on first use, not at start-up.
var (
	platformWord    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })
	platformVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`) })
)

// checkPlatform accepts os/arch[/variant][:osversion] exactly as
// v1.Platform.String() writes it, each part of the OCI grammar
// (platformWord, platformVersion): a registry's answer cannot put a
// control character, a space or markdown into the lock, a table or a pull
// request body through a platform.
func checkPlatform(s string) error {
	if s == "" {
		return errors.New("required: os/arch[/variant], e.g. linux/amd64")
	}
	p, err := v1.ParsePlatform(s)
	if err != nil {
		return fmt.Errorf("invalid platform %q: %w", s, err)
	}
	if p.OS == "" || p.Architecture == "" {
		return fmt.Errorf("invalid platform %q: want os/arch[/variant], e.g. linux/amd64", s)
	}
	for _, f := range []struct {
		name, v string
		re      *regexp.Regexp
	}{{"os", p.OS, platformWord()}, {"architecture", p.Architecture, platformWord()}, {"variant", p.Variant, platformWord()}, {"os.version", p.OSVersion, platformVersion()}} {
		if f.v != "" && !f.re.MatchString(f.v) {
			return fmt.Errorf("invalid platform %q: its %s %q has characters outside %s", s, f.name, f.v, strings.Trim(f.re.String(), "^$"))
		}
	}
	if p.String() != s {
		return fmt.Errorf("platform %q is not in canonical form; want %q", s, p.String())
	}
	return nil
}
