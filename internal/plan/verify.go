package plan

import (
	"slices"

	"github.com/stowage/stowage/api/v1alpha1"
)

// VerifyPolicy returns the verify policy that applies to use u of cfg and
// the field it is written at, or nil and "" when none does. It is the one
// precedence rule (docs/signatures.md): the policy of the catalogue image
// (images.NAME.verify) or of the environment (environments.NAME.verify)
// the use names, else that of the use's profile (profiles.NAME.verify),
// else the top-level one (verify). Each replaces the next as a whole; none
// is merged with another. The helper and pause images and OpenPAI images
// take their profile's policy; a workload the KRM function pins, which no
// profile has, takes the top-level one.
func VerifyPolicy(cfg *v1alpha1.Config, u *Use) (at string, v *v1alpha1.Verify) {
	switch {
	case u.Kind == KindImage && cfg.Images[u.Name].Verify != nil:
		return "images." + u.Name + ".verify", cfg.Images[u.Name].Verify
	case u.Kind == KindEnvironment && cfg.Environments[u.Name].Verify != nil:
		return "environments." + u.Name + ".verify", cfg.Environments[u.Name].Verify
	}
	if p, ok := cfg.Profiles[u.Profile]; ok && u.Profile != "" && p.Verify != nil {
		return "profiles." + u.Profile + ".verify", p.Verify
	}
	if cfg.Verify != nil {
		return "verify", cfg.Verify
	}
	return "", nil
}

// AdmissionFiles returns the files the admission policies of p's profile
// need (v1alpha1.Profile.Policy): the keys and trusted roots of the verify
// policies of its uses (VerifyPolicy), as the config writes their paths,
// sorted and each once. Empty when the profile has no policy field. The
// caller reads them (confined to the config directory, bounded) and hands
// them to render.
func (p *Plan) AdmissionFiles(cfg *v1alpha1.Config) []string {
	if p.Profile == nil || p.Profile.Policy == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, img := range p.Images {
		for _, u := range img.Uses {
			if _, v := VerifyPolicy(cfg, u); v != nil {
				for _, k := range v.Keys {
					add(k)
				}
				if len(v.Identities) > 0 {
					add(v.TrustedRoot)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
