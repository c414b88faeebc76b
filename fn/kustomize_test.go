package fn_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/testing/testbin"
)

var updateKustomize = flag.Bool("update-kustomize", false, "rewrite the expected kustomize build outputs")

// stowagePath returns a PATH with the folder of the shared stowage binary
// (testbin.Stowage, the binary alone in it) first, as an Argo CD repo
// server with stowage installed has it.
func stowagePath(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(testbin.Stowage(t))
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// build runs kustomize build in dir with PATH and extra flags, returning
// stdout, stderr and the error.
func build(t *testing.T, kustomize, path, dir string, flags ...string) ([]byte, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kustomize, append(append([]string{"build"}, flags...), dir)...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

var execFlags = []string{"--enable-alpha-plugins", "--enable-exec"}

// TestKustomizeBuild runs the real kustomize with stowage as an exec KRM
// function on the GitOps examples and on a pin-only kustomization, and
// compares each build with its expected output byte for byte.
func TestKustomizeBuild(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := stowagePath(t)
	cases := []struct{ name, dir, golden string }{
		{"gitops-argo", "../examples/gitops-argo/prepull", "../golden/gitops-argo/build.yaml"},
		{"gitops-flux", "../examples/gitops-flux/clusters/prod/prepull", "../golden/gitops-flux/build.yaml"},
		{"pin-only", "testdata/kustomize/pin-only", "testdata/kustomize/pin-only/expected.yaml"},
		{"pin-image-volume", "testdata/kustomize/pin-image-volume", "testdata/kustomize/pin-image-volume/expected.yaml"},
		{"pin-custom-resources", "testdata/kustomize/pin-custom-resources", "testdata/kustomize/pin-custom-resources/expected.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := build(t, kustomize, path, tc.dir, execFlags...)
			if err != nil {
				t.Fatalf("kustomize build: %v\n%s", err, stderr)
			}
			if *updateKustomize {
				if err := os.MkdirAll(filepath.Dir(tc.golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tc.golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatalf("%v (run go test ./fn -run TestKustomizeBuild -update-kustomize)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("kustomize build of %s differs from %s:\n%s", tc.dir, tc.golden, out)
			}
			// Nothing of the function's bookkeeping reaches what Argo CD or
			// Flux apply: no ImageLock, no functionConfig, no internal or
			// local-config annotations.
			for _, leak := range []string{"kind: ImageLock", "kind: Stowage", "config.kubernetes.io/", "internal.config"} {
				if bytes.Contains(out, []byte(leak)) {
					t.Errorf("build output contains %q", leak)
				}
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "!*:latest") || strings.HasSuffix(line, "reference: lr") {
					continue // a policy's pattern and a tuning parameter, not images
				}
				if (strings.Contains(line, "image: ") || strings.Contains(line, "reference: ")) && !strings.Contains(line, "@sha256:") {
					t.Errorf("unpinned image in build output: %s", strings.TrimSpace(line))
				}
			}
		})
	}
}

// TestKustomizeFlags asserts what README.md's table says kustomize v5.8.2
// does with an exec function for each set of flags: no flags or
// --enable-exec alone fail with "external plugins disabled";
// --enable-alpha-plugins alone skips the function silently (exit 0, no
// DaemonSet, images left unpinned); both run it.
func TestKustomizeFlags(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := stowagePath(t)
	const dir = "../examples/gitops-argo/prepull"
	const disabled = "Error: external plugins disabled; unable to load external plugin 'Stowage'\n"
	for _, tc := range []struct {
		flags   []string
		fail    bool
		stderr  string
		renders bool
	}{
		{nil, true, disabled, false},
		{[]string{"--enable-exec"}, true, disabled, false},
		{[]string{"--enable-alpha-plugins"}, false, "", false},
		{execFlags, false, "", true},
	} {
		out, stderr, err := build(t, kustomize, path, dir, tc.flags...)
		if (err != nil) != tc.fail {
			t.Errorf("kustomize build %v: error %v, want failure %v\n%s", tc.flags, err, tc.fail, stderr)
		}
		if stderr != tc.stderr {
			t.Errorf("kustomize build %v: stderr %q, want %q", tc.flags, stderr, tc.stderr)
		}
		ran := bytes.Contains(out, []byte("kind: DaemonSet")) || bytes.Contains(out, []byte("@sha256:"))
		if ran != tc.renders {
			t.Errorf("kustomize build %v: function ran = %v, want %v", tc.flags, ran, tc.renders)
		}
		if !tc.fail && !bytes.Contains(out, []byte("kind: Deployment")) {
			t.Errorf("kustomize build %v: the kustomization's own workload is missing:\n%s", tc.flags, out)
		}
	}
}

// TestKustomizeFunctionError: a bad functionConfig makes kustomize build
// fail, and the function's message, with the field path, reaches the user.
func TestKustomizeFunctionError(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	dir := t.TempDir()
	src := "../examples/gitops-argo/prepull"
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "stowage.yaml" {
			b = bytes.Replace(b, []byte("namespace: submarine"), []byte("namespace: Tenant_A"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := build(t, kustomize, stowagePath(t), dir, execFlags...)
	if err == nil {
		t.Fatalf("kustomize build succeeded on a bad functionConfig:\n%s", out)
	}
	for _, want := range []string{"spec.profiles.notebooks.pullers[0].namespace", `"Tenant_A"`, "lowercase RFC 1123 label"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kustomize's stderr does not show %q:\n%s", want, stderr)
		}
	}
}

// copyEdited copies the files of src into a fresh directory, passing each
// through edit (by file name), and returns the directory.
func copyEdited(t *testing.T, src string, edit func(name string, b []byte) []byte) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), edit(e.Name(), b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestKustomizeShowsWarnings: a warning result reaches the kustomize user
// on stderr as `file:line: warning: field: message` while the build
// succeeds; with stowage.dev/strict: "true" on the functionConfig the same
// warning fails the build.
func TestKustomizeShowsWarnings(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := stowagePath(t)
	const spare = "    spare:\n      image: xxx.harbor.com/5000/apache/submarine:x\n"
	withSpare := func(strict bool) func(string, []byte) []byte {
		return func(name string, b []byte) []byte {
			if name != "stowage.yaml" {
				return b
			}
			b = bytes.Replace(b, []byte("  environments:\n"), []byte("  environments:\n"+spare), 1)
			if strict {
				b = bytes.Replace(b, []byte("  annotations:\n"), []byte("  annotations:\n    stowage.dev/strict: \"true\"\n"), 1)
			}
			return b
		}
	}
	dir := copyEdited(t, "../examples/gitops-argo/prepull", withSpare(false))
	src, err := os.ReadFile(filepath.Join(dir, "stowage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(string(src[:bytes.Index(src, []byte("      image: xxx"))]), "\n")
	const msg = `spec.environments.spare.image: image "xxx.harbor.com/5000/apache/submarine:x": "5000" is read as the first part of the repository path on registry xxx.harbor.com; if 5000 is the registry's port, write xxx.harbor.com:5000/apache/submarine:x`
	want := fmt.Sprintf("stowage.yaml:%d: warning: %s\n", line, msg)
	out, stderr, err := build(t, kustomize, path, dir, execFlags...)
	if err != nil {
		t.Fatalf("kustomize build: %v\n%s", err, stderr)
	}
	if !bytes.Contains(out, []byte("kind: DaemonSet")) {
		t.Errorf("no DaemonSet in the build:\n%s", out)
	}
	if stderr != want {
		t.Errorf("kustomize's stderr:\n%s\nwant exactly:\n%s", stderr, want)
	}

	dir = copyEdited(t, "../examples/gitops-argo/prepull", withSpare(true))
	out, stderr, err = build(t, kustomize, path, dir, execFlags...)
	if err == nil {
		t.Fatalf("kustomize build succeeded with stowage.dev/strict and a warning:\n%s", out)
	}
	want = fmt.Sprintf("stowage.yaml:%d: %s (an error because of stowage.dev/strict: \"true\")\n", line+1, msg)
	if !strings.Contains(stderr, want) {
		t.Errorf("kustomize's stderr does not hold\n%s\ngot:\n%s", want, stderr)
	}
}

// TestArgoCheckScript runs the Argo CD example's CI guard as CI would,
// with stowage and kustomize on PATH: it passes on the example, and fails
// on a copy whose lock lacks the image only the function pins.
func TestArgoCheckScript(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := filepath.Dir(kustomize) + string(os.PathListSeparator) + stowagePath(t)
	run := func(dir string) (string, error) {
		cmd := exec.Command("bash", "../examples/gitops-argo/check.sh", dir)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("../examples/gitops-argo/prepull"); err != nil || !strings.HasSuffix(out, "check: ok\n") {
		t.Fatalf("check.sh on the example: %v\n%s", err, out)
	}
	work := t.TempDir()
	for _, f := range []string{"kustomization.yaml", "stowage.yaml", "notebook-controller.yaml", "stowage.lock.yaml"} {
		data, err := os.ReadFile(filepath.Join("../examples/gitops-argo/prepull", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "stowage.lock.yaml" {
			s := string(data)
			i := strings.Index(s, "  - name: docker.io/apache/submarine:notebook-controller-0.7.0")
			j := strings.Index(s, "  - name: ghcr.io/stowage/stowage-helper")
			if i < 0 || j < i {
				t.Fatal("the example lock changed shape")
			}
			data = []byte(s[:i] + s[j:])
		}
		if err := os.WriteFile(filepath.Join(work, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(work)
	if err == nil || !strings.Contains(out, "missing  docker.io/apache/submarine:notebook-controller-0.7.0") {
		t.Fatalf("check.sh with the pin-only entry removed: %v\n%s", err, out)
	}
}

// TestKustomizeOperatorEnvRule: the CI_JOB_TOKEN attack under the real
// kustomize. A merge request names env:CI_JOB_TOKEN as a registry password
// and adds --allow-env CI_JOB_TOKEN to the exec declaration, or sets
// STOWAGE_ALLOW_ENV in its envs: the build fails, naming the variable, and
// the token appears nowhere. Only the operator's STOWAGE_ALLOW_ENV (the
// environment kustomize runs in) lets the function read it, and the
// declaration's --allow-env can then only narrow that.
func TestKustomizeOperatorEnvRule(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := stowagePath(t)
	const token = "ci-job-token-canary-5e1d"
	declared := func(decl string) string {
		return copyEdited(t, "../examples/gitops-argo/prepull", func(name string, b []byte) []byte {
			if name != "stowage.yaml" {
				return b
			}
			b = bytes.Replace(b, []byte("        args: [fn]\n"), []byte(decl), 1)
			return bytes.Replace(b, []byte("      image: apache/submarine:jupyter-notebook-gpu-0.7.0\n"),
				[]byte("      image: apache/submarine:jupyter-notebook-gpu-0.7.0\n      auth: {username: ci, password: env:CI_JOB_TOKEN}\n"), 1)
		})
	}
	run := func(dir string, operator ...string) ([]byte, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(kustomize, append([]string{"build"}, append(execFlags, dir)...)...)
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "STOWAGE_ALLOW_ENV=") && !strings.HasPrefix(e, "PATH=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, append([]string{"PATH=" + path, "CI_JOB_TOKEN=" + token}, operator...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.Bytes(), stderr.String(), err
	}
	const outside = "environment variable CI_JOB_TOKEN may not be read (needed by environment \"jupyter-gpu\"): stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV"
	cases := []struct {
		name, decl string
		operator   []string
		want       string // in stderr; "" when the build succeeds
	}{
		{"args widen", "        args: [fn, --allow-env, CI_JOB_TOKEN]\n", nil, outside},
		{"envs set the operator's variable", "        args: [fn]\n        envs: [STOWAGE_ALLOW_ENV=CI_JOB_TOKEN]\n", nil,
			"the function declaration sets STOWAGE_ALLOW_ENV in its envs"},
		{"envs and args together", "        args: [fn, --allow-env, CI_JOB_TOKEN]\n        envs: [STOWAGE_ALLOW_ENV=CI_JOB_TOKEN]\n", nil,
			"the function declaration sets STOWAGE_ALLOW_ENV in its envs"},
		{"args narrow the operator's list", "        args: [fn, --allow-env, OTHER]\n", []string{"STOWAGE_ALLOW_ENV=CI_JOB_TOKEN"},
			"environment variable CI_JOB_TOKEN may not be read (needed by environment \"jupyter-gpu\"): the exec declaration's --allow-env narrows STOWAGE_ALLOW_ENV and does not list it"},
		{"the operator allows", "        args: [fn]\n", []string{"STOWAGE_ALLOW_ENV=CI_JOB_TOKEN"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := run(declared(tc.decl), tc.operator...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("kustomize build: %v\n%s", err, stderr)
				}
				// The token is in the rendered Secret, base64 inside
				// .dockerconfigjson only.
				if !bytes.Contains(out, []byte("kind: Secret")) || bytes.Contains(out, []byte(token)) {
					t.Errorf("want a Secret holding the token only encoded:\n%s", out)
				}
				return
			}
			if err == nil {
				t.Fatalf("kustomize build succeeded:\n%s", out)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, stderr)
			}
			if strings.Contains(string(out)+stderr, token) || strings.Contains(stderr, "add --allow-env") {
				t.Errorf("the output shows the token or tells the repository how to widen the rule:\n%s%s", out, stderr)
			}
		})
	}
}

// TestKustomizePinChangesOnlyImages builds each pin-mode fixture through
// the real kustomize twice, with the function and without it
// (--enable-alpha-plugins alone skips an exec function), and walks the two
// outputs side by side: they differ only at exactly the fields listed
// (image fields and the config's image places), each the same string with
// "@sha256:<64 hex>" inserted after every reference it pins.
func TestKustomizePinChangesOnlyImages(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := stowagePath(t)
	cases := []struct {
		dir    string
		pinned []string // "Kind/name field"
	}{
		{"testdata/kustomize/pin-custom-resources", []string{
			"ServingRuntime/huggingface-multinode spec.containers[0].image",
			"ServingRuntime/huggingface-multinode spec.workerSpec.containers[0].image",
			"Notebook/scipy spec.template.spec.containers[0].image",
			"PyTorchJob/mnist spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image",
			"PyTorchJob/mnist spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image",
			"PyTorchJob/mnist spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[0].image",
			"Experiment/random spec.trialTemplate.trialSpec.spec.template.spec.containers[0].image",
			"WorkflowTemplate/pipeline spec.templates[1].container.image",
			"WorkflowTemplate/pipeline spec.templates[1].sidecars[0].image",
			"WorkflowTemplate/pipeline spec.templates[2].initContainers[0].image",
			"WorkflowTemplate/pipeline spec.templates[2].script.image",
		}},
		{"testdata/kustomize/pin-places", []string{
			"ConfigMap/jupyter-web-app-config data.spawner_ui_config.yaml",
			"ConfigMap/inferenceservice-config data.agent",
			"ConfigMap/inferenceservice-config data.storageInitializer",
			"Deployment/agent-controller spec.template.spec.containers[0].image",
			"Deployment/agent-controller spec.template.spec.containers[0].args[1]",
			"Deployment/agent-controller spec.template.spec.containers[0].env[0].value",
			"ModelCache/llama spec.loaderImage",
		}},
		{"testdata/kustomize/pin-only", []string{
			"Deployment/web spec.template.spec.containers[0].image",
			"Deployment/web spec.template.spec.containers[1].image",
			"Deployment/web spec.template.spec.initContainers[0].image",
			"CronJob/report spec.jobTemplate.spec.template.spec.containers[0].image",
		}},
	}
	digest := regexp.MustCompile(`@sha256:[0-9a-f]{64}`)
	for _, tc := range cases {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			with, stderr, err := build(t, kustomize, path, tc.dir, execFlags...)
			if err != nil {
				t.Fatalf("kustomize build: %v\n%s", err, stderr)
			}
			without, stderr, err := build(t, kustomize, path, tc.dir, "--enable-alpha-plugins")
			if err != nil {
				t.Fatalf("kustomize build without the function: %v\n%s", err, stderr)
			}
			a, err := kio.FromBytes(without)
			if err != nil {
				t.Fatal(err)
			}
			b, err := kio.FromBytes(with)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) {
				t.Fatalf("%d objects without the function, %d with it", len(a), len(b))
			}
			var got []string
			for i := range a {
				obj := a[i].GetKind() + "/" + a[i].GetName()
				diffNodes(t, a[i].YNode(), b[i].YNode(), "", func(field, was, now string) {
					if !digest.MatchString(now) || digest.ReplaceAllString(now, "") != was {
						t.Errorf("%s %s: %q became %q, not the same image pinned", obj, field, was, now)
					}
					got = append(got, obj+" "+field)
				})
			}
			slices.Sort(got)
			slices.Sort(tc.pinned)
			if strings.Join(got, "\n") != strings.Join(tc.pinned, "\n") {
				t.Errorf("fields pinned:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.pinned, "\n"))
			}
		})
	}
}

// diffNodes walks a and b side by side and calls changed for every scalar
// whose value differs; any other difference (kind, length, keys, tags,
// styles) is a test error.
func diffNodes(t *testing.T, a, b *yaml.Node, field string, changed func(field, was, now string)) {
	t.Helper()
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) || a.Tag != b.Tag {
		t.Errorf("%s: shape differs (kind %v/%v, %d/%d children, tag %s/%s)", field, a.Kind, b.Kind, len(a.Content), len(b.Content), a.Tag, b.Tag)
		return
	}
	switch a.Kind {
	case yaml.ScalarNode:
		if a.Value != b.Value {
			changed(field, a.Value, b.Value)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(a.Content); i += 2 {
			if a.Content[i].Value != b.Content[i].Value {
				t.Errorf("%s: key %q became %q", field, a.Content[i].Value, b.Content[i].Value)
				continue
			}
			f := a.Content[i].Value
			if field != "" {
				f = field + "." + f
			}
			diffNodes(t, a.Content[i+1], b.Content[i+1], f, changed)
		}
	default:
		for i := range a.Content {
			diffNodes(t, a.Content[i], b.Content[i], fmt.Sprintf("%s[%d]", field, i), changed)
		}
	}
}

// TestKustomizeLeftoverWarning: in the image places fixture, the one
// string that reads as an image reference and that no place declares
// reaches the kustomize user as a warning naming the object and field,
// while the build succeeds; the time and the URL beside it do not.
func TestKustomizeLeftoverWarning(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	const dir = "testdata/kustomize/pin-places"
	out, stderr, err := build(t, kustomize, stowagePath(t), dir, execFlags...)
	if err != nil {
		t.Fatalf("kustomize build: %v\n%s", err, stderr)
	}
	// kustomize hands the function its resources without their files:
	// the object names where.
	want := fmt.Sprint("ConfigMap leftover: warning: data.extra-image: \"quay.io/example-org/undeclared:v9\" reads as an image reference and is not pinned: the function leaves it as written, and the site will pull it by tag; declare its place in spec.imagePlaces (kind, path, pattern) so that lock and the function pin it\n")
	if stderr != want {
		t.Errorf("kustomize's stderr:\n%s\nwant exactly:\n%s", stderr, want)
	}
	if !bytes.Contains(out, []byte("extra-image: quay.io/example-org/undeclared:v9\n")) {
		t.Errorf("the undeclared image changed:\n%s", out)
	}
}
