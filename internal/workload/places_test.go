package workload

import (
	"strings"
	"testing"
)

// TestLooksLikeImages: the tokens the leftover report counts, on strings
// met in platforms' objects; the precision cases (times, ports, URLs,
// label keys, resource names, Go module versions) give none.
func TestLooksLikeImages(t *testing.T) {
	cases := []struct {
		s        string
		imageKey bool
		want     string
	}{
		{"--image=quay.io/org/agent:v0.15.0", false, "quay.io/org/agent:v0.15.0"},
		{"kserve/storage-initializer:v0.15.0", false, "kserve/storage-initializer:v0.15.0"},
		{`{"image": "ghcr.io/org/app:1.2", "other": "docker.io/a/b:c"}`, false, "ghcr.io/org/app:1.2 docker.io/a/b:c"},
		{"images:\n  - kubeflownotebookswg/jupyter-scipy:v1.9.0\n  - kubeflownotebookswg/rstudio:v1.9.0\n", false, "kubeflownotebookswg/jupyter-scipy:v1.9.0 kubeflownotebookswg/rstudio:v1.9.0"},
		{"registry.lab:5000/team/app:v1.", false, "registry.lab:5000/team/app:v1"},
		{"nginx:1.27", true, "nginx:1.27"},
		{"nginx:1.27", false, ""},
		{"uses nginx:1.27 here", true, ""},
		{"ghcr.io/org/app:v1@sha256:" + strings.Repeat("a", 64), false, ""},
		{"ghcr.io/org/app", false, ""},
		{"registry.lab:5000/team/app", false, ""},
		{"https://github.com/kubeflow/manifests:tree", false, ""},
		{"12:30", true, "12:30"}, // the whole value of an image key: counted
		{"12:30 key:value localhost:8080", false, ""},
		{"kubernetes.io/hostname", false, ""},
		{"nvidia.com/gpu", false, ""},
		{"github.com/org/mod@v1.2.3", false, ""},
		{"Bad/Name:x", false, ""},
	}
	for _, tc := range cases {
		got := strings.Join(LooksLikeImages(tc.s, tc.imageKey), " ")
		if got != tc.want {
			t.Errorf("LooksLikeImages(%q, %v) = %q, want %q", tc.s, tc.imageKey, got, tc.want)
		}
	}
}
