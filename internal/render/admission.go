package render

import (
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stowage/stowage/internal/admission"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/plan"
)

// admissionObjects renders the profile's admission policies
// (internal/admission) when its policy field asks for them: one verify
// policy per field that applies to a use (plan.VerifyPolicy), each with
// the repositories render writes under it (the site's when the profile
// has a site) and the one its publisher signed, the files from
// Input.Trust, and the signer the lock records for each image, so that a
// kind that cannot read its signature's format is refused
// (admission.Reads).
func (r *renderer) admissionObjects() []Object {
	if r.prof.Policy == nil {
		return nil
	}
	byAt := map[string]*admission.Policy{}
	var order []string
	var sigs []admission.Signature
	for _, img := range r.plan.Images {
		for _, u := range img.Uses {
			at, v := plan.VerifyPolicy(r.in.Config, u)
			if v == nil {
				continue
			}
			signed := imageref.RepositoryName(u.Ref.Repository)
			site := signed
			if u.Site != "" {
				ref, err := name.ParseReference(u.Site)
				if err != nil {
					r.fail("%s: site reference %q: %w", u.UsedBy(), u.Site, err)
					continue
				}
				site = imageref.RepositoryName(ref.Context())
			}
			p, ok := byAt[at]
			if !ok {
				p = &admission.Policy{At: at, Verify: *v}
				byAt[at] = p
				order = append(order, at)
			}
			p.Images = append(p.Images, admission.Image{Site: site, Signed: signed})
			if e, ok := r.in.Lock.Lookup(u.Ref.Key()); ok && e.VerifiedBy != nil {
				sigs = append(sigs, admission.Signature{Image: e.Name, Signer: *e.VerifiedBy})
			}
		}
	}
	in := admission.Input{Profile: r.profileName, Namespace: r.prof.Namespace, Spec: *r.prof.Policy, Files: r.in.Trust, Signatures: sigs}
	for _, at := range order {
		in.Policies = append(in.Policies, *byAt[at])
	}
	us, err := admission.Render(in)
	if err != nil {
		r.fail("%w", err)
		return nil
	}
	var out []Object
	for _, u := range us {
		out = append(out, Object{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Object: u})
	}
	return out
}
