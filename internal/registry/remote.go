package registry

import (
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/api/v1alpha1"
)

// Source is how to read repo for a package that drives
// go-containerregistry's remote itself (internal/mirror): the repository
// contacted (after any WithMirror, with name.Insecure where WithInsecure
// allows plain HTTP) and the Resolver's shared Puller for the credential:
// the config's auth (never sent to a mirror), else the keychain, else
// anonymous. The Puller carries the transport stack (plain-HTTP guard,
// per-attempt timeout, Retry-After), retries and user agent, and shares
// pings and tokens between calls. Errors: the repository cannot be
// located, or auth's password source cannot be read (the source is named,
// never its content).
func (r *Resolver) Source(repo name.Repository, auth *v1alpha1.Auth) (name.Repository, *remote.Puller, error) {
	if r == nil {
		return name.Repository{}, nil, errNoResolver
	}
	t, err := r.locate(repo)
	if err != nil {
		return name.Repository{}, nil, err
	}
	p, err := r.puller(auth, t)
	if err != nil {
		return name.Repository{}, nil, err
	}
	return t.repo, p, nil
}

// Destination is how to write repo: directly (no mirror applies), plain
// HTTP only where WithInsecure allows it, credentials from the keychain,
// else anonymous; the Pusher (shared by every call) carries the same
// transport stack and retries as Source's Puller, and the Puller reads
// (HEADs) the destination with the same credential.
func (r *Resolver) Destination(repo name.Repository) (name.Repository, *remote.Pusher, *remote.Puller, error) {
	if r == nil {
		return name.Repository{}, nil, nil, errNoResolver
	}
	var opts []name.Option
	if r.o.insecure[repo.RegistryStr()] {
		opts = append(opts, name.Insecure)
	}
	out, err := name.NewRepository(repo.Name(), opts...)
	if err != nil {
		return name.Repository{}, nil, nil, err
	}
	t := target{repo: out}
	p, err := r.puller(nil, t)
	if err != nil {
		return name.Repository{}, nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pusher == nil {
		r.pusher, err = remote.NewPusher(r.remoteOptions(remote.WithAuthFromKeychain(r.o.keychain))...)
		if err != nil {
			return name.Repository{}, nil, nil, err
		}
	}
	return out, r.pusher, p, nil
}

// Scrub returns s with every password this Resolver has read replaced by
// "***", for messages built outside this package.
func (r *Resolver) Scrub(s string) string {
	if r == nil {
		return s
	}
	return r.scrub(s)
}
