package render

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/pkgcache"
)

// Names of the profile-wide ConfigMaps.
const (
	OpenPAIConfigMap      = "openpai-services"
	PackageCacheConfigMap = "openpai-package-cache"
	// PackageCacheKey is the name of the file the OpenPAI runtime image
	// build reads (openpai-runtime src/package_cache/package_cache_info);
	// the ConfigMap only records it.
	PackageCacheKey = "package_cache_info"
	// PackageCacheNote is the annotation on the package cache ConfigMap
	// saying what it records and that nothing in the cluster reads it.
	PackageCacheNote = "stowage.dev/note"
)

// openpaiConfigMap holds the reduced service list, the paictl command that
// starts exactly it, the image list per node role and the bytes it saves.
//
// Keys: services.list and dropped.list (one service a line, sorted),
// paictl.command ("./paictl.py service start -n …" in start order, each
// service after its prerequisites), images.<role>.list for master, worker
// and all (references as OpenPAI pulls them, by tag, at the site registry
// when the profile has one), and bytes.csv (per
// role: full, reduced and saved bytes from the sizes observed in OpenPAI
// issue #5381, and how many images have no observed size).
func (r *renderer) openpaiConfigMap(plan *openpai.Reduction) Object {
	data := map[string]string{
		"services.list":  lines(plan.Kept),
		"dropped.list":   lines(plan.Dropped),
		"paictl.command": "./paictl.py " + strings.Join(plan.PaictlArgs, " ") + "\n",
		"bytes.csv":      BytesTable(plan),
	}
	for _, role := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		data["images."+string(role)+".list"] = lines(r.openpaiList(role))
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: OpenPAIConfigMap, Namespace: r.prof.Namespace,
			Labels: r.labels(OpenPAIConfigMap, "openpai-services"),
			Annotations: map[string]string{
				"stowage.dev/openpai-version": plan.Version,
			},
		},
		Data: data,
	}
	return Object{Kind: "ConfigMap", Namespace: r.prof.Namespace, Name: OpenPAIConfigMap, Object: cm}
}

// openpaiList is images.<role>.list: plan.Plan.OpenPAIList, each image
// at its site reference and pinned. A reference that does not parse or
// map is an error (the plan reports the same one first).
func (r *renderer) openpaiList(role openpai.Role) []string {
	out, err := r.plan.OpenPAIList(role, r.in.Lock)
	if err != nil {
		r.fail("%v", err)
	}
	return out
}

// BytesTable renders plan's per-role sizes as comma-separated lines with a
// header: role, full_bytes, reduced_bytes, saved_bytes, unsized_full,
// unsized_reduced (images without an observed size).
func BytesTable(plan *openpai.Reduction) string {
	var b strings.Builder
	b.WriteString("role,full_bytes,reduced_bytes,saved_bytes,unsized_full,unsized_reduced\n")
	for _, rb := range plan.Bytes() {
		fmt.Fprintf(&b, "%s,%d,%d,%d,%d,%d\n", rb.Role, rb.Full, rb.Reduced, rb.Saved, rb.UnknownFull, rb.UnknownReduced)
	}
	return b.String()
}

// packageCacheConfigMap records the profile's package_cache_info. It has no
// consumer in the cluster: the runtime reads the cache baked into its image
// at build time, from the file `stowage openpai package-cache` writes; the
// annotation PackageCacheNote says so to whoever finds the object.
func (r *renderer) packageCacheConfigMap() Object {
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: PackageCacheConfigMap, Namespace: r.prof.Namespace,
			Labels: r.labels(PackageCacheConfigMap, "package-cache"),
			Annotations: map[string]string{
				PackageCacheNote: "a record of the package_cache_info built into the site's openpai-runtime image " +
					"(stowage openpai package-cache writes the file for that build); nothing in the cluster reads this ConfigMap",
			},
		},
		Data: map[string]string{PackageCacheKey: pkgcache.Format(pkgcache.RowsOf(r.prof.PackageCache))},
	}
	return Object{Kind: "ConfigMap", Namespace: r.prof.Namespace, Name: PackageCacheConfigMap, Object: cm}
}
