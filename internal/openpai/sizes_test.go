package openpai

import (
	"reflect"
	"testing"
)

func TestParseDockerSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
	}{
		{"742kB", 742_000},
		{"1.22MB", 1_220_000},
		{"9.54MB", 9_540_000},
		{"109MB", 109_000_000},
		{"1GB", 1_000_000_000},
		{"1.06GB", 1_060_000_000},
		{"3.02GB", 3_020_000_000},
		{"512B", 512},
	}
	for _, tc := range tests {
		got, err := parseDockerSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseDockerSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "12", "1.5KB", "1.0000000001kB", "x MB", "1.-2MB"} {
		if n, err := parseDockerSize(bad); err == nil {
			t.Errorf("parseDockerSize(%q) = %d, want an error", bad, n)
		}
	}
}

func TestObservedSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		image string
		want  int64
		ok    bool
	}{
		{"openpai/rest-server", 1_080_000_000, true},
		{"openpai/rest-server:v1.5.0", 1_080_000_000, true},
		{"docker.io/openpai/rest-server:v1.5.0", 1_080_000_000, true},
		{"openpai/webportal@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1_760_000_000, true},
		{"openpai/openpai-runtime", 333_000_000, true},
		{"openpai/dev-box", 3_020_000_000, true},
		{"openpai/marketplace-restserver", 1_000_000_000, true},
		{"frameworkcontroller/frameworkcontroller:v0.9.0", 53_100_000, true},
		{"busybox:1.31.1", 1_220_000, true},
		{"docker.io/library/busybox:1.31.1", 1_220_000, true},
		{"gcr.io/google-containers/pause:3.1", 742_000, true},
		{"nvcr.io/nvidia/k8s-device-plugin", 190_000_000, true},
		// Two different nginx and nvidia/cuda images were listed.
		{"nginx", 0, false},
		{"nvidia/cuda", 0, false},
		// Never observed.
		{"openpai/alert-handler", 0, false},
		{"openpai/storage-manager", 0, false},
		{"dshuttle.azurecr.io/dshuttle/dshuttle:25037dc", 0, false},
		// The name includes the namespace: a bare base name is not a match.
		{"rest-server", 0, false},
	}
	for _, tc := range tests {
		got, ok := ObservedSize(tc.image)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ObservedSize(%q) = %d, %v; want %d, %v", tc.image, got, ok, tc.want, tc.ok)
		}
	}
}

// The minimal job-submission selection, summed by hand from the
// listing in issue #5381.
//
// master, kept (10 images): internal-storage-create 124MB, postgresql 348MB,
// postgresql-init-client 178MB, frameworkcontroller 53.1MB,
// database-controller 1.06GB, hivedscheduler 55.6MB, kube-scheduler 81.6MB,
// rest-server 1.08GB, webportal 1.76GB, pylon 709MB = 5449.3MB.
// master, dropped: fluentd 279 + prometheus 112 + busybox 1.22 + grafana 285
// + alertmanager 36.1 + watchdog 48.6 + kubernetes-dashboard-amd64 122
// + marketplace-db 348 + marketplace-restserver 1000 + marketplace-webportal
// 1190 = 3421.92MB; alert-handler and dshuttle were never observed.
// worker: openpai-runtime 333MB kept; dshuttle, dshuttle-csi and
// csi-node-driver-registrar unobserved.
// all: host-device-plugin 63.2 + nvidia plugin 64.1 + log-manager-cleaner
// 9.54 + log-manager-nginx 322 = 458.84MB kept; node-exporter 22.9 +
// job-exporter 1070 = 1092.9MB dropped.
var minimalBytes = []RoleBytes{
	{Role: RoleMaster, Full: 8_871_220_000, Reduced: 5_449_300_000, Saved: 3_421_920_000, UnknownFull: 2},
	{Role: RoleWorker, Full: 333_000_000, Reduced: 333_000_000, Saved: 0, UnknownFull: 3},
	{Role: RoleAll, Full: 1_551_740_000, Reduced: 458_840_000, Saved: 1_092_900_000},
}

func TestPlanBytesMinimal(t *testing.T) {
	t.Parallel()
	for _, reg := range []Registry{
		{},
		// A private registry and tag must not lose the sizes of OpenPAI images.
		{Domain: "registry.local:5000", Namespace: "mirror/pai", Tag: "v1.5.0-site"},
	} {
		t.Run(reg.Prefix(), func(t *testing.T) {
			p, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"job-submission", "webportal"}, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Bytes(); !reflect.DeepEqual(got, minimalBytes) {
				t.Errorf("Bytes() = %+v\nwant %+v", got, minimalBytes)
			}
		})
	}
}

func TestPlanBytesUnknownReduced(t *testing.T) {
	t.Parallel()
	p, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"dshuttle", "alerting"}})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Bytes()
	// master: alertmanager 36.1MB + prometheus 112MB + busybox 1.22MB known;
	// alert-handler and dshuttle unknown. worker: dshuttle images unknown.
	if got[0].Reduced != 149_320_000 || got[0].UnknownReduced != 2 {
		t.Errorf("master = %+v, want Reduced 149320000 and 2 unknown", got[0])
	}
	if got[1].Reduced != 0 || got[1].UnknownReduced != 3 {
		t.Errorf("worker = %+v, want Reduced 0 and 3 unknown", got[1])
	}
}

func TestPlanBytesUnsupportedVersion(t *testing.T) {
	t.Parallel()
	if got := (&Reduction{Version: "v9"}).Bytes(); got != nil {
		t.Errorf("Bytes() = %v, want nil", got)
	}
}
