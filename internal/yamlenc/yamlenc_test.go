package yamlenc

import (
	"math"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
)

// tricky are strings whose YAML spelling depends on YAML 1.1's rules:
// words, numbers, indicators, white space, line breaks, non-ASCII.
var tricky = []string{
	"", "a", "abc", "y", "Y", "yes", "no", "On", "OFF", "true", "False", "null", "NULL", "~", "Null1", "yesno",
	"0", "1", "12", "-1", "+1", "1.5", ".5", "1e3", "1E+3", "0x1F", "0o17", "0b101", "-0b1", "1_000", "1:20", "190:20:30.15",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", ".inf", "-.Inf", ".nan", "<<", "=", "10%", "16Mi", "1m", "50m",
	"-", "--", "---", "...", "-x", "- x", "?", "?x", ":", "a:", "a:b", "a: b", "#", "a#b", "a #b", "&a", "*a", "!a", "|", ">",
	"'", "\"", "'a'", "a'b", `a"b`, "%a", "@a", "`a", ",", "a,b", "[a]", "{a}", "a]", "a}", "a[", "a{",
	" a", "a ", "a b", "a  b", "\ta", "a\tb", "a\\b", "\x01", "\x7f",
	"é", "日本", "a\u2028b", "a\u0085b", "\ufeff", "\xff",
	"a\n", "a\nb", "a\nb\n", "a\nb\n\n", "\na", " a\nb\n", "a \nb\n", "a\n b\n", "a\n\nb\n", "a\nb ", "a\r\nb\n", "a\n\tb\n",
	"# comment\nline two\n", "--- \n", "---\nx\n",
	"docker.io/library/busybox:1.31.1@sha256:" + strings.Repeat("ab", 32),
	strings.Repeat("x", 100), strings.Repeat("x ", 60), strings.Repeat("word ", 30) + "\n", strings.Repeat("k", 129),
	"app.kubernetes.io/name", "stowage.dev/images-hash", ".dockerconfigjson", "images.list", "pull-app-00010",
}

// cases are documents of the shapes stowage encodes, and edge cases of
// nesting.
func cases() []any {
	var out []any
	for _, s := range tricky {
		out = append(out,
			map[string]any{"k": s},
			map[string]any{s: "v"},
			map[string]any{"l": []any{s, map[string]any{"k": s}}},
			map[string]any{"m": map[string]any{"n": map[string]any{"k": s}}},
			[]any{s},
			s,
		)
	}
	out = append(out,
		map[string]any{},
		[]any{},
		map[string]any{"a": map[string]any{}, "b": []any{}, "c": nil, "d": true, "e": false, "f": int64(-3), "g": 1.5, "h": math.Inf(1), "i": 1e21, "j": int64(1) << 62},
		map[string]any{"a": []any{[]any{"x", "y"}, []any{}, map[string]any{}, []any{[]any{"z"}}, nil, int64(1)}},
		map[string]any{"a2": 1, "a10": 2, "a01": 3, "a1": 4, "B": 5, "b": 6, "_": 7, "-": 8, "0": 9, "00": 10, "é": 11, "e": 12},
		yamlv2.MapSlice{{Key: "z", Value: "1"}, {Key: "a", Value: yamlv2.MapSlice{{Key: "y", Value: []any{yamlv2.MapSlice{{Key: "p", Value: "q"}, {Key: "b", Value: int64(0)}}}}}}},
		yamlv2.MapSlice{{Key: 1, Value: "non-string key"}},
		map[string]any{"t": struct{ A string }{"x"}},
		map[string]any{"s": []string{"typed slice"}},
	)
	return out
}

func TestMarshalMatchesYAMLv2(t *testing.T) {
	for _, v := range cases() {
		want, werr := yamlv2.Marshal(v)
		got, gerr := Marshal(v)
		if (werr != nil) != (gerr != nil) || string(got) != string(want) {
			t.Errorf("Marshal(%#v):\ngot  %q (%v)\nwant %q (%v)", v, got, gerr, want, werr)
		}
	}
}

// TestFastPathTaken checks that the shapes of a rendered DaemonSet do not
// fall back to yaml.v2, which would make the package pointless.
func TestFastPathTaken(t *testing.T) {
	v := map[string]any{
		"apiVersion": "apps/v1",
		"metadata":   map[string]any{"name": "p", "labels": map[string]any{"app.kubernetes.io/name": "stowage"}, "annotations": map[string]any{"stowage.dev/refresh-hours": "2"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"initContainers":               []any{map[string]any{"name": "pull-x", "command": []any{"/stowage/stowage-helper", "pulled", "r@sha256:00"}, "resources": map[string]any{"limits": map[string]any{"cpu": "50m"}}}},
			"automountServiceAccountToken": false, "terminationGracePeriodSeconds": int64(1), "volumes": []any{map[string]any{"emptyDir": map[string]any{}}},
		}}},
		"data": map[string]any{"images.list": "a@sha256:1\nb@sha256:2\n"},
	}
	var e encoder
	if err := e.top(v); err != nil {
		t.Fatalf("fast path refused a DaemonSet-shaped value: %v", err)
	}
	want, _ := yamlv2.Marshal(v)
	if string(e.buf) != string(want) {
		t.Errorf("got\n%s\nwant\n%s", e.buf, want)
	}
}

func FuzzMarshal(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		for _, doc := range []any{
			map[string]any{k: v, "x" + k: []any{v, map[string]any{k: v}}},
			map[string]any{"a": map[string]any{k: map[string]any{"b": v}}},
			[]any{v, []any{k}},
		} {
			want, werr := yamlv2.Marshal(doc)
			got, gerr := Marshal(doc)
			if (werr != nil) != (gerr != nil) || string(got) != string(want) {
				t.Fatalf("Marshal(%#v):\ngot  %q (%v)\nwant %q (%v)", doc, got, gerr, want, werr)
			}
		}
	})
}

func BenchmarkMarshal(b *testing.B) {
	v := map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "p", "namespace": "n", "labels": map[string]any{"app.kubernetes.io/name": "stowage", "app.kubernetes.io/instance": "p"}},
	}
	var inits []any
	for i := range 32 {
		inits = append(inits, map[string]any{
			"name": "pull-app-" + strings.Repeat("x", i%7), "image": "registry.bench.internal:5000/team/app:v1@sha256:" + strings.Repeat("ab", 32),
			"command":         []any{"/stowage/stowage-helper", "pulled", "registry.bench.internal:5000/team/app:v1@sha256:" + strings.Repeat("ab", 32)},
			"resources":       map[string]any{"limits": map[string]any{"cpu": "50m", "memory": "32Mi"}, "requests": map[string]any{"cpu": "1m", "memory": "16Mi"}},
			"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}, "runAsUser": int64(65534)},
		})
	}
	v["spec"] = map[string]any{"template": map[string]any{"spec": map[string]any{"initContainers": inits}}}
	b.Run("yamlenc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml.v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := yamlv2.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
