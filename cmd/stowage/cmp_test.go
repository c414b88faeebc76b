package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// argoExample is the Argo CD example: plugin.yaml, the repo-server patch,
// the Application and the kustomization it points at.
var argoExample = filepath.Join("..", "..", "examples", "gitops-argo")

// cmpEnv is the environment of a plugin command in the stowage sidecar:
// PATH holding only the stowage binary (the image holds nothing else, no
// kustomize and no shell), then what the repo server sends for the
// Application.
func cmpEnv(t *testing.T, pluginEnv map[string]string) []string {
	bin := stowageBinary(t)
	return append([]string{"PATH=" + filepath.Dir(bin), "HOME=" + t.TempDir()},
		testbin.AppEnv("notebook-prepull", "argocd", pluginEnv)...)
}

// TestArgoCDPluginKustomization runs examples/gitops-argo/plugin.yaml's
// discover and generate commands exactly as argocd-cmp-server does, on a
// fresh copy of the Application's directory (prepull/): discover matches,
// generate prints only YAML objects and nothing on stderr, every image is
// pinned, the stowage DaemonSet is there, and the stream is byte for byte
// what the real `kustomize build --enable-alpha-plugins --enable-exec`
// prints for the same directory.
func TestArgoCDPluginKustomization(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	app := testbin.CopyApp(t, filepath.Join(argoExample, "prepull"))
	env := cmpEnv(t, nil)

	out, errb, code := testbin.RunCMP(t, p.Spec.Discover.Find.CMPCommand, app, env)
	if code != 0 || string(out) != "kustomization.yaml: a kustomization with the stowage transformer\n" || len(errb) != 0 {
		t.Fatalf("discover: exit %d, stdout %q, stderr %q", code, out, errb)
	}

	out, errb, code = testbin.RunCMP(t, p.Spec.Generate, app, env)
	if code != 0 || len(errb) != 0 {
		t.Fatalf("generate: exit %d, stderr:\n%s", code, errb)
	}
	docs := testbin.Manifests(t, out)
	var kinds []string
	for _, d := range docs {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(d, &o); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, o.Kind+"/"+o.Metadata.Name)
	}
	want := []string{"ConfigMap/notebook-images-records", "Deployment/notebook-controller", "DaemonSet/notebook-images", "DaemonSet/notebook-images-jupyter-gpu"}
	if !slices.Equal(kinds, want) {
		t.Errorf("generate gave %v, want %v", kinds, want)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")); strings.HasPrefix(l, "image: ") && !strings.Contains(l, "@sha256:") {
			t.Errorf("unpinned image in the output: %s", l)
		}
	}

	t.Run("same as kustomize build", func(t *testing.T) {
		k := testbin.Kustomize(t)
		cmd := exec.Command(k, "build", "--enable-alpha-plugins", "--enable-exec", ".")
		cmd.Dir = app
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		kout, err := cmd.Output()
		if err != nil {
			t.Fatalf("kustomize build: %v\n%s", err, stderr.Bytes())
		}
		if !bytes.Equal(out, kout) {
			t.Errorf("generate differs from kustomize build --enable-alpha-plugins --enable-exec:\n%s\n---- kustomize:\n%s", out, kout)
		}
	})
}

// TestArgoCDPluginBrokenConfig: a functionConfig with an unknown field and
// a config directory with a CUE error each fail generate with exit 1,
// nothing on stdout, and the located error (file, line, field) on stderr.
func TestArgoCDPluginBrokenConfig(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	env := cmpEnv(t, nil)

	app := testbin.CopyApp(t, filepath.Join(argoExample, "prepull"))
	fc := filepath.Join(app, "stowage.yaml")
	b, err := os.ReadFile(fc)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "\n          refreshHours: \"2\"\n", "\n          refreshHours: \"2\"\n          refreshMinutes: 5\n", 1)
	if broken == string(b) {
		t.Fatal("stowage.yaml changed: the test no longer breaks it")
	}
	if err := os.WriteFile(fc, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errb, code := testbin.RunCMP(t, p.Spec.Generate, app, env)
	if code != 1 || len(out) != 0 {
		t.Fatalf("generate on a broken functionConfig: exit %d (want 1), stdout %q (want none)", code, out)
	}
	if !strings.Contains(string(errb), "stowage.yaml:33: spec.profiles.notebooks.pullers[0].refreshMinutes") {
		t.Errorf("stderr does not name the file, line and field:\n%s", errb)
	}

	cfg := testbin.CopyApp(t, filepath.Join("..", "..", "examples", "gitops-flux", "config"))
	cue := filepath.Join(cfg, "notebooks.cue")
	b, err = os.ReadFile(cue)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cue, bytes.Replace(b, []byte("refreshHours: 2"), []byte("refreshHours: \"two\""), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errb, code = testbin.RunCMP(t, p.Spec.Generate, cfg, append(env, "ARGOCD_ENV_PROFILE=notebooks"))
	if code != 1 || len(out) != 0 {
		t.Fatalf("generate on a broken config directory: exit %d (want 1), stdout %q (want none)", code, out)
	}
	if !strings.Contains(string(errb), "notebooks.cue:19") || !strings.Contains(string(errb), "refreshHours") {
		t.Errorf("stderr does not name the file, line and field:\n%s", errb)
	}
}

// TestArgoCDPluginConfigDir: on a config directory, discover matches and
// generate prints what `stowage render DIR --profile P` prints, P coming
// from the Application's plugin env PROFILE; an unknown profile fails
// naming it. Discover prints nothing for a kustomization without stowage
// or an empty directory.
func TestArgoCDPluginConfigDir(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	env := cmpEnv(t, map[string]string{"PROFILE": "notebooks"})
	src := filepath.Join("..", "..", "examples", "gitops-flux", "config")
	app := testbin.CopyApp(t, src)

	out, errb, code := testbin.RunCMP(t, p.Spec.Discover.Find.CMPCommand, app, env)
	if code != 0 || string(out) != "stowage.lock.yaml: a stowage config directory\n" || len(errb) != 0 {
		t.Fatalf("discover: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	out, errb, code = testbin.RunCMP(t, p.Spec.Generate, app, env)
	if code != 0 || len(errb) != 0 {
		t.Fatalf("generate: exit %d, stderr:\n%s", code, errb)
	}
	testbin.Manifests(t, out)
	want, err := exec.Command(stowageBinary(t), "render", src, "--profile", "notebooks").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("generate differs from stowage render:\n%s\n---- render:\n%s", out, want)
	}

	out, errb, code = testbin.RunCMP(t, p.Spec.Generate, app, cmpEnv(t, map[string]string{"PROFILE": "gpu"}))
	if code != 1 || len(out) != 0 || !strings.Contains(string(errb), `"gpu"`) {
		t.Errorf("generate with PROFILE=gpu: exit %d, stdout %q, stderr %q", code, out, errb)
	}

	for name, files := range map[string]map[string]string{
		"plain kustomization": {"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
		"empty directory":     {},
	} {
		dir := t.TempDir()
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, errb, code := testbin.RunCMP(t, p.Spec.Discover.Find.CMPCommand, dir, env)
		if code != 0 || len(out) != 0 {
			t.Errorf("discover on a %s: exit %d, stdout %q (want nothing), stderr %q", name, code, out, errb)
		}
	}
}

// TestArgoCDPluginInstall checks the pieces around plugin.yaml: the
// Application names the plugin as Argo CD spells it (name-version), and
// the repo-server patch runs argocd-cmp-server in a stowage sidecar with
// plugin.yaml mounted where argocd-cmp-server reads it and the volumes it
// shares with the repo server.
func TestArgoCDPluginInstall(t *testing.T) {
	t.Parallel()
	p := testbin.ReadCMP(t, filepath.Join(argoExample, "plugin.yaml"))
	var app struct {
		Spec struct {
			Source struct {
				Path   string `json:"path"`
				Plugin struct {
					Name string `json:"name"`
				} `json:"plugin"`
			} `json:"source"`
		} `json:"spec"`
	}
	b, err := os.ReadFile(filepath.Join(argoExample, "application.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &app); err != nil {
		t.Fatal(err)
	}
	if app.Spec.Source.Plugin.Name != p.Name() || app.Spec.Source.Path != "examples/gitops-argo/prepull" {
		t.Errorf("application.yaml: plugin %q path %q, want plugin %q path examples/gitops-argo/prepull", app.Spec.Source.Plugin.Name, app.Spec.Source.Path, p.Name())
	}

	var d appsv1.Deployment
	b, err = os.ReadFile(filepath.Join(argoExample, "argocd-repo-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "argocd-repo-server" || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("argocd-repo-server.yaml: want one sidecar in Deployment argocd-repo-server, got %s with %d", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	// No stowage image is published: the example names the placeholder
	// that docs/install.md tells the user to replace with their push of
	// make stowage-image.
	if !slices.Equal(c.Command, []string{"/var/run/argocd/argocd-cmp-server"}) || c.Image != "registry.example.org/stowage/stowage:v0.0.0-dev" {
		t.Errorf("sidecar runs %v in %s, want /var/run/argocd/argocd-cmp-server in the placeholder registry.example.org/stowage/stowage:v0.0.0-dev", c.Command, c.Image)
	}
	if c.SecurityContext == nil || c.SecurityContext.RunAsUser == nil || *c.SecurityContext.RunAsUser != 999 {
		t.Errorf("sidecar must run as user 999, as argocd-cmp-server expects")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name + ":" + m.SubPath
	}
	for path, want := range map[string]string{
		"/var/run/argocd":                            "var-files:",
		"/home/argocd/cmp-server/plugins":            "plugins:",
		"/home/argocd/cmp-server/config/plugin.yaml": "stowage-cmp-plugin:plugin.yaml",
	} {
		if mounts[path] != want {
			t.Errorf("sidecar mount %s is %q, want %q", path, mounts[path], want)
		}
	}
}
