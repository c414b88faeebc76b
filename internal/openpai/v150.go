package openpai

// graphV150 builds the OpenPAI v1.5.0 graph: microsoft/pai tag v1.5.0,
// commit f67d4ef182a1b4451d3e10f0d3c051a1d5cfd77b (2021-01-22).
//
// Per service: prerequisites from the prerequisite key of
// src/<service>/deploy/service.yaml; roles from its deploy-rules (in
// pai-master / pai-worker / pai-storage, notin no-*) or, for hivedscheduler,
// the nodeSelector in its template; images from its start templates, with
// the third-party references as hard-coded there.
func graphV150() *Graph {
	const cc = "cluster-configuration"
	svcs := []*Service{
		{
			Name:  cc,
			Roles: []Role{RoleNone},
			// Creates the pai-configuration ConfigMap, the registry pull
			// Secret, job-ssh-secret and the node labels; runs kubectl only.
		},
		{
			Name:                  "internal-storage",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}internal-storage-create:{tag}"},
			DeleteImages:          []string{"{prefix}internal-storage-delete:{tag}"},
		},
		{
			Name:                  "postgresql",
			DeclaredPrerequisites: []string{"internal-storage"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}postgresql:{tag}", "{prefix}postgresql-init-client:{tag}"},
		},
		{
			Name:                  "frameworkcontroller",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"frameworkcontroller/frameworkcontroller:v0.9.0"},
		},
		{
			Name:                  "database-controller",
			DeclaredPrerequisites: []string{"frameworkcontroller", "postgresql"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}database-controller:{tag}"},
		},
		{
			Name:                  "device-plugin",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleAll},
			// The host-device plugin (github.com/fuse) always; the NVIDIA
			// plugin for the default devices list [nvidia.com/gpu], from the
			// NVIDIA/k8s-device-plugin manifest at tag 1.0.0-beta4.
			Images:         []string{"everpeace/k8s-host-device-plugin:latest", "nvidia/k8s-device-plugin:1.0.0-beta4"},
			StartCondition: "vendor plugins start only for configured device types (default: nvidia.com/gpu); start.sh fetches their manifests from github.com with svn",
		},
		{
			Name:                  "hivedscheduler",
			DeclaredPrerequisites: []string{cc, "device-plugin", "frameworkcontroller"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"hivedscheduler/hivedscheduler:v0.3.4", "{prefix}kube-scheduler:{tag}"},
			StartCondition:        "starts only when hivedscheduler.config is non-empty (quick-start sets it unless enable_hived_scheduler is false)",
		},
		{
			Name:                  "log-manager",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleAll},
			Images:                []string{"{prefix}log-manager-cleaner:{tag}", "{prefix}log-manager-nginx:{tag}"},
		},
		{
			Name:                  "rest-server",
			DeclaredPrerequisites: []string{cc, "yarn-frameworklauncher", "frameworkcontroller", "hivedscheduler", "log-manager", "postgresql", "database-controller"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}rest-server:{tag}"},
			// LAUNCHER_RUNTIME_IMAGE: the init container of every job pod.
			JobImages: []string{"{prefix}openpai-runtime:{tag}"},
		},
		{
			Name:                  "openpai-runtime",
			DeclaredPrerequisites: []string{cc, "frameworkcontroller", "rest-server"},
			Roles:                 []Role{RoleNone},
			// Only RBAC and the runtime-exit-spec-configuration ConfigMap;
			// the image (built FROM openpairuntime/openpai-runtime:v0.1.9)
			// runs in job pods.
			JobImages: []string{"{prefix}openpai-runtime:{tag}"},
		},
		{
			Name:                  "webportal",
			DeclaredPrerequisites: []string{cc, "rest-server"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}webportal:{tag}"},
		},
		{
			Name:                  "pylon",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}pylon:{tag}"},
		},
		{
			Name:                  "fluentd",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}fluentd:{tag}"},
			Optional:              true,
			StartCondition:        `starts only when cluster.common.job-history is "true" (the default)`,
		},
		{
			Name:                  "prometheus",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"busybox:1.31.1", "{prefix}prometheus:{tag}"},
			DeleteImages:          []string{"{prefix}cleaning-image:{tag}"},
			Optional:              true,
		},
		{
			Name:                  "grafana",
			DeclaredPrerequisites: []string{cc, "prometheus"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}grafana:{tag}"},
			Optional:              true,
		},
		{
			Name:                  "alert-manager",
			DeclaredPrerequisites: []string{cc, "drivers"},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"prom/alertmanager:v0.15.1", "{prefix}alert-handler:{tag}"},
			Optional:              true,
			StartCondition:        "the alert-handler container exists only when alert-manager.alert-handler is configured",
		},
		{
			Name:                  "node-exporter",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleAll},
			Images:                []string{"{prefix}node-exporter:{tag}"},
			Optional:              true,
		},
		{
			Name:                  "job-exporter",
			DeclaredPrerequisites: []string{cc, "drivers"},
			Roles:                 []Role{RoleAll},
			Images:                []string{"{prefix}job-exporter:{tag}"},
			Optional:              true,
		},
		{
			Name:                  "watchdog",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}watchdog:{tag}"},
			Optional:              true,
		},
		{
			Name:           "k8s-dashboard",
			Roles:          []Role{RoleMaster},
			Images:         []string{"{prefix}kubernetes-dashboard-amd64:{tag}"},
			Optional:       true,
			StartCondition: `starts only when cluster.common.k8s-rbac is not "false" (cluster.yaml default "false"; quick-start sets "true")`,
		},
		{
			Name:                  "storage-manager",
			DeclaredPrerequisites: []string{cc, "rest-server"},
			Roles:                 []Role{RoleStorage},
			Images:                []string{"{prefix}storage-manager:{tag}"},
			Optional:              true,
			StartCondition:        "starts only when some node in layout.yaml is labelled pai-storage=true",
		},
		{
			Name:                  "marketplace-db",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}marketplace-db:{tag}"},
			Optional:              true,
		},
		{
			// marketplace-db became a declared prerequisite only in v1.6.0
			// (#5283); in v1.5.0 the dependency exists through DB_HOST only.
			Name:                  "marketplace-restserver",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}marketplace-restserver:{tag}"},
			Optional:              true,
		},
		{
			Name:                  "marketplace-webportal",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"{prefix}marketplace-webportal:{tag}"},
			Optional:              true,
		},
		{
			Name:                  "dshuttle-master",
			DeclaredPrerequisites: []string{cc},
			Roles:                 []Role{RoleMaster},
			Images:                []string{"dshuttle.azurecr.io/dshuttle/dshuttle:25037dc"},
			DeleteImages:          []string{"{prefix}cleaning-image:{tag}"},
			Optional:              true,
			StartCondition:        dshuttleCondition,
		},
		{
			Name:                  "dshuttle-worker",
			DeclaredPrerequisites: []string{cc, "dshuttle-master"},
			Roles:                 []Role{RoleWorker},
			Images:                []string{"dshuttle.azurecr.io/dshuttle/dshuttle:25037dc"},
			DeleteImages:          []string{"{prefix}cleaning-image:{tag}"},
			Optional:              true,
			StartCondition:        dshuttleCondition,
		},
		{
			Name:                  "dshuttle-csi",
			DeclaredPrerequisites: []string{cc, "dshuttle-master", "dshuttle-worker"},
			Roles:                 []Role{RoleWorker},
			Images:                []string{"dshuttle.azurecr.io/dshuttle/dshuttle-csi:25037dc", "quay.io/k8scsi/csi-node-driver-registrar:v1.0.2"},
			Optional:              true,
			StartCondition:        dshuttleCondition,
		},
	}

	yarnOnly := []string{
		"cleaner", "drivers", "end-to-end-test",
		"hadoop-batch-job", "hadoop-data-node", "hadoop-jobhistory",
		"hadoop-name-node", "hadoop-node-manager", "hadoop-resource-manager",
		"yarn-frameworklauncher", "zookeeper",
	}

	g := &Graph{
		Version:  "v1.5.0",
		Services: make(map[string]*Service, len(svcs)),
		YarnOnly: yarnOnly,
		Features: map[string][]string{
			"job-submission":  {"device-plugin", "hivedscheduler", "openpai-runtime", "rest-server"},
			"webportal":       {"pylon", "webportal"},
			"log-viewing":     {"log-manager", "pylon"},
			"monitoring":      {"grafana", "job-exporter", "node-exporter", "prometheus", "watchdog"},
			"alerting":        {"alert-manager", "prometheus"},
			"job-history":     {"fluentd", "frameworkcontroller", "postgresql"},
			"marketplace":     {"marketplace-db", "marketplace-restserver", "marketplace-webportal", "pylon"},
			"dshuttle":        {"dshuttle-csi", "dshuttle-master", "dshuttle-worker"},
			"storage-manager": {"storage-manager"},
			"dashboard":       {"k8s-dashboard"},
		},
	}
	for _, s := range svcs {
		if s.Source == "" {
			s.Source = "src/" + s.Name + "/deploy/service.yaml"
		}
		g.Services[s.Name] = s
	}
	// Effective prerequisites: the declared ones that are k8s services.
	for _, s := range svcs {
		for _, p := range s.DeclaredPrerequisites {
			if _, ok := g.Services[p]; ok {
				s.Prerequisites = append(s.Prerequisites, p)
			}
		}
	}
	return g
}

const dshuttleCondition = `starts only when cluster.common.dshuttle is "true" (the key is absent by default)`
