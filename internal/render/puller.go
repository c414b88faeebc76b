package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
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
	// ArtifactDir is where an artifact's init container mounts the
	// artifact's image volume, read-only.
	ArtifactDir = "/artifact"
)

// Default container resources: the helper only copies a small file and
// exits, or waits for SIGTERM as the main container (as pause would).
var defaultResources = v1alpha1.Resources{
	Requests: v1alpha1.ResourceList{CPU: "1m", Memory: "16Mi"},
	Limits:   v1alpha1.ResourceList{CPU: "50m", Memory: "32Mi"},
}

// item is one use of an image by a puller, with its placement and pin.
type item struct {
	use  *plan.Use
	name string // environment, catalogue key or OpenPAI image base: seeds the container name
	// selector and tols are the use's own placement.
	selector map[string]string
	tols     []v1alpha1.Toleration
	// pinned is the reference pinned to digest, the plan's pin.
	pinned, digest string
}

// group is a set of items that share node placement: one DaemonSet.
type group struct {
	key      string
	suffix   string
	selector map[string]string
	tols     []v1alpha1.Toleration
	items    []*item
}

// puller renders pp's DaemonSets and records ConfigMap. taken holds the
// DaemonSet names of its namespace already in use (its own name is
// reserved for it); the names it takes are added to it.
func (r *renderer) puller(pp *plan.Puller, secrets map[string]Object, taken map[string]bool) []Object {
	p := pp.Puller
	items := r.items(pp)
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		r.pinned(it.use)
		it.pinned, it.digest = it.use.Pinned(), it.use.Pin.Digest
	}
	helper := r.pinned(pp.Helper)
	var pause string // empty: the helper waits as the main container
	if pp.Pause != nil {
		pause = r.pinned(pp.Pause)
	}

	var objs []Object
	var dss []*appsv1.DaemonSet
	records := map[string]bool{}
	ownName := false // whether p.Name is in use by p
	for _, g := range groupItems(p, items) {
		// Container names are chosen over the whole group, so they do not
		// depend on where the group is split.
		names := map[*item]string{}
		for i, n := range containerNames(g.items) {
			names[g.items[i]] = n
		}
		base := p.Name
		if g.suffix != "" {
			base = p.Name + "-" + g.suffix
		}
		classes := credentialClasses(g.items)
		for _, cl := range classes {
			// One credential per pod: the images without auth, and each
			// credential's images, are pulled by DaemonSets of their own,
			// so the kubelet records no credential for an image that needs
			// none (KubeletEnsureSecretPulledImages lets any pod use those
			// offline) and each private image only with its own Secret.
			cbase := base
			if cl.cred != nil && len(classes) > 1 {
				cbase = classBase(base, cl.cred.Secret)
			}
			var pullSecrets []string
			if cl.cred != nil {
				pullSecrets = []string{cl.cred.Secret}
				r.secrets(p, cl.items, secrets)
			}
			type piece struct {
				name  string
				items []*item
			}
			var pieces []piece
			for k, lane := range r.lanes(p, cl.items) {
				lbase := cbase
				if p.Lanes > 1 {
					lbase = laneName(cbase, k+1)
				}
				parts := chunks(len(lane), MaxImagesPerDaemonSet)
				for n, c := range parts {
					name := lbase
					if len(parts) > 1 {
						name = partName(lbase, n+1)
					}
					pieces = append(pieces, piece{name, lane[c[0]:c[1]]})
				}
			}
			for _, pc := range pieces {
				part, name := pc.items, pc.name
				if name == p.Name && !ownName {
					ownName = true
				} else if taken[name] {
					// A node group whose suffix happens to equal a part number
					// of another group ("p-2"), or a name another puller of the
					// namespace has ("p-gpu"): keep DaemonSet names distinct.
					want := name
					key := g.key + "\x00" + cl.key
					name = hashedName(want, key)
					for k := 2; taken[name]; k++ {
						name = hashedName(want, key+"\x00"+strconv.Itoa(k))
					}
				}
				taken[name] = true
				partNames := make([]string, len(part))
				for i, it := range part {
					partNames[i] = names[it]
				}
				ds := r.daemonSet(daemonSetPart{puller: p, name: name, group: g, items: part, names: partNames,
					helper: helper, pause: pause, pullSecrets: pullSecrets})
				dss = append(dss, ds.Object.(*appsv1.DaemonSet))
				objs = append(objs, ds)
				for _, it := range part {
					records[it.pinned] = true
				}
			}
		}
	}
	objs = append(objs, r.recordsConfigMap(p, slices.Sorted(maps.Keys(records))))
	if p.Startup != nil {
		if pause != "" {
			r.fail("puller %q: a startup gate needs the helper as the main container, and helper.pause replaces it", p.Name)
			return objs
		}
		objs = append(objs, r.startupGate(p, dss)...)
	}
	return objs
}

// class is the items of a node group pulled with one credential (nil:
// none), in the group's order; key is the credential's Secret ("" for
// none).
type class struct {
	key   string
	cred  *plan.Credential
	items []*item
}

// credentialClasses partitions a node group's items by the credential
// their own auth pulls them with (plan.Use.Credential): the items without
// one first, then one class per distinct Secret, sorted by name.
func credentialClasses(items []*item) []*class {
	byKey := map[string]*class{}
	for _, it := range items {
		key := ""
		if c := it.use.Credential; c != nil {
			key = c.Secret
		}
		cl := byKey[key]
		if cl == nil {
			cl = &class{key: key, cred: it.use.Credential}
			byKey[key] = cl
		}
		cl.items = append(cl.items, it)
	}
	out := make([]*class, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	return out
}

// classBase names the DaemonSet of a credential's images in a node group
// that has other credentials (or images without one) too: the group's
// name base, "-" and a label of at most 20 characters made from the
// Secret's name. A Secret stowage names (PullSecretName,
// "stowage-pull-<registry>-<8 hex>") gives the registry's leading words
// and its 8 hex digits ("harbor-lab-f21272a7"); any other name is kept
// when it is such a label already, else its leading words and 6 hex
// digits of sha256 of the name. At most 63 characters in all.
func classBase(base, secret string) string {
	var suffix string
	t, stowage := strings.CutPrefix(secret, "stowage-pull-")
	if i := strings.LastIndexByte(t, '-'); stowage && i > 0 && len(t)-i == 9 && isHex(t[i+1:]) {
		suffix = leadingWords(t[:i], 11) + t[i:]
	} else if suffix = sanitize(secret, 20); suffix != secret {
		sum := sha256.Sum256([]byte(secret))
		suffix = leadingWords(sanitize(secret, 1<<20), 13) + "-" + hex.EncodeToString(sum[:])[:6]
	}
	name := base + "-" + suffix
	if len(name) > maxLabel {
		name = shorten(name+"\x00"+secret, maxLabel)
	}
	return name
}

// leadingWords cuts a label fragment to at most max characters at a '-'
// when one is there, else anywhere.
func leadingWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if i := strings.LastIndexByte(s[:max+1], '-'); i > 0 {
		return s[:i]
	}
	return strings.TrimRight(s[:max], "-")
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// secrets adds to secrets the pull Secrets stowage renders for items (all
// of one credential) in each namespace that holds p's pull Secrets: the
// puller's, then each tenant's, the same Secret (name and data) in every
// namespace whose pods use the images, so they present the credentials
// the kubelet checks under KubeletEnsureSecretPulledImages.
func (r *renderer) secrets(p *v1alpha1.Puller, items []*item, secrets map[string]Object) {
	if r.prof.Secrets != v1alpha1.SecretsRender {
		return
	}
	for _, it := range items {
		a := it.use.Auth
		if a == nil || a.Secret != "" {
			continue
		}
		for _, ns := range plan.SecretNamespaces(p) {
			s := r.secret(ns, it)
			if s.Object == nil {
				continue
			}
			id := s.Namespace + "/" + s.Name
			if prev, ok := secrets[id]; ok && !reflect.DeepEqual(prev.Object, s.Object) {
				// Only literal passwords can differ under one name.
				r.fail("%s: registry %s, user %q: two different passwords for one registry and user in namespace %s",
					it.use.UsedBy(), it.use.PullRef().AuthKey(), a.Username, ns)
			}
			secrets[id] = s
		}
	}
}

// items are a puller's uses of the plan with their placement
// (plan.Use.Placement: an environment's own, an OpenPAI role's node label,
// and the os/arch of a single requested platform).
func (r *renderer) items(pp *plan.Puller) []*item {
	var items []*item
	for _, u := range pp.Uses {
		it := &item{use: u, name: u.Name, selector: u.Placement()}
		switch u.Kind {
		case plan.KindEnvironment, plan.KindImage:
			it.tols = u.Tolerations
		case plan.KindOpenPAI:
			// A role's own images go to the nodes labelled for it; role
			// "all" images (which the plan lists under each role) to every
			// node of the puller, as OpenPAI's DaemonSets for them (device
			// plugins, log-manager) have no positive node selector and run
			// on storage-only and unlabelled nodes too. The group's
			// de-duplication keeps one of the per-role copies.
			it.name = u.Ref.Base()
		}
		items = append(items, it)
	}
	return items
}

// openpaiRoleLabel is the node label OpenPAI's cluster-configuration sets
// for a role (pai-master=true, pai-worker=true).
func openpaiRoleLabel(role string) string { return "pai-" + role }

// groupItems splits items by placement and removes duplicate references
// within a group (the first spelling in byte order wins, deterministically).
func groupItems(p *v1alpha1.Puller, items []*item) []*group {
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
		tols := normTolerations(append(append([]v1alpha1.Toleration(nil), p.Tolerations...), it.tols...))
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
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		sort.SliceStable(g.items, func(i, j int) bool {
			a, b := g.items[i], g.items[j]
			if a.use.Key() != b.use.Key() {
				return a.use.Key() < b.use.Key()
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
			if i > 0 && it.use.Key() == uniq[len(uniq)-1].use.Key() && it.digest == uniq[len(uniq)-1].digest {
				continue
			}
			uniq = append(uniq, it)
		}
		g.items = uniq
		if k != "" {
			g.suffix = groupSuffix(p.Name, g, used)
		}
		used[g.suffix] = true
		out = append(out, g)
	}
	return out
}

// groupSuffix names a non-default node group of puller: the value of the
// node label that chooses its references (nodeLabelSuffix), else an
// OpenPAI role's name, else the smallest item name, at most 12
// characters, made unique with a hash.
func groupSuffix(puller string, g *group, used map[string]bool) string {
	if s := nodeLabelSuffix(puller, g, used); s != "" {
		return s
	}
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

// nodeLabelSuffix names a node group that a byNodeLabel value makes (an
// item with plan.Use.NodeLabel; of several, the smallest label and value):
// the value itself when it is a DNS-1123 label fragment that fits after
// puller and "-" in 63 characters ("gpu-a100"), else the value made one
// ("5.15.0-91-generic" -> "5-15-0-91-generic", "" -> "empty"), cut to fit
// and ending in "-" and 6 hex digits of sha256 of the value
// ("5-15-0-91-generic-3f1c2a"). The name depends on the value alone, so
// adding or removing another value never renames a node group's
// DaemonSet, and values differing only in case or punctuation never
// share one. Only a fragment another group of the puller already has
// (an item-named group, or a hash collision) is made distinct by the
// group's placement key instead. "" when no item is chosen by a node
// label.
func nodeLabelSuffix(puller string, g *group, used map[string]bool) string {
	var label, value string
	found := false
	for _, it := range g.items {
		u := it.use
		if u.NodeLabel == "" {
			continue
		}
		if !found || u.NodeLabel < label || u.NodeLabel == label && u.NodeLabelValue < value {
			label, value, found = u.NodeLabel, u.NodeLabelValue, true
		}
	}
	if !found {
		return ""
	}
	room := maxLabel - len(puller) - 1
	s := "empty"
	if value != "" {
		s = sanitize(value, 1<<20)
	}
	if s != value || len(s) > room {
		s = shorten(s+"\x00"+value, min(room, len(s)+7))
	}
	if used[s] {
		s = shorten(s+"\x00"+g.key, room)
	}
	return s
}

func normTolerations(ts []v1alpha1.Toleration) []v1alpha1.Toleration {
	seen := map[string]bool{}
	var out []v1alpha1.Toleration
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

// pinned returns u's reference pinned as the plan pins it, and records
// why it cannot be: a missing lock entry is collected (so that one message
// names them all), a platform the entry lacks is an error of u.
func (r *renderer) pinned(u *plan.Use) string {
	for _, err := range u.Pin.Errs {
		if errors.Is(err, lock.ErrMissing) {
			r.missing[u.Key()] = append(r.missing[u.Key()], u.UsedBy())
			continue
		}
		r.fail("%s: %v", u.UsedBy(), err)
	}
	return u.Pinned()
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

// daemonSetPart is what one DaemonSet of a puller needs: the puller, the
// DaemonSet's name, the node group it serves (its nodeSelector and
// tolerations), the items it pre-pulls (one part of the group) and their
// init container names, the pinned helper and pause images (pause ""
// when the helper waits as the main container), and its imagePullSecrets.
type daemonSetPart struct {
	puller      *v1alpha1.Puller
	name        string
	group       *group
	items       []*item
	names       []string
	helper      string
	pause       string
	pullSecrets []string
}

// daemonSet renders the DaemonSet d.name pre-pulling d.items in init
// containers named d.names, on the nodes of d.group.
func (r *renderer) daemonSet(d daemonSetPart) Object {
	p, name := d.puller, d.name
	inits, main, artifacts, hash := r.podContainers(d)
	labels := r.labels(name, "image-puller")
	selector := map[string]string{LabelName: labels[LabelName], LabelInstance: name}
	annotations := map[string]string{}
	if p.RefreshHours > 0 {
		annotations[AnnotationRefreshHours] = strconv.Itoa(int(p.RefreshHours))
	}
	var tols []corev1.Toleration
	for _, t := range d.group.tols {
		tols = append(tols, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds})
	}
	var ips []corev1.LocalObjectReference
	for _, s := range d.pullSecrets {
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
					Annotations: map[string]string{AnnotationImagesHash: hash},
				},
				Spec: corev1.PodSpec{
					InitContainers: inits,
					Containers:     []corev1.Container{main},
					Volumes: append([]corev1.Volume{{Name: helperVolume, VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit},
					}}}, artifacts...),
					NodeSelector:                  nilIfEmpty(d.group.selector),
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

// podContainers returns the containers of d's pods: the init containers
// (the helper's install, then one per item running "pulled" on its pinned
// reference), the main container (the pause image, or the helper waiting),
// all with the puller's resources and a locked-down security context; the
// image volumes of the artifacts among the items; and the images hash
// annotation's value: "sha256:" and the hex SHA-256 of every pinned
// reference the pod runs or mounts, sorted, one per line.
//
// An artifact has no program to run, so it is not a container's image:
// the pod gets an image volume of the pinned reference (pullPolicy
// IfNotPresent; the kubelet pulls every image volume of a pod before it
// starts the first container), named like the item's init container, and
// that init container runs "pulled" from the helper image with the volume
// mounted read-only at ArtifactDir, so the kubelet reports a failed pull
// of the artifact on it, and the volume's digest in its status where the
// cluster reports image volume digests.
func (r *renderer) podContainers(d daemonSetPart) (inits []corev1.Container, main corev1.Container, artifacts []corev1.Volume, hash string) {
	res := r.resources(d.puller)
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
	inits = []corev1.Container{{
		Name:            "install-helper",
		Image:           d.helper,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{HelperBinary, "install", HelperPath},
		Resources:       res,
		SecurityContext: sec,
		VolumeMounts:    mount,
	}}
	pinned := []string{d.helper}
	main = corev1.Container{
		Name: "wait", Image: d.helper, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:   []string{HelperBinary, "wait"},
		Resources: res, SecurityContext: sec,
	}
	if d.pause != "" {
		pinned = append(pinned, d.pause)
		main = corev1.Container{
			Name: "pause", Image: d.pause, ImagePullPolicy: corev1.PullIfNotPresent,
			Resources: res, SecurityContext: sec,
		}
	}
	for i, it := range d.items {
		if it.use.Artifact {
			artifacts = append(artifacts, corev1.Volume{Name: d.names[i], VolumeSource: corev1.VolumeSource{
				Image: &corev1.ImageVolumeSource{Reference: it.pinned, PullPolicy: corev1.PullIfNotPresent},
			}})
			inits = append(inits, corev1.Container{
				Name:            d.names[i],
				Image:           d.helper,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{HelperBinary, "pulled", it.pinned},
				Resources:       res,
				SecurityContext: sec,
				VolumeMounts:    []corev1.VolumeMount{{Name: d.names[i], MountPath: ArtifactDir, ReadOnly: true}},
			})
			pinned = append(pinned, it.pinned)
			continue
		}
		inits = append(inits, corev1.Container{
			Name:            d.names[i],
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
	return inits, main, artifacts, "sha256:" + hex.EncodeToString(sum[:])
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
func (r *renderer) resources(p *v1alpha1.Puller) corev1.ResourceRequirements {
	user := schema.MergeResources(r.prof.Resources, p.Resources)
	req := corev1.ResourceList{}
	lim := corev1.ResourceList{}
	for _, x := range []struct {
		name           corev1.ResourceName
		req, lim       v1alpha1.Quantity
		defReq, defLim v1alpha1.Quantity
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
func quantity(q v1alpha1.Quantity) resource.Quantity { return resource.MustParse(string(q)) }

func (r *renderer) recordsConfigMap(p *v1alpha1.Puller, pinned []string) Object {
	name := p.Name + "-records"
	if p.RecordsName != "" {
		name = p.RecordsName
	}
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
