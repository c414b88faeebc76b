package plan

import "github.com/stowage/stowage/api/v1alpha1"

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
