package imageset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartChildGetsEveryOption: a render in the child process sees the
// same options as one in this process: --kube-version (a version that
// does not parse fails naming it), and values from standard input
// (StdinValues for the file "-") reach the templates.
func TestChartChildGetsEveryOption(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := FromChart("testdata/operator-chart", ChartOptions{Child: exe, KubeVersion: "one"}); err == nil || !strings.Contains(err.Error(), `--kube-version "one"`) {
		t.Errorf("--kube-version one in the child: %v", err)
	}
	values, err := os.ReadFile(filepath.Join("testdata", "kernel-535.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, child := range []string{"", exe} {
		set, _, err := FromChart("testdata/gpu-operator", ChartOptions{Child: child, ValueFiles: []string{Stdin}, StdinValues: values})
		if err != nil {
			t.Fatalf("child %q: %v", child, err)
		}
		found := false
		for _, im := range set {
			found = found || strings.Contains(im.Reference, "535.161.08")
		}
		if !found {
			t.Errorf("child %q: the values from stdin did not reach the driver tag: %v", child, set)
		}
	}
}
