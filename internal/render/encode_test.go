package render

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/testing/configgen"
	"github.com/stowage/stowage/schema"
)

// TestMarshalIsYAMLv2 checks that Marshal, which builds the unstructured map
// through a JSON round trip, gives the bytes of yaml.v2 over apimachinery's
// ToUnstructured for every object the examples render.
func TestMarshalIsYAMLv2(t *testing.T) {
	for _, s := range exampleSeeds(t) {
		var files []schema.File
		if len(s.cue) > 0 {
			files = append(files, schema.File{Name: "config/site.cue", Data: s.cue})
		}
		if len(s.yaml) > 0 {
			files = append(files, schema.File{Name: "config/site.yaml", Data: s.yaml})
		}
		cfg, err := schema.LoadFiles("config", files, schema.Options{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, profile := range cfg.ProfileNames() {
			renderChecked(t, cfg, profile)
			objs, err := Render(Input{Config: cfg, Profile: profile, Lock: standinLock(t, cfg, profile), Passwords: placeholderPasswords(t, cfg, profile), Trust: standinTrust(t, cfg, profile)})
			if err != nil {
				t.Fatalf("%s/%s: %v", s.name, profile, err)
			}
			for _, o := range objs {
				checkUnstructured(t, o)
				got, err := Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				prune(u)
				delete(u, "status")
				want, err := yamlv2.Marshal(u)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("%s/%s: %s %s/%s:\ngot\n%s\nwant (yaml.v2)\n%s", s.name, profile, o.Kind, o.Namespace, o.Name, got, want)
				}
			}
		}
	}
}

func placeholderPasswords(t *testing.T, cfg *v1alpha1.Config, profile string) map[string][]byte {
	t.Helper()
	p, err := plan.Build(cfg, profile, nil)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string][]byte{}
	for _, s := range p.PasswordSources() {
		pw[s.Source] = []byte("pw:\x00\xff\"")
	}
	return pw
}

// checkUnstructured checks that unstructured gives the map
// runtime.DefaultUnstructuredConverter.ToUnstructured gives.
func checkUnstructured(t *testing.T, o Object) {
	t.Helper()
	got, err := unstructured(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s/%s: unstructured differs from ToUnstructured:\ngot  %#v\nwant %#v", o.Kind, o.Namespace, o.Name, got, want)
	}
	checkWriteYAML(t, o.Kind+" "+o.Namespace+"/"+o.Name, got)
}

// checkWriteYAML checks that writeYAML, when it writes u, writes
// yaml.v2's bytes.
func checkWriteYAML(t *testing.T, what string, u map[string]any) {
	t.Helper()
	prune(u)
	delete(u, "status")
	want, err := yamlv2.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if writeYAML(&b, u) && b.String() != string(want) {
		t.Errorf("%s: writeYAML differs from yaml.v2:\ngot\n%s\nwant\n%s", what, b.String(), want)
	}
}

// TestWriteYAMLIsYAMLv2 checks writeYAML against yaml.v2 on the cases it
// must write as yaml.v2 does or leave to it: quoting, blocks, folding at
// 80 columns, key order, nesting.
func TestWriteYAMLIsYAMLv2(t *testing.T) {
	strs := []string{"", "a", "abc def", "true", "True", "TRUE", "tRue", "yes", "y", "N", "no", "on", "Off", "null", "Null", "~", "24", "0", "0123", "08",
		"1.5", "1e3", "1E3", "1e", "0x1f", "0x1g", "0o17", "0b101", "0b102", "1m", "16Mi", "50m", "1.31.1", "1.", ".5", "1e3e3", "99999999999999999999", "12h", "10%", "%1", "1%%", "a@b", "x:1@sha256:ab", "2024-01-01", "1:20", "-", "-a", "a-", "a:", "a: b", "a:b", "a #b", "a#b", "#a", "'a'", "\"a\"", "a b  c", " a", "a ",
		"docker.io/library/busybox:1.31.1@sha256:ea2528a21fc71247fdb25ff45a25fbe9abcbc635326ea364467f4a08abfbc9ba", "/bin/sh", "a=b", "(x)", "ä", "a\tb",
		"line one\nline two\n", "line one\nline two", "a\n\nb\n", "a\n", "a\n\n", "\na", " a\nb\n", "a \nb\n", "a\n  b\n", "# c\nx,y z\n", "a\tb\nc\n",
		strings.Repeat("word ", 15) + "end", strings.Repeat("x", 100), "<<", ".inf", "+1", "a,b", "[a]", "{a}", "a&b", "*a", "!a", "%a", "@a", "`a", "|a", ">a", "?a", "a?"}
	for _, s := range strs {
		for _, u := range []map[string]any{
			{"k": s},
			{"key": map[string]any{"inner": s, "list": []any{s, map[string]any{"a": s, "b": []any{s}}}}},
			{"a-very-long-key-name-that-moves-the-value-to-the-right": s},
			{"list": []any{map[string]any{}, []any{}, nil, true, int64(-3), s}, "m": map[string]any{}, "s": []any{}},
		} {
			checkWriteYAML(t, fmt.Sprintf("%q", s), u)
		}
		checkWriteYAML(t, fmt.Sprintf("key %q", s), map[string]any{s: "v", "b": "w"})
	}
	for _, keys := range [][]string{{"a", "b", "ab", "B", "a1", "a10", "a2", "a-b", "a.b", "a_b", "a/b", "Z", "z"}, {"image", "imagePullPolicy", "name"}} {
		u := map[string]any{}
		for _, k := range keys {
			u[k] = k
		}
		checkWriteYAML(t, fmt.Sprint(keys), u)
	}
	var b bytes.Buffer
	if !writeYAML(&b, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a.list": "x\ny\n"}}) {
		t.Error("writeYAML left a plain ConfigMap to yaml.v2")
	}
}

// TestUnstructuredIsToUnstructured checks unstructured against
// ToUnstructured on a synthetic config (every DaemonSet shape of a large
// render: split node groups, records ConfigMaps).
func TestUnstructuredIsToUnstructured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scale")
	if err := configgen.Generate(100, 40, dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(Input{Config: cfg, Lock: l})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		checkUnstructured(t, o)
	}
}
