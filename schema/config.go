package schema

import "github.com/stowage/stowage/api/v1alpha1"

// effectiveSite merges a profile's own site over the top-level one, field
// by field (Registries as a whole); nil when neither is set.
func effectiveSite(top, own *v1alpha1.Site) *v1alpha1.Site {
	if top == nil && own == nil {
		return nil
	}
	var out v1alpha1.Site
	if top != nil {
		out = *top
	}
	if own != nil {
		if own.Registry != "" {
			out.Registry = own.Registry
		}
		if own.Registries != nil {
			out.Registries = own.Registries
		}
	}
	return &out
}

// applyDefaults turns each profile's settings into the effective ones: a
// helper field the profile leaves empty takes the top-level helper's, and
// an image still empty DefaultHelperImage. Pause stays empty when neither
// sets it (the helper waits as the main container). Secrets and resources
// take the top-level ones the same way (secrets defaults to render).
func applyDefaults(c *v1alpha1.Config) {
	for name, prof := range c.Profiles {
		if prof.Helper.Image == "" {
			prof.Helper.Image = c.Helper.Image
		}
		if prof.Helper.Image == "" {
			prof.Helper.Image = v1alpha1.DefaultHelperImage
		}
		if prof.Helper.Pause == "" {
			prof.Helper.Pause = c.Helper.Pause
		}
		prof.Site = effectiveSite(c.Site, prof.Site)
		prof.Secrets = firstNonEmpty(prof.Secrets, c.Secrets, v1alpha1.SecretsRender)
		if c.Resources != nil {
			merged := MergeResources(c.Resources, prof.Resources)
			prof.Resources = &merged
		}
		c.Profiles[name] = prof
	}
}
