package schema

import (
	"strings"
	"testing"
)

// TestRenderableValues covers values the schema once accepted but
// Kubernetes refuses in the rendered objects (found by render's
// FuzzRender): a profile name that is no label value, a negative quantity,
// a request above the limit the config also sets.
func TestRenderableValues(t *testing.T) {
	const env = "environments: {app: {image: \"busybox:1\"}}\n"
	tests := []struct {
		name, yaml string
		line       int
		path, says string
	}{
		{"profile name", env + "profiles:\n  \"My Profile\":\n    pullers: [{name: pre, namespace: ns, environments: [app]}]\n",
			3, `profiles."My Profile"`, "must be a valid label value"},
		{"negative request", env + "profiles:\n  p:\n    pullers:\n    - name: pre\n      namespace: ns\n      environments: [app]\n      resources: {requests: {cpu: \"-1\"}}\n",
			8, "profiles.p.pullers[0].resources.requests.cpu", "negative"},
		{"request above limit in the puller", env + "profiles:\n  p:\n    pullers:\n    - name: pre\n      namespace: ns\n      environments: [app]\n      resources: {requests: {memory: 1Gi}, limits: {memory: 64Mi}}\n",
			8, "profiles.p.pullers[0].resources.requests.memory", "the memory request 1Gi is above the memory limit 64Mi"},
		{"request above the profile's limit", env + "profiles:\n  p:\n    resources: {limits: {cpu: 10m}}\n    pullers:\n    - name: pre\n      namespace: ns\n      environments: [app]\n      resources: {requests: {cpu: 20m}}\n",
			9, "profiles.p.pullers[0].resources.requests.cpu", "the cpu request 20m is above the cpu limit 10m"},
		{"request above limit in the profile", env + "profiles:\n  p:\n    resources: {requests: {cpu: 2}, limits: {cpu: 1}}\n    pullers: [{name: pre, namespace: ns, environments: [app]}]\n",
			4, "profiles.p.resources.requests.cpu", "the cpu request 2 is above the cpu limit 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadFiles("config", []File{{Name: "config/c.yaml", Data: []byte(tc.yaml)}}, Options{})
			errs, ok := err.(Errors)
			if !ok || len(errs) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			e := errs[0]
			if e.File != "config/c.yaml" || e.Line != tc.line || e.Path != tc.path || !strings.Contains(e.Msg, tc.says) {
				t.Errorf("got %v\nwant config/c.yaml:%d: %s: …%s…", e, tc.line, tc.path, tc.says)
			}
		})
	}
}
