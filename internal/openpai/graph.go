package openpai

import (
	"sort"
)

// Role is the set of nodes a service's pods run on. It is derived from the
// deploy-rules of src/<service>/deploy/service.yaml, which
// deployment/paiLibrary/paiService/service_template_generate.py turns into a
// required nodeAffinity on the node labels that cluster-configuration sets
// from layout.yaml.
type Role string

// The node roles of OpenPAI v1.5.0.
const (
	// RoleMaster: pods pinned to nodes labelled pai-master=true.
	RoleMaster Role = "master"
	// RoleWorker: pods pinned to nodes labelled pai-worker=true; job pods
	// (and so the openpai-runtime init container) run here.
	RoleWorker Role = "worker"
	// RoleAll: DaemonSets without a positive node selector (a node can opt
	// out with a no-* label such as no-logmanager).
	RoleAll Role = "all"
	// RoleStorage: pods pinned to nodes labelled pai-storage=true.
	RoleStorage Role = "storage"
	// RoleNone: the service creates only Kubernetes objects (ConfigMaps,
	// Secrets, RBAC, node labels) and runs no pod of its own.
	RoleNone Role = "none"
)

// ImageRoles lists, in output order, the roles that can carry images:
// master, worker, all, storage. RoleNone never has images.
func ImageRoles() []Role {
	return []Role{RoleMaster, RoleWorker, RoleAll, RoleStorage}
}

// Service is one OpenPAI service as paictl sees it: a directory
// src/<Name>/deploy/service.yaml in microsoft/pai.
//
// Image strings are templates: "{prefix}" is replaced by Registry.Prefix and
// "{tag}" by Registry.Tag (the Jinja variables cluster_cfg docker-registry
// prefix and tag in the service templates). Third-party images are fixed
// references written as in the templates and are never prefixed.
type Service struct {
	// Name is the service directory name, as passed to paictl -n.
	Name string
	// Source is the service definition file, relative to the microsoft/pai root.
	Source string
	// Prerequisites are the declared prerequisites that are themselves k8s
	// services. paictl skips any prerequisite that is not in the current
	// service list, so yarn-only ones (yarn-frameworklauncher, drivers) have
	// no effect (deployment/paiLibrary/paiService/service_management_start.py).
	Prerequisites []string
	// DeclaredPrerequisites is the prerequisite list of service.yaml as written.
	DeclaredPrerequisites []string
	// Roles are the node roles the service's pods run on ([RoleNone] when it
	// runs no pod).
	Roles []Role
	// Images are the images its start templates pull on the nodes of Roles.
	// Images only pulled by conditional containers that are on by default
	// (nvidia/k8s-device-plugin) or that exist only when configured
	// (alert-handler) are included: a mirror needs them to be there.
	Images []string
	// JobImages are images that run inside job pods, not in the service's own
	// pods. Job pods require pai-worker=true, so they count for RoleWorker.
	JobImages []string
	// DeleteImages are images only used by the service's delete script; they
	// are not pulled by "paictl service start" and are not counted in Reduction.
	DeleteImages []string
	// Optional reports whether the facts name the service as not needed for
	// job submission (monitoring, alerting, marketplace, dshuttle, ...).
	Optional bool
	// StartCondition says, when non-empty, which configuration makes the
	// start script do something; under other configurations it starts
	// nothing and pulls no image.
	StartCondition string
}

// Graph is the service graph of one OpenPAI version.
type Graph struct {
	// Version is the OpenPAI release tag, e.g. "v1.5.0".
	Version string
	// Services maps a service name to its definition; it holds exactly the
	// services with cluster-type k8s (27 in v1.5.0).
	Services map[string]*Service
	// Features maps a feature name (see Features) to its root services.
	Features map[string][]string
	// YarnOnly lists, sorted, the service directories whose cluster-type is
	// yarn only: present in src/ but never started on a k8s cluster.
	YarnOnly []string
}

// Names returns the names of all services of g, sorted.
func (g *Graph) Names() []string {
	names := make([]string, 0, len(g.Services))
	for n := range g.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Closure returns, sorted, the names in roots together with everything they
// reach over Prerequisites. Names that are not services of g are ignored.
func (g *Graph) Closure(roots []string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		s, ok := g.Services[n]
		if !ok || seen[n] {
			return
		}
		seen[n] = true
		for _, p := range s.Prerequisites {
			visit(p)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// versions maps each supported version to the function that builds its graph.
// Each call builds a fresh graph, so callers may change what Load returns.
var versions = map[string]func() *Graph{
	"v1.5.0": graphV150,
}

// SupportedVersions returns the OpenPAI versions stowage knows, sorted
// ("v1.5.0" only today).
func SupportedVersions() []string {
	out := make([]string, 0, len(versions))
	for v := range versions {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Load returns the service graph of an OpenPAI version such as "v1.5.0".
// The graph is a fresh copy the caller owns. An unknown version gives a
// *UnsupportedVersionError naming it and listing SupportedVersions.
func Load(version string) (*Graph, error) {
	build, ok := versions[version]
	if !ok {
		return nil, &UnsupportedVersionError{Version: version, Supported: SupportedVersions()}
	}
	return build(), nil
}

// Features returns the names of the features stowage knows for OpenPAI,
// sorted. A feature is a named capability mapped to the root services that
// provide it (Graph.Features); Reduce keeps the roots and their
// prerequisite closure. The names are the same for every supported version.
//
// The roots are the services that implement the capability. Where the
// capability needs services that no prerequisite list declares, the extra
// roots are inferred from OpenPAI v1.5.0's sources (what each service's
// pods and the job runtime use at run time):
//
//   - job-submission: rest-server, hivedscheduler, openpai-runtime and
//     device-plugin. openpai-runtime provides the job init container and the
//     runtime-exit-spec ConfigMap; device-plugin advertises github.com/fuse,
//     which every job container requests (src/rest-server/src/models/v2/job/k8s.js).
//   - webportal: webportal and pylon, the nginx entrypoint on port 80.
//   - log-viewing: log-manager and pylon, which proxies /log-manager.
//   - monitoring: prometheus, grafana, node-exporter, job-exporter, watchdog.
//   - alerting: alert-manager and prometheus, which feeds it.
//   - job-history: fluentd, postgresql and frameworkcontroller (fluentd tails
//     frameworkcontroller logs and writes them to postgresql).
//   - marketplace: marketplace-db, marketplace-restserver,
//     marketplace-webportal and pylon (marketplace-restserver uses the DB).
//   - dshuttle: dshuttle-master, dshuttle-worker, dshuttle-csi.
//   - storage-manager: storage-manager.
//   - dashboard: k8s-dashboard.
func Features() []string {
	set := map[string]bool{}
	for _, build := range versions {
		for f := range build().Features {
			set[f] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
