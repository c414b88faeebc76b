package e2e

import (
	"strings"
	"testing"
)

// TestSubset checks the read-back comparison itself, without a server:
// fields the server adds pass, anything stowage set that differs or is
// missing is reported with its path.
func TestSubset(t *testing.T) {
	rendered := map[string]any{
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"k": "v"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i@sha256:1"}}, "n": 1.0},
	}
	for _, tc := range []struct {
		name string
		live map[string]any
		want string // a substring of the joined differences; "" for none
	}{
		{"server adds fields", map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"k": "v"}, "resourceVersion": "7"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i@sha256:1", "terminationMessagePath": "/dev/termination-log"}}, "n": 1.0},
			"status":   map[string]any{},
		}, ""},
		{"changed value", map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"k": "w"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i@sha256:1"}}, "n": 1.0},
		}, ".metadata.labels.k: rendered v, read back w"},
		{"missing field", map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"k": "v"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c"}}, "n": 1.0},
		}, ".spec.containers[0].image: rendered, missing on the server"},
		{"extra list element", map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"k": "v"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i@sha256:1"}, map[string]any{}}, "n": 1.0},
		}, ".spec.containers: rendered 1 elements"},
		{"number", map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"k": "v"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i@sha256:1"}}, "n": 2.0},
		}, ".spec.n: rendered 1, read back 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(subset("", rendered, tc.live), "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("differences:\n%s\nwant one containing %q", got, tc.want)
			}
		})
	}
}
