// Package render holds the private pieces of the public render package,
// the one render pipeline: a validated config and a lock into Kubernetes
// objects, their encoding and the files of an output directory. It is
// pure: no file, network or environment access. Credentials arrive
// already read (render.ReadNeeded, at the caller's edge; see
// Input.Passwords), digests come from the lock.
package render

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/words"
)

// Label keys and values stowage sets on what it renders.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelProfile   = "stowage.dev/profile"

	// AnnotationImagesHash holds sha256 over the pinned image list of a
	// DaemonSet's pod template: a changed digest changes it and rolls the
	// DaemonSet; nothing else does.
	AnnotationImagesHash = "stowage.dev/images-hash"
	// AnnotationRefreshHours records the puller's refreshHours, the
	// interval at which the digest-bump bot should re-resolve tags.
	AnnotationRefreshHours = "stowage.dev/refresh-hours"

	ManagedBy = "stowage"
)

// Input is everything a render needs.
type Input struct {
	// Plan is the profile's image plan (plan.Build of Config, Profile and
	// Lock). When nil, Render builds it.
	Plan   *plan.Plan
	Config *v1alpha1.Config
	// Profile names the profile to render.
	Profile string
	// Lock supplies the digests; every image must have an entry unless its
	// reference carries a digest.
	Lock *lock.Lock
	// Passwords maps a password source as written in the config
	// ("env:HARBOR_PASSWORD", "file:secrets/hub") to its bytes. The caller
	// reads them; render never does. Needed only when the profile renders
	// Secrets.
	Passwords map[string][]byte
	// Trust maps the key and trusted-root files of the profile's verify
	// policies (plan.Plan.AdmissionFiles, paths as written) to their
	// bytes, for the admission policies of a profile with a policy field.
	// The caller reads them; render never does.
	Trust map[string][]byte
}

// Object is one rendered Kubernetes object.
type Object struct {
	Kind      string
	Namespace string
	Name      string
	Object    runtime.Object
}

// FileName is the object's file name in an output directory:
// <kind>-<namespace>-<name>.yaml, lower case; <kind>-<name>.yaml for a
// cluster-scoped object (an admission policy).
func (o Object) FileName() string {
	if o.Namespace == "" {
		return strings.ToLower(o.Kind) + "-" + o.Name + ".yaml"
	}
	return strings.ToLower(o.Kind) + "-" + o.Namespace + "-" + o.Name + ".yaml"
}

// kindOrder puts objects a DaemonSet depends on first.
var kindOrder = map[string]int{"Secret": 0, "ConfigMap": 1, "DaemonSet": 2, "ClusterPolicy": 3, "ImageValidatingPolicy": 3, "TrustRoot": 3, "ClusterImagePolicy": 4}

// MissingError lists every image the lock has no entry for.
type MissingError struct {
	// Images are "reference (used by …)" descriptions, sorted.
	Images []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s has no entry for %s; run `stowage lock` to resolve %s:\n  %s",
		lock.FileName, words.Count(len(e.Images), "image"), words.CountAs(len(e.Images), "it", "them")[2:], strings.Join(e.Images, "\n  "))
}

// Render renders the profile: Secrets, records ConfigMaps, DaemonSets, the
// OpenPAI service ConfigMap and the package cache ConfigMap, sorted by kind,
// namespace and name. Each puller gets one DaemonSet per node group, and a
// node group of more than MaxImagesPerDaemonSet images is split into
// DaemonSets of at most that many (see MaxImagesPerDaemonSet for why).
// Errors: *MissingError for images without a lock entry, and errors naming
// the puller, environment or image for the rest; all problems are joined
// into one error.
func Render(in Input) ([]Object, error) {
	pl := in.Plan
	if pl == nil {
		var err error
		if pl, err = plan.Build(in.Config, in.Profile, in.Lock); err != nil {
			return nil, err
		}
	}
	r := &renderer{in: in, plan: pl, profileName: pl.Profiles[0], prof: pl.Profile, missing: map[string][]string{}}
	objs := r.run()
	if len(r.missing) > 0 {
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(r.missing)) {
			users := uniqueSorted(r.missing[k])
			lines = append(lines, fmt.Sprintf("%s (used by %s)", k, strings.Join(users, ", ")))
		}
		r.errs = append([]error{&MissingError{Images: lines}}, r.errs...)
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return objs, nil
}

type renderer struct {
	in          Input
	plan        *plan.Plan
	profileName string
	prof        *v1alpha1.Profile
	errs        []error
	// missing maps a lock key to the things that use it.
	missing map[string][]string
}

func (r *renderer) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

func (r *renderer) run() []Object {
	var objs []Object
	secrets := map[string]Object{}
	// DaemonSet names are unique per namespace: each puller's own name is
	// reserved for it, then the pullers take the names of their node
	// groups and parts in (namespace, name) order, so that which name gets
	// a hash when two would collide ("a" with a node group "gpu", and a
	// puller "a-gpu") does not depend on the order the config lists them.
	taken := map[string]map[string]bool{}
	order := make([]int, len(r.prof.Pullers))
	for i, p := range r.prof.Pullers {
		if taken[p.Namespace] == nil {
			taken[p.Namespace] = map[string]bool{}
		}
		taken[p.Namespace][p.Name] = true
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		pa, pb := r.prof.Pullers[order[a]], r.prof.Pullers[order[b]]
		if pa.Namespace != pb.Namespace {
			return pa.Namespace < pb.Namespace
		}
		return pa.Name < pb.Name
	})
	for _, i := range order {
		pp := &r.plan.Pullers[i]
		objs = append(objs, r.puller(pp, secrets, taken[pp.Puller.Namespace])...)
	}
	for _, k := range slices.Sorted(maps.Keys(secrets)) {
		objs = append(objs, secrets[k])
	}
	if r.plan.OpenPAI != nil {
		objs = append(objs, r.openpaiConfigMap(r.plan.OpenPAI))
	}
	if len(r.prof.PackageCache) > 0 {
		objs = append(objs, r.packageCacheConfigMap())
	}
	return append(objs, r.admissionObjects()...)
}

func uniqueSorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i > 0 && s == out[n-1] {
			continue
		}
		out[n] = s
		n++
	}
	return out[:n]
}
