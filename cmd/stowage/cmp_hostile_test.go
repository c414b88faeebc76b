package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// hostileBomb is a ConfigMap whose data expands through ten aliases per
// level to about 10^9 nodes: a few hundred bytes on disk.
func hostileBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  a0: &a0 [\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestArgoCDPluginRefusesForeignCode runs the Argo CD plugin's generate,
// as argocd-cmp-server does, on the example Application with one hostile
// addition each: a program of the repository as a second exec function, a
// container function, a legacy exec plugin, helmCharts and the builtin
// HelmChartInflationGenerator, remote resources and bases over loopback
// (http and git), a 50 MB resource and an alias bomb, and the same in a
// base the kustomization reaches. Each is refused before anything runs:
// exit 1, nothing on stdout, stderr naming the file, line and field; the
// marker each foreign program would write outside the directory never
// appears (the PATH holds a docker, helm and git that would write it, and
// the plugin directory a legacy plugin that would), and the loopback
// server gets no request. `stowage vet` on the same directory reports the
// same refusal.
func TestArgoCDPluginRefusesForeignCode(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n")
	}))
	t.Cleanup(srv.Close)

	outside := t.TempDir()
	marker := filepath.Join(outside, "ran")
	// Programs that would mark that they ran: on PATH (docker, helm, git)
	// and as a legacy exec plugin in the plugin home.
	tools := t.TempDir()
	script := "#!/bin/sh\necho \"$0 $*\" >> " + marker + "\ncat\n"
	for _, name := range []string{"docker", "helm", "git"} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	xdg := t.TempDir()
	pluginDir := filepath.Join(xdg, "kustomize", "plugin", "someteam.example.com", "v1", "evilinflator")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "EvilInflator"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := cmpEnv(t, nil)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + v + string(os.PathListSeparator) + tools
		}
	}
	env = append(env, "XDG_CONFIG_HOME="+xdg, "KUSTOMIZE_PLUGIN_HOME="+filepath.Join(xdg, "kustomize", "plugin"))

	const base = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - stowage.lock.yaml\n  - notebook-controller.yaml\n"
	evilExec := "apiVersion: example.com/v1\nkind: Evil\nmetadata:\n  name: evil\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: ./evil.sh}\n"
	bigLine := strings.Repeat("x", 1<<20)
	cases := []struct {
		name  string
		files map[string]string
		// big writes a file of that many bytes (a ConfigMap) at "big.yaml".
		big  int
		want []string
	}{
		{
			name: "exec function of the repository",
			files: map[string]string{
				"kustomization.yaml": base + "transformers:\n  - stowage.yaml\n  - evil.yaml\n",
				"evil.yaml":          evilExec,
			},
			want: []string{"kustomization.yaml:8: transformers[1] (", "evil.yaml:6): Evil evil is a KRM function running the program \"./evil.sh\", which stowage does not run"},
		},
		{
			name: "exec function before stowage's, inline",
			files: map[string]string{
				"kustomization.yaml": base + "transformers:\n  - |\n    " + strings.ReplaceAll(strings.TrimSuffix(evilExec, "\n"), "\n", "\n    ") + "\n  - stowage.yaml\n",
			},
			want: []string{"kustomization.yaml:7: transformers[0]: Evil evil is a KRM function running the program \"./evil.sh\""},
		},
		{
			name: "stowage's functionConfig running the repository's program",
			files: map[string]string{
				"kustomization.yaml": base + "transformers:\n  - own.yaml\n",
				"own.yaml":           "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: ./evil.sh, args: [fn]}\nspec: {}\n",
			},
			want: []string{"own.yaml:6: metadata.annotations.config.kubernetes.io/function: exec.path \"./evil.sh\" is not stowage's own executable"},
		},
		{
			name: "container function",
			files: map[string]string{
				"kustomization.yaml": base + "transformers:\n  - stowage.yaml\n  - c.yaml\n",
				"c.yaml":             "apiVersion: example.com/v1\nkind: Evil\nmetadata:\n  name: c\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: example.invalid/evil:1}\n",
			},
			want: []string{"kustomization.yaml:8: transformers[1] (", "c.yaml:6): Evil c is a KRM function running the container image \"example.invalid/evil:1\""},
		},
		{
			name: "legacy plugin",
			files: map[string]string{
				"kustomization.yaml": base + "generators:\n  - plugin.yaml\ntransformers:\n  - stowage.yaml\n",
				"plugin.yaml":        "apiVersion: someteam.example.com/v1\nkind: EvilInflator\nmetadata: {name: p}\n",
			},
			want: []string{"kustomization.yaml:7: generators[0] (", "plugin.yaml:1): EvilInflator p is a legacy kustomize plugin"},
		},
		{
			name: "helmCharts",
			files: map[string]string{
				"kustomization.yaml": base + "helmCharts:\n  - {name: x, repo: " + srv.URL + "/charts, version: 1.0.0}\ntransformers:\n  - stowage.yaml\n",
			},
			want: []string{"kustomization.yaml:6: helmCharts: stowage does not inflate Helm charts"},
		},
		{
			name: "builtin HelmChartInflationGenerator",
			files: map[string]string{
				"kustomization.yaml": base + "generators:\n  - helm.yaml\ntransformers:\n  - stowage.yaml\n",
				"helm.yaml":          "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: h}\nname: x\nrepo: " + srv.URL + "/charts\n",
			},
			want: []string{"kustomization.yaml:7: generators[0] (", "helm.yaml:1): HelmChartInflationGenerator h runs helm"},
		},
		{
			name: "http resource",
			files: map[string]string{
				"kustomization.yaml": base + "  - " + srv.URL + "/x.yaml\ntransformers:\n  - stowage.yaml\n",
			},
			want: []string{"kustomization.yaml:6: resources[2] \"" + srv.URL + "/x.yaml\" is a remote resource"},
		},
		{
			name: "git base",
			files: map[string]string{
				"kustomization.yaml": base + "  - git::" + srv.URL + "/repo.git//base?ref=main\ntransformers:\n  - stowage.yaml\n",
			},
			want: []string{"kustomization.yaml:6: resources[2] \"git::" + srv.URL + "/repo.git//base?ref=main\" is a remote resource"},
		},
		{
			name: "builtin patch from a URL",
			files: map[string]string{
				"kustomization.yaml": base + "transformers:\n  - patch.yaml\n  - stowage.yaml\n",
				"patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + srv.URL + "/p.yaml\n",
			},
			want: []string{"kustomization.yaml:7: transformers[0] (", "patch.yaml:1): PatchTransformer p: path: \"" + srv.URL + "/p.yaml\" is a URL"},
		},
		{
			name: "remote resource and exec function in a base",
			files: map[string]string{
				"kustomization.yaml":     base + "  - sub\ntransformers:\n  - stowage.yaml\n",
				"sub/kustomization.yaml": "resources:\n  - " + srv.URL + "/y.yaml\ntransformers:\n  - evil.yaml\n",
				"sub/evil.yaml":          evilExec,
			},
			want: []string{"sub/kustomization.yaml:2: resources[0] \"" + srv.URL + "/y.yaml\" is a remote resource", "sub/kustomization.yaml:4: transformers[0] (", "sub/evil.yaml:6): Evil evil is a KRM function running the program \"./evil.sh\""},
		},
		{
			name:  "50 MB resource",
			files: map[string]string{"kustomization.yaml": base + "  - big.yaml\ntransformers:\n  - stowage.yaml\n"},
			big:   50 << 20,
			// Read (a file may hold up to all the input, 64 MiB, as
			// lock and vet read it), then over the function's input cap,
			// the operator's: refused before the function reads it.
			want: []string{"4194304", "STOWAGE_MAX_INPUT_BYTES"},
		},
		{
			name:  "alias bomb",
			files: map[string]string{"kustomization.yaml": base + "  - bomb.yaml\ntransformers:\n  - stowage.yaml\n", "bomb.yaml": hostileBomb()},
			want:  []string{"kustomization.yaml:6: resources[2] \"bomb.yaml\" was not read: a YAML file whose aliases expand to more than 1000000 nodes"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := testbin.CopyApp(t, filepath.Join(argoExample, "prepull"))
			writeTree(t, app, tc.files)
			// The repository's program: writes the marker outside the
			// directory, then passes its input through.
			if err := os.WriteFile(filepath.Join(app, "evil.sh"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(app, "sub")); err == nil {
				if err := os.WriteFile(filepath.Join(app, "sub", "evil.sh"), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.big > 0 {
				f, err := os.Create(filepath.Join(app, "big.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprint(f, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n")
				for n, i := 0, 0; n < tc.big; i++ {
					line := fmt.Sprintf("  k%d: %s\n", i, bigLine)
					if n+len(line) > tc.big {
						line = line[:tc.big-n-1] + "\n"
					}
					m, err := f.WriteString(line)
					if err != nil {
						t.Fatal(err)
					}
					n += m
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			out, errb, code := testbin.RunCMP(t, p.Spec.Generate, app, env)
			took := time.Since(start)
			if code != 1 || len(out) != 0 {
				t.Errorf("generate: exit %d (want 1), stdout %d bytes (want none); stderr:\n%s", code, len(out), errb)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(errb), w) {
					t.Errorf("generate's stderr lacks %q:\n%s", w, errb)
				}
			}
			if took > 30*time.Second {
				t.Errorf("generate took %v", took)
			}
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("a foreign program ran: %s", b)
			}
			if n := requests.Load(); n != 0 {
				t.Fatalf("the loopback server got %d requests", n)
			}
			// vet refuses the same, with the same words.
			vout, verr, vcode := runCLI(t, nil, "vet", app)
			if vcode != 1 {
				t.Errorf("vet: exit %d (want 1)\n%s%s", vcode, vout, verr)
			}
			for _, w := range tc.want {
				if !strings.Contains(verr, w) {
					t.Errorf("vet's stderr lacks %q:\n%s", w, verr)
				}
			}
		})
	}
}

// TestArgoCDPluginCheckoutRoot: generate reads beneath the repository
// checkout, the Application's directory without $ARGOCD_APP_SOURCE_PATH,
// so an overlay's ../../base inside the repository builds; when the
// variable does not name the directory's end, the root is the directory
// itself and the base is refused as outside it.
func TestArgoCDPluginCheckoutRoot(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	app := testbin.CopyApp(t, filepath.Join(argoExample, "prepull"))
	repo := filepath.Dir(app)
	overlay := filepath.Join(repo, "apps", "overlay")
	if err := os.MkdirAll(filepath.Dir(overlay), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(app, overlay); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "base"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(overlay, "notebook-controller.yaml"), filepath.Join(repo, "base", "notebook-controller.yaml")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, repo, map[string]string{
		"base/kustomization.yaml":         "resources: [notebook-controller.yaml]\n",
		"apps/overlay/kustomization.yaml": "resources:\n  - stowage.lock.yaml\n  - ../../base\ntransformers:\n  - stowage.yaml\n",
	})
	env := func(sourcePath string) []string {
		var out []string
		for _, kv := range cmpEnv(t, nil) {
			if strings.HasPrefix(kv, "ARGOCD_APP_SOURCE_PATH=") {
				kv = "ARGOCD_APP_SOURCE_PATH=" + sourcePath
			}
			out = append(out, kv)
		}
		return out
	}
	out, errb, code := testbin.RunCMP(t, p.Spec.Generate, overlay, env("apps/overlay"))
	if code != 0 || !strings.Contains(string(out), "name: notebook-controller") {
		t.Fatalf("generate in the checkout: exit %d\n%s\n%s", code, out, errb)
	}
	out, errb, code = testbin.RunCMP(t, p.Spec.Generate, overlay, env("overlay"))
	if code != 1 || len(out) != 0 || !strings.Contains(string(errb), `resources[1] "../../base" is outside the root`) {
		t.Fatalf("generate with the root at the directory: exit %d\n%s\n%s", code, out, errb)
	}
}

// TestArgoCDPluginDeadline: generate stops at its --deadline, exit 1,
// nothing on stdout, the error naming the deadline.
func TestArgoCDPluginDeadline(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	app := testbin.CopyApp(t, filepath.Join(argoExample, "prepull"))
	c := p.Spec.Generate
	c.Args = append(append([]string(nil), c.Args...), "--deadline", "1ms")
	env := cmpEnv(t, nil)
	start := time.Now()
	out, errb, code := testbin.RunCMP(t, c, app, env)
	if code != 1 || len(out) != 0 || !strings.Contains(string(errb), "kustomize's build did not end in time (it ran past --deadline 1ms)") {
		t.Fatalf("generate --deadline 1ms: exit %d\n%s\n%s", code, out, errb)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("generate --deadline 1ms took %v", took)
	}
}
