package openpai

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stowage/stowage/internal/imageref"
)

// Registry is the registry OpenPAI's own images are pulled from: the
// cluster.docker-registry keys domain, namespace and tag of
// services-configuration.yaml (quick-start config.yaml:
// docker_registry_domain, docker_registry_namespace, docker_image_tag).
// Third-party images keep their fixed references whatever Registry says.
type Registry struct {
	// Domain is the registry host[:port], or "docker.io" for Docker Hub.
	Domain string
	// Namespace is the repository path under Domain, e.g. "openpai".
	Namespace string
	// Tag is the tag of every OpenPAI-built image, e.g. "v1.5.0".
	Tag string
}

// Defaults of the v1.5.0 quick-start (contrib/kubespray/quick-start).
const (
	DefaultDomain    = "docker.io"
	DefaultNamespace = "openpai"
)

// WithDefaults returns r with empty fields filled in: Domain "docker.io",
// Namespace "openpai" (the quick-start defaults) and Tag = version (OpenPAI
// release images are tagged with the release, e.g. "v1.5.0").
func (r Registry) WithDefaults(version string) Registry {
	if r.Domain == "" {
		r.Domain = DefaultDomain
	}
	if r.Namespace == "" {
		r.Namespace = DefaultNamespace
	}
	if r.Tag == "" {
		r.Tag = version
	}
	return r
}

// Prefix returns the image prefix OpenPAI computes in
// src/cluster/config/cluster.py: "<namespace>/" when Domain is "docker.io",
// otherwise "<domain>/<namespace>/". Other values get no special case, so a
// domain "public" (special only for docker login) yields "public/<namespace>/".
// Prefix applies no defaults; call WithDefaults first.
func (r Registry) Prefix() string {
	if r.Domain == "docker.io" {
		return r.Namespace + "/"
	}
	return r.Domain + "/" + r.Namespace + "/"
}

// Expand turns an image template of Service.Images into a concrete
// reference: "{prefix}" becomes r.Prefix() and "{tag}" becomes r.Tag. Fixed
// third-party references come back unchanged.
func (r Registry) Expand(template string) string {
	return strings.NewReplacer("{prefix}", r.Prefix(), "{tag}", r.Tag).Replace(template)
}

// Validate checks r after defaults against the reference grammar of
// internal/imageref (the one stowage parses every image with): Domain must
// be a registry host[:port] without scheme or path, Namespace one or more
// lowercase repository path components, Tag a valid tag; each is checked
// in a reference that varies only it. It returns nil or an errors.Join of
// *RegistryError, one per bad field.
func (r Registry) Validate() error {
	var errs []error
	bad := func(field, value, msg string) {
		errs = append(errs, &RegistryError{Field: field, Value: value, Msg: msg})
	}
	switch _, err := imageref.Parse(r.Domain + "/x"); {
	case strings.Contains(r.Domain, "://"):
		bad("domain", r.Domain, "give the registry host[:port] without a scheme")
	case err != nil || r.Domain == "" || strings.ContainsAny(r.Domain, "/@"):
		bad("domain", r.Domain, "not a registry host[:port]")
	}
	if _, err := imageref.Parse("registry.example/" + r.Namespace + "/x"); err != nil || r.Namespace == "" || strings.Contains(r.Namespace, "@") {
		bad("namespace", r.Namespace, "not a repository path: use lowercase letters and digits separated by '/', '.', '_' or '-'")
	}
	if _, err := imageref.Parse("x:" + r.Tag); err != nil || strings.ContainsAny(r.Tag, ":@") {
		bad("tag", r.Tag, "not an image tag: letters, digits, '_', '.' and '-', starting with a letter, digit or '_', at most 128 characters")
	}
	return errors.Join(errs...)
}

// RegistryError reports a Registry field that cannot form an image
// reference. Field is "domain", "namespace" or "tag".
type RegistryError struct {
	Field string
	Value string
	Msg   string
}

// Error names the field, its value and what is wrong with it.
func (e *RegistryError) Error() string {
	return fmt.Sprintf("registry %s %q: %s", e.Field, e.Value, e.Msg)
}
