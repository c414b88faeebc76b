package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/imageset"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// TestImagesFromListVets: the catalogue from-list writes for the
// kubespray-style list, put into a config directory beside a profile whose
// puller lists every key and a lock of stand-in digests (no registry;
// the default helper image too),
// passes stowage vet, in YAML and in CUE; the same run twice writes the
// same bytes.
func TestImagesFromListVets(t *testing.T) {
	t.Parallel()
	list := filepath.Join(repoRoot, "internal", "imageset", "testdata", "kubespray-images.list")
	set, err := imageset.ReadList(list)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	l := &lock.Lock{}
	refs := []string{"ghcr.io/stowage/stowage-helper:v0.1.0"} // the default helper image
	for _, im := range set {
		keys = append(keys, `"`+im.Name+`"`)
		refs = append(refs, im.Reference)
	}
	for _, r := range refs {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(e)
	}
	for _, format := range imageset.Formats {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "images."+format)
			if stdout, stderr, code := runCLI(t, nil, "images", "from-list", list, "-o", format, "--output-file", out); code != 0 || len(stdout) != 0 {
				t.Fatalf("from-list: exit %d, %s %s", code, stdout, stderr)
			}
			stdout, _, code := runCLI(t, nil, "images", "from-list", list, "-o", format, "--output-file", "-")
			if got := readFile(t, out); code != 0 || string(stdout) != string(got) {
				t.Errorf("--output-file - prints other bytes than the file:\n%s\n%s", stdout, got)
			}
			profile := `package stowage

profiles: offline: {
	namespace: "kube-prepull"
	pullers: [{name: "kubespray", namespace: "kube-prepull", images: [` + strings.Join(keys, ", ") + `]}]
}
`
			if err := os.WriteFile(filepath.Join(dir, "profile.cue"), []byte(profile), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, lock.FileName), l.Marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
			if stdout, stderr, code := runCLI(t, nil, "vet", dir); code != 0 {
				t.Fatalf("vet: exit %d\n%s\n%s\n%s", code, stdout, stderr, readFile(t, out))
			}
		})
	}
}

// TestImagesFromListRefuses: a bad reference fails naming file:line,
// exit 1, and writes nothing; an unknown -o is a usage error.
func TestImagesFromListRefuses(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "images.yaml")
	bad := filepath.Join(repoRoot, "internal", "imageset", "testdata", "bad.list")
	_, stderr, code := runCLI(t, nil, "images", "from-list", bad, "--output-file", out)
	if code != 1 || !strings.Contains(stderr, "bad.list:4: image \"registry.k8s.io/Pause:3.9\"") {
		t.Errorf("bad reference: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run wrote %s: %v", out, err)
	}
	if _, stderr, code := runCLI(t, nil, "images", "from-list", bad, "-o", "json"); code != 2 || !strings.Contains(stderr, `-o "json": want yaml or cue`) {
		t.Errorf("-o json: exit %d, %s", code, stderr)
	}
}

// TestImagesFromChart: from-chart prints the golden catalogue of the
// GPU-operator-shaped chart; --values and --set reach the driver tag; a
// chart that does not render fails with exit 1 and the template's message.
func TestImagesFromChart(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(repoRoot, "internal", "imageset", "testdata", "gpu-operator")
	stdout, stderr, code := runCLI(t, nil, "images", "from-chart", chart)
	want := readFile(t, filepath.Join(repoRoot, "internal", "imageset", "testdata", "gpu-operator.yaml"))
	if code != 0 || string(stdout) != string(want) {
		t.Errorf("from-chart: exit %d, %s\n%s", code, stderr, stdout)
	}
	stdout, stderr, code = runCLI(t, nil, "images", "from-chart", chart, "-f", filepath.Join(repoRoot, "internal", "imageset", "testdata", "kernel-535.yaml"), "--set", "toolkit.version=v1.16.0-ubuntu22.04", "-o", "cue")
	if code != 0 || !strings.Contains(string(stdout), `reference: "nvcr.io/nvidia/driver:535.161.08-ubuntu22.04"`) || !strings.Contains(string(stdout), `reference: "nvcr.io/nvidia/k8s/container-toolkit:v1.16.0-ubuntu22.04"`) {
		t.Errorf("--values, --set: exit %d, %s\n%s", code, stderr, stdout)
	}
	_, stderr, code = runCLI(t, nil, "images", "from-chart", filepath.Join(repoRoot, "internal", "imageset", "testdata", "broken-chart"))
	if code != 1 || !strings.Contains(stderr, "image.repository is required") {
		t.Errorf("broken chart: exit %d, %s", code, stderr)
	}
}

// TestImagesFromChartPerNodeLabel: from-chart --per-node-label renders the
// GPU-operator-shaped chart per kernel and --as environments writes the
// golden environments, the driver as byNodeLabel; the file vets beside a
// puller listing every environment and a stand-in lock of every
// reference, and renders one DaemonSet per kernel. A malformed or mixed
// --per-node-label and an unknown --as are usage errors.
func TestImagesFromChartPerNodeLabel(t *testing.T) {
	t.Parallel()
	td := filepath.Join(repoRoot, "internal", "imageset", "testdata")
	chart := filepath.Join(td, "gpu-operator")
	const kernel = "feature.node.kubernetes.io/kernel-version.full"
	args := []string{"images", "from-chart", chart, "--as", "environments",
		"--per-node-label", kernel + "=6.8.0-1015-aws:" + filepath.Join(td, "kernel-6.8.0-1015-aws.yaml"),
		"--per-node-label", kernel + "=5.15.0-91-generic:" + filepath.Join(td, "kernel-5.15.0-91-generic.yaml")}
	stdout, stderr, code := runCLI(t, nil, args...)
	if want := readFile(t, filepath.Join(td, "gpu-operator-by-kernel-environments.yaml")); code != 0 || string(stdout) != string(want) {
		t.Fatalf("from-chart --per-node-label: exit %d, %s\n%s", code, stderr, stdout)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "environments.yaml"), stdout, 0o644); err != nil {
		t.Fatal(err)
	}
	set, _, err := imageset.FromChartByNodeLabel(chart, imageset.ChartOptions{}, kernel, []imageset.NodeValue{
		{Value: "6.8.0-1015-aws", File: filepath.Join(td, "kernel-6.8.0-1015-aws.yaml")},
		{Value: "5.15.0-91-generic", File: filepath.Join(td, "kernel-5.15.0-91-generic.yaml")}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	l := &lock.Lock{}
	refs := []string{"ghcr.io/stowage/stowage-helper:v0.1.0"}
	for _, im := range set {
		keys = append(keys, `"`+im.Name+`"`)
		if im.ByNodeLabel != nil {
			for _, r := range im.ByNodeLabel.References {
				refs = append(refs, r)
			}
			continue
		}
		refs = append(refs, im.Reference)
	}
	for _, r := range refs {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(e)
	}
	writeTree(t, dir, map[string]string{
		"profile.cue": `profiles: gpu: pullers: [{name: "gpu", namespace: "gpu-operator", environments: [` + strings.Join(keys, ", ") + `]}]` + "\n",
		lock.FileName: string(l.Marshal()),
	})
	if stdout, stderr, code := runCLI(t, nil, "vet", dir); code != 0 {
		t.Fatalf("vet: exit %d\n%s\n%s", code, stdout, stderr)
	}
	out := t.TempDir()
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out); code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	for _, f := range []string{"daemonset-gpu-operator-gpu-5-15-0-91-generic-212095.yaml", "daemonset-gpu-operator-gpu-6-8-0-1015-aws-fd386b.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("render: %v", err)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--per-node-label", kernel + "=5.15.0-91-generic"}, "want LABEL=VALUE:FILE"},
		{[]string{"--per-node-label", kernel + "=a:x.yaml", "--per-node-label", "nvidia.com/gpu.product=b:y.yaml"}, "give one label"},
		{[]string{"--per-node-label", kernel + "=a:-"}, "only --values reads standard input"},
		{[]string{"--per-node-label", kernel + "=a:x.yaml"}, "one value of " + kernel + " given"},
		{[]string{"--per-node-label", kernel + "=a:x.yaml", "--per-node-label", kernel + "=a:y.yaml"}, `value "a" is given twice`},
		{[]string{"--as", "catalogue"}, `--as "catalogue": want images or environments`},
	} {
		if _, stderr, code := runCLI(t, nil, append([]string{"images", "from-chart", chart}, c.args...)...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestImagesFromChartHelmWarnings: Helm's SDK warns through the standard
// log package; the real binary shows each warning as one escaped line
// under "stowage: helm: ", so a value carrying a terminal escape (here an
// OSC window title, with a newline forging an error line) reaches the
// terminal as text.
func TestImagesFromChartHelmWarnings(t *testing.T) {
	t.Parallel()
	// The chart's own values carry the escape: a copy of the test chart.
	src := filepath.Join(repoRoot, "internal", "imageset", "testdata", "gpu-operator")
	chart := t.TempDir()
	if err := os.CopyFS(chart, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(chart, "values.yaml")
	data := readFile(t, values)
	hostile := strings.Replace(string(data), "driver:\n  enabled: true\n  repository: nvcr.io/nvidia\n", "driver:\n  enabled: true\n  repository: \"\\e]0;owned\\a\\nError: forged\"\n", 1)
	if hostile == string(data) {
		t.Fatal("the test chart's driver values changed; update this test")
	}
	if err := os.WriteFile(values, []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(stowageBinary(t), "images", "from-chart", chart, "--set", "driver.repository.x=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("from-chart: %v\n%s", err, stderr.String())
	}
	want := `stowage: helm: warning: destination for gpu-operator-mini.driver.repository is a table. Ignoring non-table value (\x1b]0;owned\x07\nError: forged)` + "\n"
	// Once: the values the templates saw are the ones images are looked
	// for in, coalesced (and warned about) once, as helm template does.
	if n := strings.Count(stderr.String(), want); n != 1 {
		t.Errorf("stderr:\n%q\nwant the line once, got it %d times:\n%q", stderr.String(), n, want)
	}
	if strings.ContainsAny(stderr.String(), "\x1b\a") || strings.Contains(stderr.String(), "\nError: forged") {
		t.Errorf("raw control characters or a forged line on stderr: %q", stderr.String())
	}
}

// TestImagesOutputFileIsNoInput: --output-file naming the list, a values
// file or a file inside the chart directory (Chart.yaml) is a usage error
// before anything is written; the input is left as it was.
func TestImagesOutputFileIsNoInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	chart := filepath.Join(dir, "chart")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(repoRoot, "internal", "imageset", "testdata", "gpu-operator"))); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "images.list")
	if err := os.WriteFile(list, []byte("busybox:1.36\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vals := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(vals, []byte("driver:\n  version: \"535.161.08-ubuntu22.04\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chartYAML := readFile(t, filepath.Join(chart, "Chart.yaml"))
	for _, c := range []struct {
		args  []string
		input string
	}{
		{[]string{"images", "from-list", list, "--output-file", list}, list},
		{[]string{"images", "from-chart", chart, "--output-file", filepath.Join(chart, "Chart.yaml")}, chart},
		{[]string{"images", "from-chart", chart, "-f", vals, "--output-file", vals}, vals},
	} {
		_, stderr, code := runCLI(t, nil, c.args...)
		if code != 2 || !strings.Contains(stderr, "is an input of this command ("+c.input+"): write the catalogue elsewhere") {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
	if got := readFile(t, filepath.Join(chart, "Chart.yaml")); string(got) != string(chartYAML) {
		t.Error("Chart.yaml was changed")
	}
	if got := readFile(t, list); string(got) != "busybox:1.36\n" {
		t.Errorf("the list was changed: %q", got)
	}
}
