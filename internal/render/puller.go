package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/schema"
)

// Helper binary locations. The helper image holds a static binary at
// HelperBinary; the first init container copies it into the shared
// emptyDir at HelperPath, and every pulled image's init container runs it
// from there, so no image needs a shell or any program of its own.
const (
	HelperBinary = "/stowage-helper"
	HelperDir    = "/stowage"
	HelperPath   = HelperDir + "/stowage-helper"
	helperVolume = "stowage-helper"
)

// Default container resources: the helper only copies a small file and
// exits, pause sleeps.
var defaultResources = schema.Resources{
	Requests: schema.ResourceList{CPU: "1m", Memory: "16Mi"},
	Limits:   schema.ResourceList{CPU: "50m", Memory: "32Mi"},
}

// item is one image to pre-pull, before pinning.
type item struct {
	name      string // environment, catalogue key or OpenPAI image base: seeds the container name
	usedBy    string // for error messages: `environment "jupyter"`
	ref       imageref.Ref
	platforms []string
	auth      *schema.Auth
	selector  map[string]string
	tols      []schema.Toleration
	// pinned is ref@digest once resolved, digest the digest alone.
	pinned, digest string
}

// group is a set of items that share node placement: one DaemonSet.
type group struct {
	key      string
	suffix   string
	selector map[string]string
	tols     []schema.Toleration
	items    []*item
}

// puller renders p's DaemonSets and records ConfigMap. taken holds the
// DaemonSet names of p's namespace already in use (p.Name is reserved for
// p); the names p takes are added to it.
func (r *renderer) puller(p *schema.Puller, plan *openpai.Plan, secrets map[string]Object, taken map[string]bool) []Object {
	items := r.items(p, plan)
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		it.pinned = r.pin(it.ref, it.platforms, it.usedBy)
		_, it.digest, _ = strings.Cut(it.pinned, "@")
	}
	helper := r.pinString(r.prof.Helper.Image, fmt.Sprintf("profile %q helper.image", r.profileName))
	pause := r.pinString(r.prof.Helper.Pause, fmt.Sprintf("profile %q helper.pause", r.profileName))

	var objs []Object
	records := map[string]bool{}
	ownName := false // whether p.Name is in use by p
	for _, g := range groupItems(p, items) {
		// Container names are chosen over the whole group, so they do not
		// depend on where the group is split.
		names := containerNames(g.items)
		base := p.Name
		if g.suffix != "" {
			base = p.Name + "-" + g.suffix
		}
		parts := chunks(len(g.items), MaxImagesPerDaemonSet)
		for n, c := range parts {
			part := g.items[c[0]:c[1]]
			pullSecrets := map[string]bool{}
			for _, it := range part {
				if it.auth == nil {
					continue
				}
				if it.auth.Secret != "" {
					pullSecrets[it.auth.Secret] = true
					continue
				}
				// The puller's namespace, then each tenant's: the same Secret
				// (name and data) in every namespace whose pods use the
				// image, so they present the credentials the kubelet
				// checks under KubeletEnsureSecretPulledImages.
				for _, ns := range secretNamespaces(p) {
					s := r.secret(ns, it)
					pullSecrets[s.Name] = true
					if r.prof.Secrets == schema.SecretsRender && s.Object != nil {
						id := s.Namespace + "/" + s.Name
						if prev, ok := secrets[id]; ok && !reflect.DeepEqual(prev.Object, s.Object) {
							// Only literal passwords can differ under one name.
							r.fail("%s: registry %s, user %q: two different passwords for one registry and user in namespace %s",
								it.usedBy, it.ref.AuthKey(), it.auth.Username, ns)
						}
						secrets[id] = s
					}
				}
			}
			name := base
			if len(parts) > 1 {
				name = partName(base, n+1)
			}
			if name == p.Name && !ownName {
				ownName = true
			} else if taken[name] {
				// A node group whose suffix happens to equal a part number
				// of another group ("p-2"), or a name another puller of the
				// namespace has ("p-gpu"): keep DaemonSet names distinct.
				want := name
				name = hashedName(want, g.key)
				for k := 2; taken[name]; k++ {
					name = hashedName(want, g.key+"\x00"+strconv.Itoa(k))
				}
			}
			taken[name] = true
			objs = append(objs, r.daemonSet(p, name, g, part, names[c[0]:c[1]], helper, pause, sortedKeys(pullSecrets)))
			for _, it := range part {
				records[it.pinned] = true
			}
		}
	}
	objs = append(objs, r.recordsConfigMap(p, sortedKeys(records)))
	return objs
}

// secretNamespaces returns the namespaces that get p's pull Secrets: p's
// own, then its tenants in the order written, each once.
func secretNamespaces(p *schema.Puller) []string {
	out := []string{p.Namespace}
	for _, ns := range p.Tenants {
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// items collects a puller's images: environments, catalogue images and the
// OpenPAI images of its roles, one per normalised reference and placement.
func (r *renderer) items(p *schema.Puller, plan *openpai.Plan) []*item {
	var items []*item
	add := func(it *item) {
		items = append(items, it)
	}
	for _, e := range p.Environments {
		env := r.in.Config.Environments[e]
		ref, err := imageref.Parse(env.Image)
		if err != nil {
			r.fail("environment %q: %v", e, err)
			continue
		}
		add(&item{name: e, usedBy: fmt.Sprintf("environment %q", e), ref: ref, platforms: env.Platforms,
			auth: env.Auth, selector: env.NodeSelector, tols: env.Tolerations})
	}
	for _, k := range p.Images {
		im := r.in.Config.Images[k]
		ref, err := imageref.Parse(im.Reference)
		if err != nil {
			r.fail("image %q: %v", k, err)
			continue
		}
		add(&item{name: k, usedBy: fmt.Sprintf("image %q", k), ref: ref, platforms: im.Platforms, auth: im.Auth})
	}
	if plan != nil {
		for _, role := range p.OpenPAI {
			for _, rr := range []openpai.Role{openpai.Role(role), openpai.RoleAll} {
				for _, s := range plan.Images[rr] {
					ref, err := imageref.Parse(s)
					if err != nil {
						r.fail("OpenPAI image %q: %v", s, err)
						continue
					}
					add(&item{name: ref.Base(), usedBy: fmt.Sprintf("OpenPAI %s role", role), ref: ref,
						selector: map[string]string{openpaiRoleLabel(role): "true"}})
				}
			}
		}
	}
	// Platform pins also pin placement: a single-platform child only runs
	// on nodes of that os/arch.
	for _, it := range items {
		if len(it.platforms) != 1 {
			continue
		}
		pl, err := v1.ParsePlatform(it.platforms[0])
		if err != nil {
			continue
		}
		sel := map[string]string{corev1.LabelOSStable: pl.OS, corev1.LabelArchStable: pl.Architecture}
		for k, v := range it.selector {
			sel[k] = v
		}
		it.selector = sel
	}
	return items
}

// openpaiRoleLabel is the node label OpenPAI's cluster-configuration sets
// for a role (pai-master=true, pai-worker=true).
func openpaiRoleLabel(role string) string { return "pai-" + role }

// groupItems splits items by placement and removes duplicate references
// within a group (the first spelling in byte order wins, deterministically).
func groupItems(p *schema.Puller, items []*item) []*group {
	groups := map[string]*group{}
	for _, it := range items {
		// Linux nodes only, unless the config says otherwise: the helper
		// binary and the pulled images are Linux programs, and a mixed
		// cluster's Windows nodes would never start the pod.
		sel := map[string]string{corev1.LabelOSStable: "linux"}
		for k, v := range p.NodeSelector {
			sel[k] = v
		}
		for k, v := range it.selector {
			sel[k] = v
		}
		tols := normTolerations(append(append([]schema.Toleration(nil), p.Tolerations...), it.tols...))
		extraSel, _ := json.Marshal(it.selector)
		extraTol, _ := json.Marshal(normTolerations(it.tols))
		key := string(extraSel) + string(extraTol)
		if len(it.selector) == 0 && len(it.tols) == 0 {
			key = ""
		}
		g, ok := groups[key]
		if !ok {
			g = &group{key: key, selector: sel, tols: tols}
			groups[key] = g
		}
		g.items = append(g.items, it)
	}
	var out []*group
	used := map[string]bool{}
	for _, k := range sortedKeys(groups) {
		g := groups[k]
		sort.SliceStable(g.items, func(i, j int) bool {
			a, b := g.items[i], g.items[j]
			if a.ref.Key() != b.ref.Key() {
				return a.ref.Key() < b.ref.Key()
			}
			if a.digest != b.digest {
				return a.digest < b.digest
			}
			if a.pinned != b.pinned {
				return a.pinned < b.pinned
			}
			return a.name < b.name
		})
		uniq := g.items[:0]
		for i, it := range g.items {
			if i > 0 && it.ref.Key() == uniq[len(uniq)-1].ref.Key() && it.digest == uniq[len(uniq)-1].digest {
				continue
			}
			uniq = append(uniq, it)
		}
		g.items = uniq
		if k != "" {
			g.suffix = groupSuffix(g, used)
		}
		used[g.suffix] = true
		out = append(out, g)
	}
	return out
}

// groupSuffix names a non-default node group: an OpenPAI role's name, else
// the smallest item name, at most 12 characters, made unique with a hash.
func groupSuffix(g *group, used map[string]bool) string {
	var names []string
	for _, it := range g.items {
		names = append(names, it.name)
	}
	sort.Strings(names)
	base := ""
	for k, v := range g.selector {
		if v == "true" && (k == openpaiRoleLabel("master") || k == openpaiRoleLabel("worker")) {
			base = strings.TrimPrefix(k, "pai-")
		}
	}
	if base == "" && len(names) > 0 {
		base = sanitize(names[0], 12)
	}
	if base == "" || used[base] {
		sum := sha256.Sum256([]byte(g.key))
		base = sanitize(base, 6) + hex.EncodeToString(sum[:])[:6]
		base = strings.TrimPrefix(base, "-")
	}
	return base
}

func normTolerations(ts []schema.Toleration) []schema.Toleration {
	seen := map[string]bool{}
	var out []schema.Toleration
	for _, t := range ts {
		b, _ := json.Marshal(t)
		if seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := json.Marshal(out[i])
		b, _ := json.Marshal(out[j])
		return string(a) < string(b)
	})
	return out
}

// pinString parses and pins a reference the profile names directly.
func (r *renderer) pinString(s, usedBy string) string {
	ref, err := imageref.Parse(s)
	if err != nil {
		r.fail("%s: %v", usedBy, err)
		return ""
	}
	return r.pin(ref, nil, usedBy)
}

// pin returns ref pinned to its digest: the written digest when there is
// one, else the lock's (the child for a single platform). Missing entries
// are collected, not returned, so one message names them all.
func (r *renderer) pin(ref imageref.Ref, platforms []string, usedBy string) string {
	if ref.Digest != "" {
		return ref.Pin(ref.Digest)
	}
	e, ok := r.in.Lock.Lookup(ref.Key())
	if !ok {
		r.missing[ref.Key()] = append(r.missing[ref.Key()], usedBy)
		return ref.Pin("sha256:missing")
	}
	switch len(platforms) {
	case 0:
		return ref.Pin(e.Digest)
	case 1:
		d, err := e.DigestFor(platforms[0])
		if err != nil {
			r.fail("%s: %v", usedBy, err)
			return ""
		}
		return ref.Pin(d)
	default:
		for _, pl := range platforms {
			if _, err := e.DigestFor(pl); err != nil {
				r.fail("%s: %v", usedBy, err)
			}
		}
		return ref.Pin(e.Digest)
	}
}

func (r *renderer) labels(instance, component string) map[string]string {
	return map[string]string{
		LabelName:      "stowage",
		LabelInstance:  instance,
		LabelComponent: component,
		LabelPartOf:    "stowage",
		LabelManagedBy: ManagedBy,
		LabelProfile:   r.profileName,
	}
}

// daemonSet renders the DaemonSet name pre-pulling items (one part of the
// node group g) in init containers named names.
func (r *renderer) daemonSet(p *schema.Puller, name string, g *group, items []*item, names []string, helper, pause string, pullSecrets []string) Object {
	res := r.resources(p)
	nonRoot := true
	noEscalation := false
	readOnly := true
	user := int64(65534)
	sec := &corev1.SecurityContext{
		RunAsNonRoot:             &nonRoot,
		RunAsUser:                &user,
		AllowPrivilegeEscalation: &noEscalation,
		ReadOnlyRootFilesystem:   &readOnly,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	mount := []corev1.VolumeMount{{Name: helperVolume, MountPath: HelperDir}}
	inits := []corev1.Container{{
		Name:            "install-helper",
		Image:           helper,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{HelperBinary, "install", HelperPath},
		Resources:       res,
		SecurityContext: sec,
		VolumeMounts:    mount,
	}}
	pinned := []string{helper, pause}
	for i, it := range items {
		inits = append(inits, corev1.Container{
			Name:            names[i],
			Image:           it.pinned,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{HelperPath, "pulled", it.pinned},
			Resources:       res,
			SecurityContext: sec,
			VolumeMounts:    mount,
		})
		pinned = append(pinned, it.pinned)
	}
	sort.Strings(pinned)
	sum := sha256.Sum256([]byte(strings.Join(pinned, "\n")))

	labels := r.labels(name, "image-puller")
	selector := map[string]string{LabelName: labels[LabelName], LabelInstance: name}
	annotations := map[string]string{}
	if p.RefreshHours > 0 {
		annotations[AnnotationRefreshHours] = strconv.Itoa(int(p.RefreshHours))
	}
	var tols []corev1.Toleration
	for _, t := range g.tols {
		tols = append(tols, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds})
	}
	var ips []corev1.LocalObjectReference
	for _, s := range pullSecrets {
		ips = append(ips, corev1.LocalObjectReference{Name: s})
	}
	noToken := false
	noLinks := false
	grace := int64(1)
	limit := resource.MustParse("64Mi")
	maxUnavailable := intstr.FromString("10%")
	ds := &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: p.Namespace, Labels: labels, Annotations: nilIfEmpty(annotations),
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// Roll 10% of the nodes at a time: a new digest is pulled
			// everywhere within a few rounds, without a thundering herd on
			// the registry.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{AnnotationImagesHash: "sha256:" + hex.EncodeToString(sum[:])},
				},
				Spec: corev1.PodSpec{
					InitContainers: inits,
					Containers: []corev1.Container{{
						Name: "pause", Image: pause, ImagePullPolicy: corev1.PullIfNotPresent,
						Resources: res, SecurityContext: sec,
					}},
					Volumes: []corev1.Volume{{Name: helperVolume, VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit},
					}}},
					NodeSelector:                  nilIfEmpty(g.selector),
					Tolerations:                   tols,
					PriorityClassName:             p.PriorityClassName,
					ImagePullSecrets:              ips,
					AutomountServiceAccountToken:  &noToken,
					EnableServiceLinks:            &noLinks,
					TerminationGracePeriodSeconds: &grace,
					SecurityContext: &corev1.PodSecurityContext{
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				},
			},
		},
	}
	return Object{Kind: "DaemonSet", Namespace: p.Namespace, Name: name, Object: ds}
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// resources merges defaults, the profile's and the puller's settings, field
// by field (quantities were checked by the schema, which also refuses a
// request above a limit when the config sets both). A default yields to
// what the config sets: a request above the default limit raises the limit
// to it, and a limit below the default request lowers the request to it,
// as Kubernetes defaults a missing request to the limit.
func (r *renderer) resources(p *schema.Puller) corev1.ResourceRequirements {
	user := schema.MergeResources(r.prof.Resources, p.Resources)
	req := corev1.ResourceList{}
	lim := corev1.ResourceList{}
	for _, x := range []struct {
		name           corev1.ResourceName
		req, lim       schema.Quantity
		defReq, defLim schema.Quantity
	}{
		{corev1.ResourceCPU, user.Requests.CPU, user.Limits.CPU, defaultResources.Requests.CPU, defaultResources.Limits.CPU},
		{corev1.ResourceMemory, user.Requests.Memory, user.Limits.Memory, defaultResources.Requests.Memory, defaultResources.Limits.Memory},
	} {
		rq, lq := x.req, x.lim
		switch {
		case rq == "" && lq == "":
			rq, lq = x.defReq, x.defLim
		case rq == "":
			rq = x.defReq
			if q, l := quantity(rq), quantity(lq); q.Cmp(l) > 0 {
				rq = lq
			}
		case lq == "":
			lq = x.defLim
			if q, l := quantity(rq), quantity(lq); q.Cmp(l) > 0 {
				lq = rq
			}
		}
		req[x.name], lim[x.name] = quantity(rq), quantity(lq)
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}
}

// quantity parses a quantity the schema has checked.
func quantity(q schema.Quantity) resource.Quantity { return resource.MustParse(string(q)) }

func (r *renderer) recordsConfigMap(p *schema.Puller, pinned []string) Object {
	name := p.Name + "-records"
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: p.Namespace, Labels: r.labels(p.Name, "image-records"),
		},
		Data: map[string]string{"images.list": lines(pinned)},
	}
	return Object{Kind: "ConfigMap", Namespace: p.Namespace, Name: name, Object: cm}
}

// lines joins ss one per line with a final newline.
func lines(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return strings.Join(ss, "\n") + "\n"
}
