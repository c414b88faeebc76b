package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestMain lets the test binary be the child of WithChild, as the stowage
// binary is.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == ChildArg {
		os.Exit(ServeChild(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// child is the option of a load in a child process of the test binary.
func child(t *testing.T) Option {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return WithChild(exe)
}

// TestIsolatedSameResult: every example config, every valid and invalid
// test config and an embedded functionConfig give the same config, or the
// same errors, evaluated in a child process as in this one.
func TestIsolatedSameResult(t *testing.T) {
	dirs := []string{"../examples/openpai-offline", "../examples/submarine-notebooks", "../examples/gpu-platform", "../examples/gitops-flux/config", "testdata/valid/mixed"}
	invalid, _ := filepath.Glob("testdata/invalid/*")
	dirs = append(dirs, invalid...)
	type result struct {
		cfg *v1alpha1.Config
		err string
	}
	var in []Option
	load := func(dir string) result {
		cfg, err := Load(dir, append([]Option{Options{}}, in...)...)
		r := result{cfg: cfg}
		if err != nil {
			r.err = err.Error()
		}
		return r
	}
	embedded := []byte("apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nspec:\n  profile: p\n  images:\n    x:\n      reference: busybox:1.36\n      auth: {username: u, password: \"env:STOWAGE_X\"}\n  profiles:\n    p:\n      pullers: [{name: a, namespace: ns, images: [x]}]\n")
	loadEmbedded := func() result {
		cfg, err := LoadEmbedded("d", "d/fn.yaml", embedded, "spec", []string{"profile"}, append([]Option{Options{AllowNoProfiles: true}}, in...)...)
		r := result{cfg: cfg}
		if err != nil {
			r.err = err.Error()
		}
		return r
	}
	here := map[string]result{}
	for _, d := range dirs {
		here[d] = load(d)
	}
	hereEmbedded := loadEmbedded()

	in = []Option{child(t)}
	for _, d := range dirs {
		got := load(d)
		if !reflect.DeepEqual(got, here[d]) {
			t.Errorf("%s: in a child:\n%+v\nin this process:\n%+v", d, got, here[d])
		}
	}
	if got := loadEmbedded(); !reflect.DeepEqual(got, hereEmbedded) || got.cfg == nil || got.cfg.PasswordAt("images", "x").IsZero() {
		t.Errorf("embedded: in a child:\n%+v\nin this process:\n%+v", got, hereEmbedded)
	}
}

// TestIsolatedLimits: in a child process, a 600-byte CUE file doubling a
// string towards 4 GiB stops at the memory limit, and a comprehension
// running past the time limit stops within a second of it; each names
// the file, the limit and the flag. In this process the first asked the
// runtime for one block of gigabytes at once, past any heap watch.
func TestIsolatedLimits(t *testing.T) {
	isolated := child(t)

	var b strings.Builder
	b.WriteString("package stowage\n_s0: \"0123456789abcdef\"\n")
	for i := 1; i <= 28; i++ {
		b.WriteString("_s" + strconv.Itoa(i) + ": _s" + strconv.Itoa(i-1) + " + _s" + strconv.Itoa(i-1) + "\n")
	}
	b.WriteString("images: x: reference: \"busybox:\\(len(_s28))\"\n")
	doubling := []File{{Name: "cfg/double.cue", Data: []byte(b.String())}}
	start := time.Now()
	_, err := LoadFiles("cfg", doubling, isolated, WithLimits(Limits{Memory: 256 << 20}))
	if want := "cfg/double.cue: evaluating the config took more than 268435456 bytes of memory, the limit of a config; raise it with --max-config-memory"; err == nil || err.Error() != want {
		t.Errorf("%d-byte doubling: %v\nwant %s", len(doubling[0].Data), err, want)
	}
	t.Logf("doubling stopped after %v", time.Since(start))

	spin := []File{{Name: "cfg/spin.cue", Data: []byte("package stowage\nimport \"list\"\n_n: [for a in list.Range(0, 5000, 1) for b in list.Range(0, 5000, 1) {a*b}]\nimages: x: reference: \"busybox:\\(len(_n))\"\n")}}
	start = time.Now()
	_, err = LoadFiles("cfg", spin, isolated, WithLimits(Limits{Time: 2 * time.Second}))
	took := time.Since(start)
	if want := "cfg/spin.cue: evaluating the config took more than 2s, the limit of a config; raise it with --config-timeout"; err == nil || err.Error() != want {
		t.Errorf("comprehension: %v\nwant %s", err, want)
	}
	if took > 3*time.Second {
		t.Errorf("a 2 s limit returned after %v", took)
	}
}

// TestComputes: a config of data (YAML, JSON, CUE fields, structs, lists
// and literals, as every example is) computes nothing; each CUE construct
// that can compute is named at its position, and so is nesting past
// MaxDataDepth.
func TestComputes(t *testing.T) {
	deep := strings.Repeat("[", MaxDataDepth+1) + "1" + strings.Repeat("]", MaxDataDepth+1)
	for _, tc := range []struct {
		name, file, data, want string
	}{
		{"cue data", "cfg/a.cue", "package stowage\n// c\n#D: 1\n_h: 2\n\"q-k\": {a: [1, -2, +3.5, \"s\", \"\"\"\n\tm\n\t\"\"\", true, null, 'b']} @attr()\nx: y: z: 1\n", ""},
		{"yaml", "cfg/a.yaml", "a: &x {b: 1}\nc: *x\nd: " + deep + "\n", ""},
		{"json data", "cfg/a.json", `{"a": [1, -2, {"b": null}]}`, ""},
		{"not parsed", "cfg/a.cue", "package stowage\na: (\n", ""},
		{"import", "cfg/a.cue", "package stowage\nimport \"strings\"\na: 1\n", `cfg/a.cue:2:1: an import`},
		{"reference", "cfg/a.cue", "package stowage\na: 1\nb: a\n", "cfg/a.cue:3:4: a reference"},
		{"type", "cfg/a.cue", "package stowage\na: string\n", "cfg/a.cue:2:4: a reference"},
		{"operator", "cfg/a.cue", "package stowage\na: \"x\" + \"y\"\n", "cfg/a.cue:2:4: an expression"},
		{"interpolation", "cfg/a.cue", "package stowage\na: \"\\(1)\"\n", "cfg/a.cue:2:4: an expression"},
		{"default", "cfg/a.cue", "package stowage\na: *1 | 2\n", "cfg/a.cue:2:4: an expression"},
		{"comprehension", "cfg/a.cue", "package stowage\na: {for x in [1] {b: x}}\n", "cfg/a.cue:2:5: an embedding, comprehension, let or ellipsis"},
		{"list comprehension", "cfg/a.cue", "package stowage\na: [for x in [1] {x}]\n", "cfg/a.cue:2:5: an expression"},
		{"let", "cfg/a.cue", "package stowage\nlet x = 1\na: 1\n", "cfg/a.cue:2:1: an expression"},
		{"optional", "cfg/a.cue", "package stowage\na?: 1\n", "cfg/a.cue:2:1: an optional or required field"},
		{"string pattern", "cfg/a.cue", "package stowage\n[!=\"x\"]: 1\n[=~\"^a\"]: 2\n", ""},
		{"pattern", "cfg/a.cue", "package stowage\n[string]: 1\n", "cfg/a.cue:2:1: a computed label"},
		{"ellipsis", "cfg/a.cue", "package stowage\na: [1, ...]\n", "cfg/a.cue:2:8: an expression"},
		{"cue deep", "cfg/a.cue", "package stowage\na: " + deep + "\n", "nested more than 100 levels deep"},
		{"cue structs at the bound", "cfg/a.cue", "package stowage\n" + strings.Repeat("a: {", MaxDataDepth-1) + "b: 1" + strings.Repeat("}", MaxDataDepth-1) + "\n", ""},
		{"cue structs past the bound", "cfg/a.cue", "package stowage\n" + strings.Repeat("a: {", MaxDataDepth+1) + "b: 1" + strings.Repeat("}", MaxDataDepth+1) + "\n", "nested more than 100 levels deep"},
		{"json deep", "cfg/a.json", `{"a": ` + deep + `}`, "nested more than 100 levels deep"},
	} {
		got := Computes([]File{{Name: "cfg/0.yaml", Data: []byte("a: 1\n")}, {Name: tc.file, Data: []byte(tc.data)}})
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) && !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: Computes = %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, d := range []string{"../examples/openpai-offline", "../examples/submarine-notebooks", "../examples/gpu-platform", "../examples/gitops-flux/config"} {
		files, err := ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := Computes(files); got != "" {
			t.Errorf("%s computes: %s", d, got)
		}
	}
}

// TestChildOnlyWhenComputing: with WithChild, a config of data loads
// without starting the child (one process: the start-up saved), and a
// config that computes starts it once, with the same result as in this
// process.
func TestChildOnlyWhenComputing(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "child")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> '"+marker+"'\nexec '"+self+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runs := func() string {
		b, err := os.ReadFile(marker)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, d := range []string{"../examples/openpai-offline", "../examples/gpu-platform", "../examples/gitops-flux/config"} {
		if _, err := Load(d, WithChild(script)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if got := runs(); got != "" {
		t.Errorf("a config of data started the child: %q", got)
	}
	computing := []File{{Name: "cfg/a.cue", Data: []byte("package stowage\n_tag: \"1.36\"\nimages: x: reference: \"busybox:\\(_tag)\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"ns\", images: [\"x\"]}]\n")}}
	here, err := LoadFiles("cfg", computing)
	if err != nil {
		t.Fatal(err)
	}
	there, err := LoadFiles("cfg", computing, WithChild(script))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(here, there) || there.Images["x"].Reference != "busybox:1.36" {
		t.Errorf("in the child:\n%+v\nin this process:\n%+v", there, here)
	}
	if got := runs(); got != ChildArg+"\n" {
		t.Errorf("child runs: %q, want one with the argument %s", got, ChildArg)
	}
}
