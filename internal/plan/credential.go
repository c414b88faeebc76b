package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/dnslabel"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/schema"
)

// PullRef is the reference the node pulls u by: its Site reference when
// the profile has a site registry, else the reference as written.
func (u *Use) PullRef() imageref.Ref {
	if u.Site != "" {
		if ref, err := imageref.Parse(u.Site); err == nil {
			return ref
		}
	}
	return u.Ref
}

// credential returns the credential u's own auth pulls it with in puller
// p of a profile whose secrets mode is mode, or nil when u has no auth.
func credential(u *Use, p *v1alpha1.Puller, mode string) *Credential {
	a := u.Auth
	if a == nil || (a.Secret == "" && a.Username == "") {
		return nil
	}
	from := u.PullRef()
	c := &Credential{Secret: a.Secret, Registry: from.AuthKey(), Namespaces: SecretNamespaces(p)}
	if a.Secret == "" {
		c.Secret = PullSecretName(from, a)
		c.Rendered = mode == v1alpha1.SecretsRender
	}
	return c
}

// SecretNamespaces returns the namespaces that hold p's pull Secrets: p's
// own, then its tenants in the order written, each once.
func SecretNamespaces(p *v1alpha1.Puller) []string {
	out := []string{p.Namespace}
	for _, ns := range p.Tenants {
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// PullSecretName is the name of the pull Secret for a username/password
// auth a of an image the node pulls as ref: "stowage-pull-<registry>-<8
// hex>", the registry cut to 30 characters and the hex being sha256 over
// registry key, username and password source (SourceName: never the
// password itself), so each distinct credential gets a distinct, stable
// name and no secret material shapes it. The name is the same whether
// stowage renders the Secret (secrets: render) or only names it.
func PullSecretName(ref imageref.Ref, a *v1alpha1.Auth) string {
	sum := sha256.Sum256([]byte(ref.AuthKey() + "\x00" + a.Username + "\x00" + SourceName(a.Password)))
	return "stowage-pull-" + dnslabel.Sanitize(ref.Registry(), 30) + "-" + hex.EncodeToString(sum[:])[:8]
}

// SourceName names a password source in names and messages: "env:NAME"
// and "file:path" as written, a literal password (allowed only with
// --allow-literal-passwords) never: "(a literal password)".
func SourceName(source string) string {
	if strings.HasPrefix(source, schema.PasswordFromEnv) || strings.HasPrefix(source, schema.PasswordFromFile) {
		return source
	}
	return "(a literal password)"
}

// PulledWith is the credential the kubelet pulls ref with in a pod that
// presents secrets: the first whose Registry is ref's docker config key
// (imageref.Ref.AuthKey; a Secret whose registry is unknown, "", is taken
// to match), or nil when none does and the pull is anonymous. The kubelet
// looks a pull Secret's credentials up by the image's registry, so a pod
// presenting a site Secret pulls every image of that site with it.
func PulledWith(secrets []*Credential, ref imageref.Ref) *Credential {
	for _, c := range secrets {
		if c.Registry == "" || c.Registry == ref.AuthKey() {
			return c
		}
	}
	return nil
}

// KubeletRule is the kubelet's rule for using a pre-pulled image offline,
// in the words vet and status print (v1alpha1.KubeletRule).
const KubeletRule = v1alpha1.KubeletRule

// The access types, in api/v1alpha1: part of the `status -o json` and
// `vet -o json` contracts.
type (
	Credential   = v1alpha1.PullCredential
	ImageAccess  = v1alpha1.ImageAccess
	SecretAccess = v1alpha1.SecretAccess
)

// Access says, for every image the rendered pre-pull DaemonSets of plan p
// (one profile) pull, which pods may use it on a node offline: per
// DaemonSet, the credential the kubelet pulls each container's image with
// (PulledWith over the pull Secrets the pod presents, each looked up among
// the plan's credentials of the DaemonSet's namespace). Sorted by
// reference; a container image that does not parse is left out.
func Access(p *Plan, daemonSets []*appsv1.DaemonSet) []ImageAccess {
	byName := map[string]*Credential{} // "namespace\x00secret"
	for _, pp := range p.Pullers {
		for _, u := range pp.Uses {
			if c := u.Credential; c != nil {
				byName[pp.Puller.Namespace+"\x00"+c.Secret] = c
			}
		}
	}
	type acc struct {
		anon    []string
		secrets map[string]*SecretAccess
	}
	byRef := map[string]*acc{}
	for _, ds := range daemonSets {
		id := ds.Namespace + "/" + ds.Name
		spec := ds.Spec.Template.Spec
		var presented []*Credential
		for _, s := range spec.ImagePullSecrets {
			c := byName[ds.Namespace+"\x00"+s.Name]
			if c == nil {
				c = &Credential{Secret: s.Name, Namespaces: []string{ds.Namespace}}
			}
			presented = append(presented, c)
		}
		for _, image := range PodImages(&spec) {
			ref, err := imageref.Parse(image)
			if err != nil {
				continue
			}
			a := byRef[image]
			if a == nil {
				a = &acc{secrets: map[string]*SecretAccess{}}
				byRef[image] = a
			}
			cred := PulledWith(presented, ref)
			if cred == nil {
				if !slices.Contains(a.anon, id) {
					a.anon = append(a.anon, id)
				}
				continue
			}
			sa := a.secrets[cred.Secret]
			if sa == nil {
				sa = &SecretAccess{PullCredential: *cred}
				a.secrets[cred.Secret] = sa
			}
			if !slices.Contains(sa.DaemonSets, id) {
				sa.DaemonSets = append(sa.DaemonSets, id)
			}
		}
	}
	out := make([]ImageAccess, 0, len(byRef))
	for _, ref := range sortedKeys(byRef) {
		a := byRef[ref]
		ia := ImageAccess{Reference: ref, Anonymous: a.anon, Secrets: []SecretAccess{}}
		if ia.Anonymous == nil {
			ia.Anonymous = []string{}
		}
		slices.Sort(ia.Anonymous)
		for _, s := range sortedKeys(a.secrets) {
			sa := *a.secrets[s]
			slices.Sort(sa.DaemonSets)
			ia.Secrets = append(ia.Secrets, sa)
		}
		ia.AnyPod = len(ia.Secrets) == 0
		ia.Summary = summary(&ia)
		out = append(out, ia)
	}
	return out
}

// PodImages are the references a pod spec makes the kubelet pull: each
// init container's and container's image, then each image volume's
// reference (an artifact), in that order, as written. The kubelet pulls
// an image volume with the pod's pull Secrets, as it does a container's
// image, so both fall under the same credential rule.
func PodImages(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		out = append(out, c.Image)
	}
	for _, v := range spec.Volumes {
		if v.Image != nil {
			out = append(out, v.Image.Reference)
		}
	}
	return out
}

// summary is ImageAccess.Summary.
func summary(a *ImageAccess) string {
	if a.AnyPod {
		return "any pod"
	}
	var parts []string
	for _, s := range a.Secrets {
		where := ""
		if len(a.Anonymous) > 0 {
			where = " on the nodes of " + strings.Join(s.DaemonSets, ", ")
		}
		parts = append(parts, fmt.Sprintf("pods presenting credentials equal to Secret %s%s (%s in %s, or any Secret with the same credentials for %s)",
			s.Secret, where, s.Secret, strings.Join(s.Namespaces, ", "), registryName(s.Registry)))
	}
	if len(a.Anonymous) > 0 {
		parts = append([]string{"any pod on the nodes of " + strings.Join(a.Anonymous, ", ")}, parts...)
	}
	return strings.Join(parts, "; ")
}

// registryName names a docker config key in messages ("its registry"
// when unknown).
func registryName(key string) string {
	if key == "" {
		return "its registry"
	}
	return key
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
