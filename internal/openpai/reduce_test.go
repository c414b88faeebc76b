package openpai

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// assertPrerequisitesFirst fails unless every service in order comes after
// all of its prerequisites, and every prerequisite is in order.
func assertPrerequisitesFirst(t *testing.T, g *Graph, order []string) {
	t.Helper()
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	for i, n := range order {
		for _, p := range g.Services[n].Prerequisites {
			j, ok := pos[p]
			if !ok {
				t.Errorf("%s is started but its prerequisite %s is not", n, p)
			} else if j > i {
				t.Errorf("%s (position %d) starts before its prerequisite %s (position %d)", n, i, p, j)
			}
		}
	}
}

// errorsOf returns the errors joined in err, flattened.
func errorsOf(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, errorsOf(e)...)
		}
		return out
	}
	return []error{err}
}

// Case keep-typo.
func TestCaseKeepTypo(t *testing.T) {
	t.Parallel()
	_, err := Reduce(Selection{Version: "v1.5.0", Keep: []string{"rest-sever"}})
	var ue *UnknownError
	if !errors.As(err, &ue) {
		t.Fatalf("error = %v, want *UnknownError", err)
	}
	want := UnknownError{Kind: "service", Field: "keep", Index: 0, Name: "rest-sever", Version: "v1.5.0", Suggestion: "rest-server"}
	if *ue != want {
		t.Errorf("error = %+v, want %+v", *ue, want)
	}
	// The case asks the message to name the typo, say it is not a v1.5.0
	// service and suggest the right name.
	msg := ue.Error()
	for _, part := range []string{`"rest-sever"`, "is not an OpenPAI v1.5.0 service", `did you mean "rest-server"`} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

// Case drop-required.
func TestCaseDropRequired(t *testing.T) {
	t.Parallel()
	_, err := Reduce(Selection{Version: "v1.5.0", Keep: []string{"rest-server"}, Drop: []string{"postgresql"}})
	var re *RequiredError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v, want *RequiredError", err)
	}
	// rest-server declares postgresql itself, so the shortest chain is direct.
	if re.Field != "drop" || re.Index != 0 || re.Name != "postgresql" || re.RequiredBy != "rest-server" ||
		!slices.Equal(re.Chain, []string{"rest-server", "postgresql"}) || re.Feature != "" {
		t.Errorf("error = %+v", *re)
	}
	msg := re.Error()
	if !strings.Contains(msg, `cannot drop "postgresql": required by rest-server (rest-server -> postgresql)`) {
		t.Errorf("message %q does not name the chain", msg)
	}
}

// Case unsupported-version.
func TestCaseUnsupportedVersion(t *testing.T) {
	t.Parallel()
	p, err := Reduce(Selection{Version: "v1.8.0"})
	if p != nil {
		t.Fatalf("plan = %+v, want nil", p)
	}
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) {
		t.Fatalf("error = %v, want *UnsupportedVersionError", err)
	}
	if uv.Version != "v1.8.0" || !slices.Equal(uv.Supported, []string{"v1.5.0"}) {
		t.Errorf("error = %+v", *uv)
	}
	if got, want := uv.Error(), `OpenPAI version "v1.8.0" is not supported; supported versions: v1.5.0`; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	// The selection is empty too; both problems come back at once.
	var es *EmptySelectionError
	if !errors.As(err, &es) {
		t.Errorf("error = %v, want also *EmptySelectionError", err)
	}
}

// Case minimal-job-submission.
func TestCaseMinimalJobSubmission(t *testing.T) {
	t.Parallel()
	p, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"job-submission", "webportal"}})
	if err != nil {
		t.Fatalf("Reduce: %v", err)
	}
	// minimal_closure.declared_closure of services-v1.5.0.yaml plus pylon.
	declared := []string{"cluster-configuration", "internal-storage", "postgresql", "frameworkcontroller",
		"database-controller", "device-plugin", "hivedscheduler", "log-manager", "rest-server",
		"openpai-runtime", "webportal"}
	want := append(slices.Clone(declared), "pylon")
	slices.Sort(want)
	if !slices.Equal(p.Kept, want) {
		t.Fatalf("Kept = %v\nwant %v", p.Kept, want)
	}
	if len(p.Kept) != 12 {
		t.Errorf("len(Kept) = %d, want 12", len(p.Kept))
	}
	for _, absent := range []string{"prometheus", "grafana", "node-exporter", "job-exporter", "watchdog",
		"alert-manager", "marketplace-db", "marketplace-restserver", "marketplace-webportal",
		"dshuttle-master", "dshuttle-worker", "dshuttle-csi"} {
		if slices.Contains(p.Kept, absent) {
			t.Errorf("%s is kept", absent)
		}
		if !slices.Contains(p.Dropped, absent) {
			t.Errorf("%s is not in Dropped", absent)
		}
	}
	g := mustLoad(t)
	for _, k := range p.Kept {
		for _, pre := range g.Services[k].Prerequisites {
			if !slices.Contains(p.Kept, pre) {
				t.Errorf("%s is kept but its prerequisite %s is not", k, pre)
			}
		}
	}
	all := append(slices.Clone(p.Kept), p.Dropped...)
	slices.Sort(all)
	if !slices.Equal(all, g.Names()) {
		t.Errorf("Kept ∪ Dropped = %v, want the 27 services", all)
	}
	if len(p.Dropped) != 15 {
		t.Errorf("len(Dropped) = %d, want 15", len(p.Dropped))
	}

	wantOrder := []string{"cluster-configuration", "device-plugin", "frameworkcontroller", "hivedscheduler",
		"internal-storage", "log-manager", "postgresql", "database-controller", "pylon", "rest-server",
		"openpai-runtime", "webportal"}
	if !slices.Equal(p.StartOrder, wantOrder) {
		t.Errorf("StartOrder = %v\nwant %v", p.StartOrder, wantOrder)
	}
	assertPrerequisitesFirst(t, g, p.StartOrder)
	if wantArgs := append([]string{"service", "start", "-n"}, wantOrder...); !slices.Equal(p.PaictlArgs, wantArgs) {
		t.Errorf("PaictlArgs = %v, want %v", p.PaictlArgs, wantArgs)
	}

	wantImages := map[Role][]string{
		RoleMaster: {
			"frameworkcontroller/frameworkcontroller:v0.9.0",
			"hivedscheduler/hivedscheduler:v0.3.4",
			"openpai/database-controller:v1.5.0",
			"openpai/internal-storage-create:v1.5.0",
			"openpai/kube-scheduler:v1.5.0",
			"openpai/postgresql-init-client:v1.5.0",
			"openpai/postgresql:v1.5.0",
			"openpai/pylon:v1.5.0",
			"openpai/rest-server:v1.5.0",
			"openpai/webportal:v1.5.0",
		},
		RoleWorker: {"openpai/openpai-runtime:v1.5.0"},
		RoleAll: {
			"everpeace/k8s-host-device-plugin:latest",
			"nvidia/k8s-device-plugin:1.0.0-beta4",
			"openpai/log-manager-cleaner:v1.5.0",
			"openpai/log-manager-nginx:v1.5.0",
		},
		RoleStorage: {},
	}
	if !reflect.DeepEqual(p.Images, wantImages) {
		t.Errorf("Images = %v\nwant %v", p.Images, wantImages)
	}
}

func TestReduceJobImagesCountForWorkers(t *testing.T) {
	t.Parallel()
	// openpai-runtime is not a prerequisite of rest-server, but rest-server
	// launches job pods with the runtime image.
	p, err := Reduce(Selection{Version: "v1.5.0", Keep: []string{"rest-server"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Kept, "openpai-runtime") {
		t.Fatalf("Kept = %v: openpai-runtime is not a declared prerequisite of rest-server", p.Kept)
	}
	if want := []string{"openpai/openpai-runtime:v1.5.0"}; !slices.Equal(p.Images[RoleWorker], want) {
		t.Errorf("Images[worker] = %v, want %v", p.Images[RoleWorker], want)
	}
}

func TestReduceFullImages(t *testing.T) {
	t.Parallel()
	p, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"dashboard"}})
	if err != nil {
		t.Fatal(err)
	}
	// k8s-dashboard declares no prerequisite at all in v1.5.0.
	if want := []string{"k8s-dashboard"}; !slices.Equal(p.Kept, want) {
		t.Errorf("Kept = %v, want %v", p.Kept, want)
	}
	want := map[Role][]string{
		RoleMaster: {
			"busybox:1.31.1",
			"dshuttle.azurecr.io/dshuttle/dshuttle:25037dc",
			"frameworkcontroller/frameworkcontroller:v0.9.0",
			"hivedscheduler/hivedscheduler:v0.3.4",
			"openpai/alert-handler:v1.5.0",
			"openpai/database-controller:v1.5.0",
			"openpai/fluentd:v1.5.0",
			"openpai/grafana:v1.5.0",
			"openpai/internal-storage-create:v1.5.0",
			"openpai/kube-scheduler:v1.5.0",
			"openpai/kubernetes-dashboard-amd64:v1.5.0",
			"openpai/marketplace-db:v1.5.0",
			"openpai/marketplace-restserver:v1.5.0",
			"openpai/marketplace-webportal:v1.5.0",
			"openpai/postgresql-init-client:v1.5.0",
			"openpai/postgresql:v1.5.0",
			"openpai/prometheus:v1.5.0",
			"openpai/pylon:v1.5.0",
			"openpai/rest-server:v1.5.0",
			"openpai/watchdog:v1.5.0",
			"openpai/webportal:v1.5.0",
			"prom/alertmanager:v0.15.1",
		},
		RoleWorker: {
			"dshuttle.azurecr.io/dshuttle/dshuttle-csi:25037dc",
			"dshuttle.azurecr.io/dshuttle/dshuttle:25037dc",
			"openpai/openpai-runtime:v1.5.0",
			"quay.io/k8scsi/csi-node-driver-registrar:v1.0.2",
		},
		RoleAll: {
			"everpeace/k8s-host-device-plugin:latest",
			"nvidia/k8s-device-plugin:1.0.0-beta4",
			"openpai/job-exporter:v1.5.0",
			"openpai/log-manager-cleaner:v1.5.0",
			"openpai/log-manager-nginx:v1.5.0",
			"openpai/node-exporter:v1.5.0",
		},
		RoleStorage: {"openpai/storage-manager:v1.5.0"},
	}
	if !reflect.DeepEqual(p.FullImages, want) {
		t.Errorf("FullImages = %v\nwant %v", p.FullImages, want)
	}
}

func TestRegistryPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		reg  Registry
		want string
	}{
		{"docker hub", Registry{Domain: "docker.io", Namespace: "openpai"}, "openpai/"},
		{"private with port", Registry{Domain: "registry.local:5000", Namespace: "openpai"}, "registry.local:5000/openpai/"},
		{"private nested namespace", Registry{Domain: "harbor.example.com", Namespace: "ml/pai"}, "harbor.example.com/ml/pai/"},
		{"index.docker.io is not special", Registry{Domain: "index.docker.io", Namespace: "openpai"}, "index.docker.io/openpai/"},
		{"public is not special for the prefix", Registry{Domain: "public", Namespace: "openpai"}, "public/openpai/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.reg.Prefix(); got != tc.want {
				t.Errorf("Prefix() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReduceAppliesRegistry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		reg    Registry
		master []string
	}{
		{"defaults", Registry{}, []string{
			"frameworkcontroller/frameworkcontroller:v0.9.0", "hivedscheduler/hivedscheduler:v0.3.4",
			"openpai/kube-scheduler:v1.5.0",
		}},
		{"private registry", Registry{Domain: "registry.local:5000", Namespace: "pai", Tag: "v1.5.0-offline"}, []string{
			// Third-party images are hard-coded in the templates: never prefixed.
			"frameworkcontroller/frameworkcontroller:v0.9.0", "hivedscheduler/hivedscheduler:v0.3.4",
			"registry.local:5000/pai/kube-scheduler:v1.5.0-offline",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Reduce(Selection{Version: "v1.5.0", Keep: []string{"hivedscheduler"}, Registry: tc.reg})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Images[RoleMaster], tc.master) {
				t.Errorf("Images[master] = %v, want %v", p.Images[RoleMaster], tc.master)
			}
		})
	}
}

func TestReduceRejectsBadRegistry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reg   Registry
		field string
	}{
		{Registry{Domain: "https://registry.local"}, "domain"},
		{Registry{Domain: "registry.local/path"}, "domain"},
		{Registry{Domain: "-mirror-"}, "domain"},
		{Registry{Domain: "user@registry.local"}, "domain"},
		{Registry{Namespace: "OpenPAI"}, "namespace"},
		{Registry{Namespace: "pai/"}, "namespace"},
		{Registry{Tag: "v1.5.0 final"}, "tag"},
		{Registry{Tag: ".hidden"}, "tag"},
		{Registry{Tag: "v1.5.0@sha256"}, "tag"},
	}
	for _, tc := range tests {
		t.Run(tc.field+" "+tc.reg.Domain+tc.reg.Namespace+tc.reg.Tag, func(t *testing.T) {
			_, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"webportal"}, Registry: tc.reg})
			var re *RegistryError
			if !errors.As(err, &re) {
				t.Fatalf("error = %v, want *RegistryError", err)
			}
			if re.Field != tc.field {
				t.Errorf("Field = %q, want %q", re.Field, tc.field)
			}
		})
	}
}

func TestReduceErrors(t *testing.T) {
	t.Parallel()
	type want struct {
		field, kind, name, suggestion string
		index                         int
		reason                        bool
	}
	tests := []struct {
		name string
		sel  Selection
		want []want // UnknownErrors, in order
	}{
		{"feature typo", Selection{Features: []string{"monitorng"}},
			[]want{{field: "features", kind: "feature", name: "monitorng", suggestion: "monitoring"}}},
		{"service given as a feature", Selection{Features: []string{"webportal", "prometheus"}},
			[]want{{field: "features", kind: "feature", name: "prometheus", index: 1, reason: true}}},
		{"feature given as a service", Selection{Keep: []string{"monitoring"}},
			[]want{{field: "keep", kind: "service", name: "monitoring", reason: true}}},
		{"yarn-only service", Selection{Keep: []string{"zookeeper"}},
			[]want{{field: "keep", kind: "service", name: "zookeeper", reason: true}}},
		{"upper case", Selection{Keep: []string{"Pylon"}},
			[]want{{field: "keep", kind: "service", name: "Pylon", suggestion: "pylon"}}},
		{"nothing close", Selection{Keep: []string{"kubeflow"}},
			[]want{{field: "keep", kind: "service", name: "kubeflow"}}},
		{"unknown drop", Selection{Keep: []string{"pylon"}, Drop: []string{"grafana", "grafna"}},
			[]want{{field: "drop", kind: "service", name: "grafna", index: 1, suggestion: "grafana"}}},
		{"each field reported, repeats once", Selection{
			Features: []string{"job-submision", "job-submision"},
			Keep:     []string{"rest-sever"},
			Drop:     []string{"postgres"},
		}, []want{
			{field: "features", kind: "feature", name: "job-submision", suggestion: "job-submission"},
			{field: "keep", kind: "service", name: "rest-sever", suggestion: "rest-server"},
			{field: "drop", kind: "service", name: "postgres", suggestion: "postgresql"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.sel.Version = "v1.5.0"
			_, err := Reduce(tc.sel)
			if err == nil {
				t.Fatal("Reduce succeeded, want an error")
			}
			var got []want
			for _, e := range errorsOf(err) {
				var ue *UnknownError
				if !errors.As(e, &ue) {
					t.Errorf("unexpected error %T: %v", e, e)
					continue
				}
				got = append(got, want{ue.Field, ue.Kind, ue.Name, ue.Suggestion, ue.Index, ue.Reason != ""})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors = %+v\nwant %+v\n(%v)", got, tc.want, err)
			}
		})
	}
}

func TestReduceEmptySelection(t *testing.T) {
	t.Parallel()
	for _, sel := range []Selection{
		{Version: "v1.5.0"},
		{Version: "v1.5.0", Drop: []string{"grafana"}},
	} {
		_, err := Reduce(sel)
		var es *EmptySelectionError
		if !errors.As(err, &es) {
			t.Fatalf("Reduce(%+v) error = %v, want *EmptySelectionError", sel, err)
		}
		if !slices.Equal(es.Features, Features()) {
			t.Errorf("Features = %v, want %v", es.Features, Features())
		}
	}
}

func TestReduceDropChains(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sel     Selection
		drop    string
		chain   []string
		feature string
	}{
		{"via two services", Selection{Keep: []string{"webportal"}, Drop: []string{"postgresql"}},
			"postgresql", []string{"webportal", "rest-server", "postgresql"}, ""},
		{"transitive storage", Selection{Keep: []string{"database-controller"}, Drop: []string{"internal-storage"}},
			"internal-storage", []string{"database-controller", "postgresql", "internal-storage"}, ""},
		{"tie broken by root name", Selection{Keep: []string{"webportal", "storage-manager"}, Drop: []string{"postgresql"}},
			"postgresql", []string{"storage-manager", "rest-server", "postgresql"}, ""},
		{"feature root itself", Selection{Features: []string{"job-submission"}, Drop: []string{"device-plugin"}},
			"device-plugin", []string{"device-plugin"}, "job-submission"},
		{"implicit pylon of webportal", Selection{Features: []string{"webportal"}, Drop: []string{"pylon"}},
			"pylon", []string{"pylon"}, "webportal"},
		{"through a feature root", Selection{Features: []string{"monitoring"}, Drop: []string{"cluster-configuration"}},
			"cluster-configuration", []string{"grafana", "cluster-configuration"}, "monitoring"},
		{"keep wins over feature", Selection{Features: []string{"webportal"}, Keep: []string{"pylon"}, Drop: []string{"pylon"}},
			"pylon", []string{"pylon"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.sel.Version = "v1.5.0"
			_, err := Reduce(tc.sel)
			var re *RequiredError
			if !errors.As(err, &re) {
				t.Fatalf("error = %v, want *RequiredError", err)
			}
			if re.Name != tc.drop || !slices.Equal(re.Chain, tc.chain) || re.RequiredBy != tc.chain[0] || re.Feature != tc.feature {
				t.Errorf("error = %+v, want Name %s Chain %v Feature %q", *re, tc.drop, tc.chain, tc.feature)
			}
		})
	}
}

func TestReduceReportsAllProblems(t *testing.T) {
	t.Parallel()
	_, err := Reduce(Selection{
		Version:  "v1.5.0",
		Features: []string{"webportal", "monitorng"},
		Keep:     []string{"rest-sever"},
		Drop:     []string{"pylon", "rest-server", "grafana"},
		Registry: Registry{Domain: "http://mirror"},
	})
	var unknown, required, registry int
	for _, e := range errorsOf(err) {
		var ue *UnknownError
		var re *RequiredError
		var ge *RegistryError
		switch {
		case errors.As(e, &ue):
			unknown++
		case errors.As(e, &re):
			required++
		case errors.As(e, &ge):
			registry++
		default:
			t.Errorf("unexpected %T: %v", e, e)
		}
	}
	// webportal keeps pylon and rest-server; grafana is not needed: no error.
	if unknown != 2 || required != 2 || registry != 1 {
		t.Errorf("got %d unknown, %d required, %d registry errors, want 2, 2, 1:\n%v", unknown, required, registry, err)
	}
}

func TestReduceAcceptsHarmlessInput(t *testing.T) {
	t.Parallel()
	base, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"webportal"}})
	if err != nil {
		t.Fatal(err)
	}
	// Duplicates, keeping what a feature keeps anyway, and dropping what is
	// not needed change nothing.
	p, err := Reduce(Selection{
		Version:  "v1.5.0",
		Features: []string{"webportal", "webportal"},
		Keep:     []string{"rest-server", "rest-server", "cluster-configuration"},
		Drop:     []string{"grafana", "marketplace-db", "grafana"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Only the reasons change: keep now names rest-server.
	if got := p.KeptBy["rest-server"].String(); got != "keep: rest-server" {
		t.Errorf("KeptBy[rest-server] = %q, want %q", got, "keep: rest-server")
	}
	p.KeptBy, base.KeptBy = nil, nil
	if !reflect.DeepEqual(p, base) {
		t.Errorf("plan = %+v\nwant %+v", p, base)
	}
}

func TestStartOrderRespectsPrerequisites(t *testing.T) {
	t.Parallel()
	g := mustLoad(t)
	sels := [][]string{{"job-submission", "webportal", "monitoring", "alerting", "job-history",
		"marketplace", "dshuttle", "storage-manager", "dashboard", "log-viewing"}}
	for _, f := range Features() {
		sels = append(sels, []string{f})
	}
	for _, features := range sels {
		t.Run(strings.Join(features, "+"), func(t *testing.T) {
			p, err := Reduce(Selection{Version: "v1.5.0", Features: features})
			if err != nil {
				t.Fatal(err)
			}
			sorted := slices.Clone(p.StartOrder)
			slices.Sort(sorted)
			if !slices.Equal(sorted, p.Kept) {
				t.Errorf("StartOrder %v is not a permutation of Kept %v", p.StartOrder, p.Kept)
			}
			assertPrerequisitesFirst(t, g, p.StartOrder)
		})
	}
}

func TestReduceIsDeterministic(t *testing.T) {
	t.Parallel()
	sel := Selection{
		Version:  "v1.5.0",
		Features: []string{"job-submission", "webportal", "alerting", "dshuttle"},
		Keep:     []string{"k8s-dashboard", "fluentd", "storage-manager"},
		Drop:     []string{"grafana", "marketplace-db", "watchdog"},
		Registry: Registry{Domain: "registry.local:5000", Namespace: "pai"},
	}
	want, err := Reduce(sel)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := want.Bytes()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		s := sel
		s.Features = slices.Clone(sel.Features)
		s.Keep = slices.Clone(sel.Keep)
		s.Drop = slices.Clone(sel.Drop)
		for _, l := range [][]string{s.Features, s.Keep, s.Drop} {
			rng.Shuffle(len(l), func(a, b int) { l[a], l[b] = l[b], l[a] })
		}
		got, err := Reduce(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffle %d (%v %v %v): plan differs\n got %+v\nwant %+v", i, s.Features, s.Keep, s.Drop, got, want)
		}
		if !reflect.DeepEqual(got.Bytes(), wantBytes) {
			t.Fatalf("shuffle %d: Bytes differ", i)
		}
	}

	// Errors come back in the same order too.
	bad := Selection{Version: "v1.5.0", Features: []string{"webportal", "job-submission"},
		Drop: []string{"postgresql", "pylon", "rest-server", "frameworkcontroller"}}
	_, wantErr := Reduce(bad)
	for range 20 {
		s := bad
		s.Drop = slices.Clone(bad.Drop)
		rng.Shuffle(len(s.Drop), func(a, b int) { s.Drop[a], s.Drop[b] = s.Drop[b], s.Drop[a] })
		s.Features = slices.Clone(bad.Features)
		slices.Reverse(s.Features)
		_, err := Reduce(s)
		// Index follows the input order; the chains must not.
		chains := func(err error) map[string][]string {
			m := map[string][]string{}
			for _, e := range errorsOf(err) {
				var re *RequiredError
				if errors.As(e, &re) {
					m[re.Name] = re.Chain
				}
			}
			return m
		}
		if !reflect.DeepEqual(chains(err), chains(wantErr)) {
			t.Fatalf("chains differ under shuffle:\n%v\nwant\n%v", err, wantErr)
		}
	}
}

// TestReduceKeptBy checks the reason given for each kept service: the
// feature (or keep) and the shortest prerequisite chain, against the
// v1.5.0 graph (rest-server declares postgresql, postgresql declares
// internal-storage; job-submission's roots include rest-server).
func TestReduceKeptBy(t *testing.T) {
	t.Parallel()
	p, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"webportal", "job-submission"}, Keep: []string{"log-manager"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cluster-configuration": "feature job-submission: device-plugin -> cluster-configuration",
		"database-controller":   "feature job-submission: rest-server -> database-controller",
		"device-plugin":         "feature job-submission: device-plugin",
		"frameworkcontroller":   "feature job-submission: hivedscheduler -> frameworkcontroller",
		"hivedscheduler":        "feature job-submission: hivedscheduler",
		"internal-storage":      "feature job-submission: rest-server -> postgresql -> internal-storage",
		"log-manager":           "keep: log-manager",
		"openpai-runtime":       "feature job-submission: openpai-runtime",
		"postgresql":            "feature job-submission: rest-server -> postgresql",
		"pylon":                 "feature webportal: pylon",
		"rest-server":           "feature job-submission: rest-server",
		"webportal":             "feature webportal: webportal",
	}
	if len(p.KeptBy) != len(p.Kept) {
		t.Errorf("KeptBy has %d services, Kept %d", len(p.KeptBy), len(p.Kept))
	}
	for _, k := range p.Kept {
		if got := p.KeptBy[k].String(); got != want[k] {
			t.Errorf("KeptBy[%s] = %q, want %q", k, got, want[k])
		}
	}
}
