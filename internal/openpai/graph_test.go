package openpai

import (
	"errors"
	"slices"
	"sort"
	"testing"
)

// seed5381Services is the service list JosephKang captured from info.log of
// a v1.5.0 deployment in issue #5381, in the order given there.
var seed5381Services = []string{
	"dshuttle-csi", "marketplace-db", "cluster-configuration", "internal-storage", "alert-manager",
	"fluentd", "database-controller", "marketplace-webportal", "log-manager", "openpai-runtime",
	"hivedscheduler", "postgresql", "marketplace-restserver", "storage-manager", "device-plugin",
	"watchdog", "frameworkcontroller", "grafana", "webportal", "prometheus", "rest-server", "pylon",
	"k8s-dashboard", "job-exporter", "dshuttle-master", "node-exporter", "dshuttle-worker",
}

func mustLoad(t *testing.T) *Graph {
	t.Helper()
	g, err := Load("v1.5.0")
	if err != nil {
		t.Fatalf("Load(v1.5.0): %v", err)
	}
	return g
}

func TestSupportedVersions(t *testing.T) {
	t.Parallel()
	if got, want := SupportedVersions(), []string{"v1.5.0"}; !slices.Equal(got, want) {
		t.Fatalf("SupportedVersions() = %v, want %v", got, want)
	}
}

func TestLoadUnsupportedVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"v1.8.0", "v1.6.0", "1.5.0", ""} {
		t.Run(v, func(t *testing.T) {
			g, err := Load(v)
			var uv *UnsupportedVersionError
			if !errors.As(err, &uv) {
				t.Fatalf("Load(%q) error = %v, want *UnsupportedVersionError", v, err)
			}
			if g != nil {
				t.Errorf("Load(%q) graph = %v, want nil", v, g)
			}
			if uv.Version != v || !slices.Equal(uv.Supported, []string{"v1.5.0"}) {
				t.Errorf("error = %+v, want Version %q and Supported [v1.5.0]", uv, v)
			}
		})
	}
}

func TestGraphServicesMatchIssue5381(t *testing.T) {
	t.Parallel()
	g := mustLoad(t)
	want := slices.Clone(seed5381Services)
	sort.Strings(want)
	if got := g.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v\nwant %v (the 27 services of issue #5381)", got, want)
	}
	for _, y := range g.YarnOnly {
		if _, ok := g.Services[y]; ok {
			t.Errorf("yarn-only %s is in Services", y)
		}
	}
	if len(g.YarnOnly) != 11 {
		t.Errorf("len(YarnOnly) = %d, want 11", len(g.YarnOnly))
	}
}

func TestGraphPrerequisites(t *testing.T) {
	t.Parallel()
	g := mustLoad(t)
	tests := []struct {
		service  string
		declared []string
		want     []string
	}{
		{"cluster-configuration", nil, nil},
		{"k8s-dashboard", nil, nil},
		{"postgresql", []string{"internal-storage"}, []string{"internal-storage"}},
		{"database-controller", []string{"frameworkcontroller", "postgresql"}, []string{"frameworkcontroller", "postgresql"}},
		{"hivedscheduler", []string{"cluster-configuration", "device-plugin", "frameworkcontroller"},
			[]string{"cluster-configuration", "device-plugin", "frameworkcontroller"}},
		// yarn-frameworklauncher and drivers are yarn-only: paictl skips them.
		{"rest-server",
			[]string{"cluster-configuration", "yarn-frameworklauncher", "frameworkcontroller", "hivedscheduler", "log-manager", "postgresql", "database-controller"},
			[]string{"cluster-configuration", "frameworkcontroller", "hivedscheduler", "log-manager", "postgresql", "database-controller"}},
		{"alert-manager", []string{"cluster-configuration", "drivers"}, []string{"cluster-configuration"}},
		{"job-exporter", []string{"cluster-configuration", "drivers"}, []string{"cluster-configuration"}},
		{"openpai-runtime", []string{"cluster-configuration", "frameworkcontroller", "rest-server"},
			[]string{"cluster-configuration", "frameworkcontroller", "rest-server"}},
		// v1.5.0 still lacks the marketplace prerequisites added by #5283.
		{"marketplace-restserver", []string{"cluster-configuration"}, []string{"cluster-configuration"}},
		{"dshuttle-csi", []string{"cluster-configuration", "dshuttle-master", "dshuttle-worker"},
			[]string{"cluster-configuration", "dshuttle-master", "dshuttle-worker"}},
	}
	for _, tc := range tests {
		t.Run(tc.service, func(t *testing.T) {
			s := g.Services[tc.service]
			if !slices.Equal(s.DeclaredPrerequisites, tc.declared) {
				t.Errorf("DeclaredPrerequisites = %v, want %v", s.DeclaredPrerequisites, tc.declared)
			}
			if !slices.Equal(s.Prerequisites, tc.want) {
				t.Errorf("Prerequisites = %v, want %v", s.Prerequisites, tc.want)
			}
		})
	}
	for _, s := range g.Services {
		for _, p := range s.Prerequisites {
			if _, ok := g.Services[p]; !ok {
				t.Errorf("%s: prerequisite %s is not a k8s service", s.Name, p)
			}
		}
		if s.Source != "src/"+s.Name+"/deploy/service.yaml" {
			t.Errorf("%s: Source = %q", s.Name, s.Source)
		}
	}
}

func TestGraphRoles(t *testing.T) {
	t.Parallel()
	g := mustLoad(t)
	want := map[Role][]string{
		RoleMaster: {"alert-manager", "database-controller", "dshuttle-master", "fluentd", "frameworkcontroller",
			"grafana", "hivedscheduler", "internal-storage", "k8s-dashboard", "marketplace-db",
			"marketplace-restserver", "marketplace-webportal", "postgresql", "prometheus", "pylon",
			"rest-server", "watchdog", "webportal"},
		RoleAll:     {"device-plugin", "job-exporter", "log-manager", "node-exporter"},
		RoleWorker:  {"dshuttle-csi", "dshuttle-worker"},
		RoleStorage: {"storage-manager"},
		RoleNone:    {"cluster-configuration", "openpai-runtime"},
	}
	got := map[Role][]string{}
	for _, n := range g.Names() {
		for _, r := range g.Services[n].Roles {
			got[r] = append(got[r], n)
		}
	}
	for r, names := range want {
		if !slices.Equal(got[r], names) {
			t.Errorf("role %s: %v, want %v", r, got[r], names)
		}
	}
	for _, n := range []string{"cluster-configuration", "openpai-runtime"} {
		if len(g.Services[n].Images) != 0 {
			t.Errorf("%s runs no pod but has Images %v", n, g.Services[n].Images)
		}
	}
}

func TestGraphIsAcyclic(t *testing.T) {
	t.Parallel()
	g := mustLoad(t)
	order := startOrder(g, g.Names()) // panics on a cycle
	assertPrerequisitesFirst(t, g, order)
}

func TestLoadReturnsACopy(t *testing.T) {
	t.Parallel()
	g := mustLoad(t)
	g.Services["rest-server"].Prerequisites = nil
	delete(g.Services, "pylon")
	g2 := mustLoad(t)
	if len(g2.Services["rest-server"].Prerequisites) != 6 || g2.Services["pylon"] == nil {
		t.Fatal("changing a loaded graph changed the next Load")
	}
}

func TestFeatures(t *testing.T) {
	t.Parallel()
	want := []string{"alerting", "dashboard", "dshuttle", "job-history", "job-submission",
		"log-viewing", "marketplace", "monitoring", "storage-manager", "webportal"}
	if got := Features(); !slices.Equal(got, want) {
		t.Fatalf("Features() = %v, want %v", got, want)
	}
	g := mustLoad(t)
	roots := map[string][]string{
		"job-submission":  {"device-plugin", "hivedscheduler", "openpai-runtime", "rest-server"},
		"webportal":       {"pylon", "webportal"},
		"monitoring":      {"grafana", "job-exporter", "node-exporter", "prometheus", "watchdog"},
		"alerting":        {"alert-manager", "prometheus"},
		"job-history":     {"fluentd", "frameworkcontroller", "postgresql"},
		"marketplace":     {"marketplace-db", "marketplace-restserver", "marketplace-webportal", "pylon"},
		"dshuttle":        {"dshuttle-csi", "dshuttle-master", "dshuttle-worker"},
		"storage-manager": {"storage-manager"},
		"dashboard":       {"k8s-dashboard"},
		"log-viewing":     {"log-manager", "pylon"},
	}
	for f, want := range roots {
		if got := g.Features[f]; !slices.Equal(got, want) {
			t.Errorf("feature %s roots = %v, want %v", f, got, want)
		}
	}
}
