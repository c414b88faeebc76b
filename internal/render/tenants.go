package render

import (
	"maps"
	"slices"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/plan"
)

// ExternalSecret is a pull Secret the rendered DaemonSets name in
// imagePullSecrets but stowage does not render: an existing Secret
// (auth.secret), or any username/password credential under secrets:
// reference. Someone must create it, a kubernetes.io/dockerconfigjson
// Secret with the registry's credentials, in every namespace listed: the
// puller's, where the DaemonSets use it, and each of its tenants', whose
// pods must present the same credentials to the kubelet
// (KubeletEnsureSecretPulledImages).
type ExternalSecret struct {
	// Name is the Secret's name.
	Name string
	// Registry is the registry's key in the docker config ("host[:port]",
	// or https://index.docker.io/v1/ for Docker Hub).
	Registry string
	// Namespaces are where it must exist, sorted.
	Namespaces []string
	// UsedBy names the uses that need it (`environment "jupyter-chinese"`),
	// sorted.
	UsedBy []string
}

// ExternalSecrets lists the Secrets of the plan p of one profile that
// someone other than stowage must create, sorted by name and registry.
func ExternalSecrets(p *plan.Plan) []ExternalSecret {
	if p == nil || p.Profile == nil {
		return nil
	}
	byKey := map[string]*ExternalSecret{}
	for _, pp := range p.Pullers {
		for _, u := range pp.Uses {
			a := u.Auth
			var name string
			switch {
			case a == nil:
				continue
			case a.Secret != "":
				name = a.Secret
			case p.Profile.Secrets == v1alpha1.SecretsReference:
				name = plan.PullSecretName(u.PullRef(), a)
			default:
				continue // rendered
			}
			key := name + "\x00" + u.PullRef().AuthKey()
			e := byKey[key]
			if e == nil {
				e = &ExternalSecret{Name: name, Registry: u.PullRef().AuthKey()}
				byKey[key] = e
			}
			for _, ns := range plan.SecretNamespaces(pp.Puller) {
				if !slices.Contains(e.Namespaces, ns) {
					e.Namespaces = append(e.Namespaces, ns)
				}
			}
			if !slices.Contains(e.UsedBy, u.UsedBy()) {
				e.UsedBy = append(e.UsedBy, u.UsedBy())
			}
		}
	}
	out := make([]ExternalSecret, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		e := *byKey[k]
		slices.Sort(e.Namespaces)
		slices.Sort(e.UsedBy)
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b ExternalSecret) int {
		return strings.Compare(a.Name+"\x00"+a.Registry, b.Name+"\x00"+b.Registry)
	})
	return out
}
