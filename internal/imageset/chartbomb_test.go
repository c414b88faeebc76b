package imageset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the child a chart is rendered in
// (ChartOptions.Child), as the stowage binary is.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == ChartChildArg {
		os.Exit(ServeChartChild(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// bombChart writes a chart with a harmless Deployment and the template
// bomb.yaml (and values), returning its directory.
func bombChart(t *testing.T, bomb, values string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bomb")
	files := map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"values.yaml":               values,
		"templates/_helpers.tpl":    `{{- define "bomb.name" -}}bomb{{- end -}}`,
		"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"bomb.name\" . }}\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example/app:1.0\n",
		"templates/bomb.yaml":       bomb,
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestChartTemplateBombs: a chart's templates that double a string (with
// printf or with repeat), recurse through tpl, range over until
// 2000000000, or loop 10^10 times each end in an error naming the
// chart, the template bomb/templates/bomb.yaml and the limit with its
// flag, within twice the time limit (the render, then the one that finds
// the template), the child's memory bounded by the limit (the largest
// child's peak RSS, where the platform reports it). Before, each crashed
// the whole process (exit 2; one took 24 GB) or rendered for minutes.
func TestChartTemplateBombs(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The memory bombs end at the memory limit long before the time
	// limit, which is generous for a loaded CI machine; the loop over
	// 10^10 iterations that takes no memory ends at its own short limit.
	lim := ChartLimits{Time: 30 * time.Second, Memory: 64 << 20}
	cases := []struct {
		name, bomb, values string
		want               string
		time               time.Duration
	}{
		{name: "10^10 iterations", bomb: `{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}`, want: "more than 3s, the limit of a chart (raise it with --chart-timeout)", time: 3 * time.Second},
		{name: "printf doubling", bomb: `{{- $s := "0123456789abcdef" }}{{- range until 40 }}{{- $s = printf "%s%s" $s $s }}{{- end }}x: {{ $s }}`, want: "more than 67108864 bytes of memory, the limit of a chart (raise it with --max-chart-memory)"},
		{name: "repeat doubling", bomb: `{{- $s := "0123456789abcdef" }}{{- range until 40 }}{{- $s = repeat 2 $s }}{{- end }}x: {{ $s }}`, want: "bytes of memory"},
		{name: "until 2000000000", bomb: `{{- range until 2000000000 }}{{- end }}`, want: "bytes of memory"},
		{name: "tpl recursion", bomb: `{{ tpl .Values.x . }}`, values: "x: '{{ tpl .Values.x . }}'\n"},
	}
	t.Run("bombs", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				dir := bombChart(t, tc.bomb, tc.values)
				lim := lim
				if tc.time != 0 {
					lim.Time = tc.time
				}
				start := time.Now()
				_, _, err := FromChart(dir, ChartOptions{Child: exe, Limits: lim})
				took := time.Since(start)
				if err == nil {
					t.Fatal("the bomb rendered")
				}
				msg := err.Error()
				if !strings.Contains(msg, "chart "+dir) || !strings.Contains(msg, "template bomb/templates/bomb.yaml") || !strings.Contains(msg, tc.want) {
					t.Errorf("error %q\nwant the chart, template bomb/templates/bomb.yaml and %q", msg, tc.want)
				}
				if took > 2*lim.Time+5*time.Second {
					t.Errorf("took %v, more than twice the limit %v", took.Round(time.Millisecond), lim.Time)
				}
				t.Logf("%v: %s", took.Round(time.Millisecond), msg)
			})
		}
	})
	if rss, ok := childrenPeakRSS(); ok {
		t.Logf("the largest child's peak RSS: %d MiB", rss>>20)
		if rss > lim.Memory+256<<20 {
			t.Errorf("a child's peak RSS was %d MiB, over the %d MiB limit and the runtime's share", rss>>20, lim.Memory>>20)
		}
	}
}

// TestChartObjectsBounded: a template rendering 300,000 objects is
// refused naming it, the count and --max-chart-objects, in this process
// and in a child, before the objects are parsed; under a lower limit
// given by the operator, a chart of a few objects is refused too.
func TestChartObjectsBounded(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := bombChart(t, "{{- range until 300000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{- end }}\n", "")
	const want = "template bomb/templates/bomb.yaml: the templates render 300001 objects together (this one 300000), more than 10000, the limit of a chart (raise it with --max-chart-objects)"
	for _, child := range []string{"", exe} {
		_, _, err := FromChart(dir, ChartOptions{Child: child, Limits: ChartLimits{Memory: 1 << 30}})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "chart "+dir) {
			t.Errorf("child %q: %v\nwant %q", child, err, want)
		}
	}
	small := bombChart(t, "{{- range until 3 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{- end }}\n", "")
	if _, _, err := FromChart(small, ChartOptions{Limits: ChartLimits{Objects: 3}}); err == nil || !strings.Contains(err.Error(), "4 objects together (this one 3), more than 3") {
		t.Errorf("4 objects under a limit of 3: %v", err)
	}
	if _, _, err := FromChart(small, ChartOptions{Limits: ChartLimits{Objects: 4}}); err != nil {
		t.Errorf("4 objects under a limit of 4: %v", err)
	}
}

// TestChartChildRendersAsInProcess: the GPU-operator-shaped chart gives
// the same image set and source in a child as in this process.
func TestChartChildRendersAsInProcess(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := ChartOptions{ValueFiles: []string{"testdata/kernel-535.yaml"}, Set: []string{"migManager.enabled=true"}}
	want, wsrc, err := FromChart("testdata/gpu-operator", o)
	if err != nil {
		t.Fatal(err)
	}
	o.Child = exe
	got, src, err := FromChart("testdata/gpu-operator", o)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Encode(want, "yaml", wsrc)
	b, _ := Encode(got, "yaml", src)
	if string(a) != string(b) || len(got) < 5 {
		t.Errorf("in a child:\n%s\nin this process:\n%s", b, a)
	}
	// An ordinary template error still names its template.
	dir := bombChart(t, `{{ fail "no such value" }}`, "")
	if _, _, err := FromChart(dir, ChartOptions{Child: exe}); err == nil || !strings.Contains(err.Error(), "bomb/templates/bomb.yaml") || !strings.Contains(err.Error(), "no such value") {
		t.Errorf("a failing template: %v", err)
	}
}
