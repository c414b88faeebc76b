package openpai

import "github.com/stowage/stowage/api/v1alpha1"

// SelectionOf returns a config's OpenPAI block as a Selection.
func SelectionOf(o *v1alpha1.OpenPAI) Selection {
	return Selection{
		Version:  o.Version,
		Features: o.Features,
		Keep:     o.Keep,
		Drop:     o.Drop,
		Registry: Registry{Domain: o.Registry.Domain, Namespace: o.Registry.Namespace, Tag: o.Registry.Tag},
	}
}
