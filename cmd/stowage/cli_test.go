package main

import (
	"bytes"
	"encoding/json"
	"k8s.io/client-go/tools/clientcmd"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/pkgcache"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/words"
	"github.com/stowage/stowage/schema"
)

// cliConfigDir writes a config directory for the CLI tests: the files
// given as name/content pairs, and a stowage.lock.yaml holding the
// stand-in entries of the references in lockRefs.
func cliConfigDir(t *testing.T, lockRefs []string, pairs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, pairs[i]), []byte(pairs[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := &lock.Lock{}
	for _, r := range lockRefs {
		e, err := offlineimage.Entry(r)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(e)
	}
	if err := os.WriteFile(filepath.Join(dir, lock.FileName), l.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cliDefaultImages are the images every puller pins besides its own: the
// default helper (no pause unless a profile sets helper.pause).
var cliDefaultImages = []string{"ghcr.io/stowage/stowage-helper:v0.1.0"}

// cliJupyterConfig is a small valid config.
const cliJupyterConfig = `
environments:
  jupyter:
    image: apache/submarine:jupyter-notebook-0.7.0
profiles:
  notebooks:
    pullers:
      - name: notebooks
        namespace: submarine
        environments: [jupyter]
`

// cliValidDir is cliJupyterConfig with its lock.
func cliValidDir(t *testing.T) string {
	return cliConfigDir(t, append([]string{"apache/submarine:jupyter-notebook-0.7.0"}, cliDefaultImages...),
		"config.yaml", cliJupyterConfig)
}

// cliInvalidDir is a config the schema refuses.
func cliInvalidDir(t *testing.T) string {
	return cliConfigDir(t, cliDefaultImages, "config.yaml", `
profiles:
  notebooks:
    pullers:
      - name: notebooks
        namespace: Tenant_A
        environments: []
`)
}

// TestExitCodes: 0 for success, 1 for invalid input, 2 for a command line
// stowage cannot run.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	valid, invalid := cliValidDir(t), cliInvalidDir(t)
	offline := filepath.Join(repoRoot, "examples", "openpai-offline")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // substring of stderr
	}{
		{"render ok", []string{"render", valid}, 0, ""},
		{"render the offline example", []string{"render", offline}, 0, ""},
		{"vet ok", []string{"vet", valid}, 0, ""},
		{"schema", []string{"schema"}, 0, ""},
		{"openpai services", []string{"openpai", "services", offline}, 0, ""},
		{"render invalid config", []string{"render", invalid}, 1, "Tenant_A"},
		{"vet invalid config", []string{"vet", invalid}, 1, "Tenant_A"},
		{"render a missing directory", []string{"render", filepath.Join(valid, "nope")}, 1, "nope"},
		{"render unknown profile", []string{"render", valid, "--profile", "nope"}, 1, `"nope"`},
		{"openpai services without openpai", []string{"openpai", "services", valid}, 1, "no openpai selection"},
		{"unknown flag", []string{"render", valid, "--bogus"}, 2, "--bogus"},
		{"unknown shorthand flag", []string{"render", "-z", valid}, 2, "-z"},
		{"no command prints help", nil, 0, ""},
		{"command group prints help", []string{"openpai"}, 0, ""},
		{"unknown command", []string{"rendr", valid}, 2, `unknown command "rendr" for "stowage"; did you mean "render"?`},
		{"unknown subcommand", []string{"openpai", "servics"}, 2, `"servics"`},
		{"too many arguments", []string{"render", valid, valid}, 2, "accepts at most 1 arg"},
		{"vet with too many arguments", []string{"vet", valid, valid}, 2, "accepts at most 1 arg"},
		{"fn with an argument", []string{"fn", "extra"}, 2, `unknown command "extra" for "stowage fn"`},
		{"schema takes no arguments", []string{"schema", valid}, 2, "unknown command"},
		{"--check needs --output-dir", []string{"render", valid, "--check"}, 2, "--check needs --output-dir"},
		{"bad output format", []string{"openpai", "services", offline, "-o", "xml"}, 2, `"xml"`},
		{"status bad output format", []string{"status", valid, "-o", "xml"}, 2, `-o "xml": not a format; want one of text, json, yaml`},
		{"status zero timeout", []string{"status", valid, "--timeout", "0s"}, 2, "--timeout and --deadline must be positive"},
		{"status invalid config", []string{"status", invalid, "--kubeconfig", "/nonexistent"}, 1, "Tenant_A"},
		{"status without a cluster", []string{"status", valid, "--kubeconfig", filepath.Join(valid, "no-kubeconfig")}, 1,
			"no cluster to read: --kubeconfig " + filepath.Join(valid, "no-kubeconfig") + ": no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr does not say %q:\n%s", tc.stderr, stderr)
			}
			if tc.code == 2 && !strings.Contains(stderr, "stowage --help") {
				t.Errorf("a usage error should point at --help:\n%s", stderr)
			}
		})
	}
}

// TestStatusNoKubeconfig: without --kubeconfig, KUBECONFIG, ~/.kube/config
// or a pod, status says so without client-go's KUBERNETES_MASTER hint;
// with --kubeconfig it does not advise passing one.
func TestStatusNoKubeconfig(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		t.Skip("a kubeconfig at " + clientcmd.RecommendedHomeFile + " or a pod's environment: no way to test the empty case here")
	}
	valid := cliValidDir(t)
	_, stderr, code := runCLI(t, nil, "status", valid)
	if code != 1 || strings.Contains(stderr, "KUBERNETES_MASTER") || !strings.Contains(stderr, "no cluster to read: no kubeconfig ($KUBECONFIG or ~/.kube/config) and not in a pod: pass --kubeconfig") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	_, stderr, code = runCLI(t, nil, "status", valid, "--kubeconfig", filepath.Join(valid, "none"))
	if code != 1 || strings.Contains(stderr, "pass --kubeconfig") {
		t.Errorf("with --kubeconfig: exit %d, %q", code, stderr)
	}
}

// TestFnHelpHidesStack: kyaml's debugging flag --stack is hidden from
// `stowage fn --help` (it still parses).
func TestFnHelpHidesStack(t *testing.T) {
	t.Parallel()
	stdout, _, code := runCLI(t, nil, "fn", "--help")
	if code != 0 || strings.Contains(string(stdout), "stack") || !strings.Contains(string(stdout), "--allow-env") {
		t.Errorf("fn --help: exit %d:\n%s\nwant --allow-env and no --stack", code, stdout)
	}
}

// TestMissingEnv: a password variable that
// is not set fails the render, naming the variable and the environment.
func TestMissingEnv(t *testing.T) {
	t.Parallel()
	dir := cliConfigDir(t, append([]string{"harbor.lab.internal/release/notebook:1.1.0"}, cliDefaultImages...),
		"config.yaml", `
environments:
  notebook:
    image: harbor.lab.internal/release/notebook:1.1.0
    auth:
      username: u
      password: env:NOT_SET_ANYWHERE
profiles:
  notebooks:
    pullers:
      - name: notebooks
        namespace: submarine
        environments: [notebook]
`)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := runCLI(t, map[string]string{"OTHER": "x", "STOWAGE_ALLOW_ENV": "NOT_SET_ANYWHERE"}, "render", dir, "--output-dir", out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	located := filepath.Join(dir, "config.yaml") + ":7:7: environments.notebook.auth.password: environment variable NOT_SET_ANYWHERE is not set"
	for _, w := range []string{located, `environment "notebook"`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not name %s:\n%s", w, stderr)
		}
	}
	if len(stdout) != 0 {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written (%v)", out, err)
	}
	// vet reads no secret but refuses what render refuses, naming the
	// variable and what needs it; with the variable set it passes.
	if _, stderr, code := runCLI(t, map[string]string{"STOWAGE_ALLOW_ENV": "NOT_SET_ANYWHERE"}, "vet", dir); code != 1 || !strings.Contains(stderr, located) || !strings.Contains(stderr, `environment "notebook"`) {
		t.Errorf("vet without the variable: exit %d: %s; want 1 naming it", code, stderr)
	}
	if _, stderr, code := runCLI(t, map[string]string{"NOT_SET_ANYWHERE": "s3cret", "STOWAGE_ALLOW_ENV": "NOT_SET_ANYWHERE"}, "vet", dir); code != 0 {
		t.Errorf("vet with the variable set: exit %d: %s", code, stderr)
	}
	// With the variable set, render succeeds.
	if _, stderr, code := runCLI(t, map[string]string{"NOT_SET_ANYWHERE": "s3cret", "STOWAGE_ALLOW_ENV": "NOT_SET_ANYWHERE"}, "render", dir); code != 0 {
		t.Errorf("render with the variable set: exit %d: %s", code, stderr)
	}
}

// TestRenderCheck: --check exits 0 on fresh output and 1 on stale output,
// listing every file that differs, and writes nothing.
func TestRenderCheck(t *testing.T) {
	t.Parallel()
	dir := cliValidDir(t)
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out); code != 0 {
		t.Fatalf("render -o: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out, "--check"); code != 0 {
		t.Fatalf("--check on fresh output: exit %d: %s", code, stderr)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		if e.Name() != "kustomization.yaml" {
			files = append(files, e.Name())
		}
	}
	slices.Sort(files)
	if len(files) < 2 {
		t.Fatalf("rendered %v, want at least two objects", files)
	}
	// Make it stale three ways.
	changed, missing := files[0], files[1]
	if err := os.WriteFile(filepath.Join(out, changed), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, missing)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "extra.yaml"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := cliSnapshot(t, out)
	_, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out, "--check")
	if code != 1 {
		t.Errorf("--check on stale output: exit %d, want 1", code)
	}
	for _, w := range []string{"changed " + changed, "missing " + missing, "extra extra.yaml", "is stale"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if after := cliSnapshot(t, out); !maps.Equal(before, after) {
		t.Errorf("--check changed %s", out)
	}
}

// TestRenderLeavesOutputOnFailure: a failing render -o leaves an existing
// output directory as it was and no staging directory beside it, whether
// the config is invalid or the lock lacks an entry.
func TestRenderLeavesOutputOnFailure(t *testing.T) {
	t.Parallel()
	noLock := cliConfigDir(t, nil, "config.yaml", cliJupyterConfig)
	for name, dir := range map[string]string{"invalid config": cliInvalidDir(t), "missing lock entries": noLock} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "prepull")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "kustomization.yaml"), []byte("resources: [old.yaml]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "old.yaml"), []byte("kind: ConfigMap\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := cliSnapshot(t, out)
			_, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", out)
			if code != 1 {
				t.Errorf("exit %d, want 1: %s", code, stderr)
			}
			if after := cliSnapshot(t, out); !maps.Equal(before, after) {
				t.Errorf("%s changed: %v -> %v", out, before, after)
			}
			ents, _ := os.ReadDir(parent)
			if len(ents) != 1 || ents[0].Name() != "prepull" {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("%s holds %v, want only prepull (no staging directory left)", parent, names)
			}
		})
	}
}

// cliSnapshot maps each file of dir to its content.
func cliSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// TestVetExamples: vet passes on both examples with the Submarine
// example's password variable set (vet checks it is set, as render would),
// and says so in one line per profile: its pre-pulled images and the pull
// Secrets to create.
func TestVetExamples(t *testing.T) {
	t.Parallel()
	for ex, want := range map[string]string{
		"openpai-offline":     "ok: profile offline: 16 images pre-pulled\n",
		"submarine-notebooks": "ok: profile notebooks: 4 images pre-pulled, 1 pull Secret to create\n",
	} {
		stdout, stderr, code := runCLI(t, map[string]string{"SUBMARINE_HARBOR_PASSWORD": "x", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}, "vet", filepath.Join(repoRoot, "examples", ex))
		if code != 0 || string(stdout) != want {
			t.Errorf("vet %s: exit %d, stdout %q, stderr %s", ex, code, stdout, stderr)
		}
	}
}

// TestVetNamesExternalSecrets: vet -v says which pull Secrets the user
// must create and where: the Submarine example's existing Secret, in the
// puller's namespace and both tenants', for the registry the nodes pull
// from (the example's site registry, its Harbor).
func TestVetNamesExternalSecrets(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCLI(t, map[string]string{"SUBMARINE_HARBOR_PASSWORD": "x", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}, "vet", "-v", filepath.Join(repoRoot, "examples", "submarine-notebooks"))
	want := "ok: profile notebooks: 4 images pre-pulled, 1 pull Secret to create\n" +
		"stowage names these pull Secrets but does not render them; create each, a kubernetes.io/dockerconfigjson Secret with the registry's credentials, in every namespace listed (tenants' pods must present the same credentials to the kubelet):\n" +
		"  profile notebooks: Secret submarine-dockerhub (harbor.submarine.lab.internal:5000; environment \"jupyter-chinese\") in submarine, tenant-a, tenant-b\n"
	if code != 0 || !strings.HasPrefix(string(stdout), want) {
		t.Errorf("exit %d, stderr %s\nstdout:\n%s\nwant it to start with:\n%s", code, stderr, stdout, want)
	}
	// Then who may use each pre-pulled copy offline, by the kubelet's rule.
	for _, line := range []string{
		"offline use of the pre-pulled images (" + plan.KubeletRule + "):\n",
		"  profile notebooks: harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0@sha256:d35c3aac9ab2a974fd37636040d8fdb098790f3ddcc0100dbaa8814eee19eb45: any pod\n",
		"  profile notebooks: harbor.submarine.lab.internal:5000/dockerhub/apache/submarine:jupyter-notebook-0.7.0-chinese@sha256:7811b08e2c9f9fa1e8bd441b29cef307f79c4ba06ae7d384ea71771d66fff518: pods presenting credentials equal to Secret submarine-dockerhub (submarine-dockerhub in submarine, tenant-a, tenant-b, or any Secret with the same credentials for harbor.submarine.lab.internal:5000)\n",
	} {
		if !strings.Contains(string(stdout), line) {
			t.Errorf("vet output lacks %q:\n%s", line, stdout)
		}
	}
	// Nothing to create: no such lines.
	if stdout, _, _ := runCLI(t, nil, "vet", "-v", filepath.Join(repoRoot, "examples", "openpai-offline")); strings.Contains(string(stdout), "pull Secrets") || strings.Contains(string(stdout), "equal to Secret") {
		t.Errorf("vet openpai-offline:\n%s", stdout)
	}
}

// TestVetJSON: vet -o json prints the verdict, the Secrets to create and
// every error with its place on stdout, on success and on failure, with
// the same exit codes as the text output.
func TestVetJSON(t *testing.T) {
	t.Parallel()
	decode := func(t *testing.T, stdout []byte) v1alpha1.VetReport {
		t.Helper()
		var r v1alpha1.VetReport
		dec := json.NewDecoder(bytes.NewReader(stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stdout is not vet's JSON report: %v\n%s", err, stdout)
		}
		return r
	}
	stdout, stderr, code := runCLI(t, map[string]string{"SUBMARINE_HARBOR_PASSWORD": "x", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}, "vet", filepath.Join(repoRoot, "examples", "submarine-notebooks"), "-o", "json")
	r := decode(t, stdout)
	want := []v1alpha1.VetSecret{{Profile: "notebooks", Name: "submarine-dockerhub", Registry: "harbor.submarine.lab.internal:5000",
		UsedBy: []string{`environment "jupyter-chinese"`}, Namespaces: []string{"submarine", "tenant-a", "tenant-b"}}}
	if code != 0 || len(stderr) != 0 || !r.OK || !slices.Equal(r.Profiles, []string{"notebooks"}) || r.Objects != 7 ||
		r.PinnedDigests != nil || len(r.Errors) != 0 || !reflect.DeepEqual(r.ExternalSecrets, want) {
		t.Errorf("exit %d, stderr %s, report %+v", code, stderr, r)
	}
	if len(r.Images) != 4 || !r.Images[2].OfflineUse.AnyPod || r.Images[1].OfflineUse.AnyPod ||
		len(r.Images[1].OfflineUse.Secrets) != 1 || r.Images[1].OfflineUse.Secrets[0].Secret != "submarine-dockerhub" {
		t.Errorf("images = %+v, want 4, the public notebook open to any pod, the Docker Hub one only with submarine-dockerhub", r.Images)
	}

	dir := cliInvalidDir(t)
	stdout, stderr, code = runCLI(t, nil, "vet", dir, "-o", "json")
	r = decode(t, stdout)
	if code != 1 || r.OK || len(r.Errors) == 0 || !strings.Contains(string(stderr), "Tenant_A") {
		t.Fatalf("exit %d, stderr %s, report %+v", code, stderr, r)
	}
	i := slices.IndexFunc(r.Errors, func(e v1alpha1.ReportError) bool { return e.Field == "profiles.notebooks.pullers[0].namespace" })
	if i < 0 {
		t.Fatalf("no error at the namespace: %+v", r.Errors)
	}
	if e := r.Errors[i]; e.File != filepath.Join(dir, "config.yaml") || e.Line != 6 || e.Column < 1 || !strings.Contains(e.Message, `"Tenant_A"`) {
		t.Errorf("namespace error %+v", e)
	}

	// A password variable the operator did not allow: the error at the
	// auth.password that names it.
	sub := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	stdout, stderr, code = runCLI(t, nil, "vet", sub, "-o", "json")
	r = decode(t, stdout)
	wantErr := []v1alpha1.ReportError{{File: filepath.Join(sub, "environments.yaml"), Line: 13, Column: 7, Field: `environments."jupyter-gpu".auth.password`,
		Message: `environment variable SUBMARINE_HARBOR_PASSWORD may not be read (needed by environment "jupyter-gpu"): stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV (set in the CI job's or the repository server's environment, never by the repository)`}}
	if code != 1 || r.OK || !reflect.DeepEqual(r.Errors, wantErr) || !strings.Contains(stderr, wantErr[0].Message) {
		t.Errorf("password not allowed: exit %d, errors %+v, want %+v; stderr:\n%s", code, r.Errors, wantErr, stderr)
	}

	if stdout, _, code := runCLI(t, nil, "vet", dir, "-o", "xml"); code != 2 || len(stdout) != 0 {
		t.Errorf("vet -o xml: exit %d, stdout %q; want 2 and nothing", code, stdout)
	}
}

// TestSchemaCommand: `stowage schema` prints the embedded schema as is.
func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCLI(t, nil, "schema")
	if code != 0 || !bytes.Equal(stdout, schema.Source) {
		t.Errorf("exit %d, stderr %s; stdout equals the embedded schema: %v", code, stderr, bytes.Equal(stdout, schema.Source))
	}
	if !bytes.Contains(stdout, []byte("#Config: {")) {
		t.Errorf("the schema has no #Config")
	}
}

// TestOpenPAIServices: `openpai services` on the offline example lists
// exactly the twelve services of the reduced set (job submission and the
// web portal), in every format, with the bytes saved per role.
func TestOpenPAIServices(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot, "examples", "openpai-offline")
	kept := []string{"cluster-configuration", "database-controller", "device-plugin", "frameworkcontroller",
		"hivedscheduler", "internal-storage", "log-manager", "openpai-runtime", "postgresql", "pylon",
		"rest-server", "webportal"}

	stdout, stderr, code := runCLI(t, nil, "openpai", "services", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep v1alpha1.OpenPAIServicesReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, stdout)
	}
	if rep.Version != "v1.5.0" || !slices.Equal(rep.Kept, kept) {
		t.Errorf("kept = %v, want %v", rep.Kept, kept)
	}
	if len(rep.Kept)+len(rep.Dropped) != 27 {
		t.Errorf("%d kept + %d dropped, want the 27 k8s services of v1.5.0", len(rep.Kept), len(rep.Dropped))
	}
	for _, s := range kept {
		if slices.Contains(rep.Dropped, s) {
			t.Errorf("%s is both kept and dropped", s)
		}
	}
	if !strings.HasPrefix(rep.Paictl, "./paictl.py service start -n ") || len(strings.Fields(rep.Paictl)) != 4+12 {
		t.Errorf("paictl = %q, want the twelve services after -n", rep.Paictl)
	}
	// Bytes per role, from the sizes observed in OpenPAI issue #5381. The
	// master saves the dropped master-only images: alertmanager, watchdog,
	// prometheus (+busybox), grafana, fluentd, the dashboard and the three
	// marketplace images (36.1+48.6+112+1.22+285+279+122+348+1000+1190 MB).
	saved := map[string]int64{}
	for _, b := range rep.Bytes {
		if b.Saved != b.Full-b.Reduced || b.Saved < 0 {
			t.Errorf("%s: saved %d != full %d - reduced %d", b.Role, b.Saved, b.Full, b.Reduced)
		}
		saved[string(b.Role)] = b.Saved
	}
	if saved["master"] != 3_421_920_000 {
		t.Errorf("master saves %d bytes, want 3421920000", saved["master"])
	}
	if len(rep.Bytes) != 3 {
		t.Errorf("bytes for %d roles, want master, worker and all", len(rep.Bytes))
	}

	// Bytes to mirror from the lock's recorded sizes, per role: every
	// image of the reduced set is in the example's lock, and the sum is
	// the lock's sizes (an index's every child).
	l, err := lock.Parse(readFile(t, filepath.Join(dir, lock.FileName)), "lock")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Locked) != 3 {
		t.Fatalf("locked bytes for %d roles, want 3", len(rep.Locked))
	}
	for _, b := range rep.Locked {
		var want int64
		for _, s := range rep.SourceImages[b.Role] {
			ref, err := imageref.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := l.Lookup(ref.Key())
			if !ok {
				t.Fatalf("%s not in the example's lock", s)
			}
			want += e.Size
			for _, p := range e.Platforms {
				want += p.Size
			}
		}
		if b.CompressedBytes != want || b.Unlocked != 0 || b.Images != len(rep.SourceImages[b.Role]) || want == 0 {
			t.Errorf("%s: locked %+v, want %d bytes over %d images, none unlocked", b.Role, b, want, len(rep.Images[b.Role]))
		}
	}

	// The images are listed as the rendered ConfigMap lists them: at the
	// site registry, pinned.
	out, stderr, code := runCLI(t, nil, "render", dir)
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, stderr)
	}
	listed := renderedImages(t, out)
	for r, images := range rep.Images {
		if len(images) == 0 || len(images) != len(rep.SourceImages[r]) {
			t.Errorf("role %s: %d images, %d source images", r, len(images), len(rep.SourceImages[r]))
		}
		for _, s := range images {
			if _, ok := listed[s]; !ok || !strings.HasPrefix(s, "registry.pai.lab.internal:5000/") || !strings.Contains(s, "@sha256:") {
				t.Errorf("role %s lists %s, which the rendered output does not name", r, s)
			}
		}
	}

	for _, format := range []string{"text", "table", "markdown"} {
		stdout, stderr, code := runCLI(t, nil, "openpai", "services", dir, "-o", format)
		if code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, code, stderr)
		}
		text := string(stdout)
		if !strings.Contains(text, "12 services kept, 15 dropped") {
			t.Errorf("-o %s does not count 12 kept and 15 dropped:\n%s", format, text)
		}
		for _, s := range append(slices.Clone(kept), rep.Dropped...) {
			if !strings.Contains(text, s) {
				t.Errorf("-o %s does not list %s", format, s)
			}
		}
		for _, b := range rep.Bytes {
			if !strings.Contains(text, words.Bytes(b.Saved)) {
				t.Errorf("-o %s does not show the %s bytes saved (%s):\n%s", format, b.Role, words.Bytes(b.Saved), text)
			}
		}
		if !strings.Contains(text, "compressed layers") || !strings.Contains(text, "npacked image sizes observed") {
			t.Errorf("-o %s does not label what each byte column measures:\n%s", format, text)
		}
		if !strings.Contains(text, "3.42GB") {
			t.Errorf("-o %s does not show the master's 3.42GB saved", format)
		}
		// Why each service is kept: the feature and the chain.
		if !strings.Contains(text, "feature job-submission: rest-server -> postgresql -> internal-storage") {
			t.Errorf("-o %s does not say why internal-storage is kept:\n%s", format, text)
		}
		// The worker role drops 3 images of unknown size: its saved bytes
		// are unknown, never "0B" alone.
		if !strings.Contains(text, "0B + 3 unsized") {
			t.Errorf("-o %s does not mark the worker's unsized saved bytes:\n%s", format, text)
		}
	}
	if b := rep.Bytes[1]; b.Role != "worker" || b.UnsizedSaved != 3 || b.Saved != 0 {
		t.Errorf("worker bytes = %+v, want 0 saved with 3 unsized dropped images", b)
	}
	if r := rep.KeptBy["pylon"]; r.Feature != "webportal" || !slices.Equal(r.Chain, []string{"pylon"}) {
		t.Errorf("keptBy[pylon] = %+v, want feature webportal, chain [pylon]", r)
	}
	if len(rep.KeptBy) != len(kept) {
		t.Errorf("keptBy has %d services, want %d", len(rep.KeptBy), len(kept))
	}
}

// TestOpenPAIPackageCache: `openpai package-cache` writes the exact
// package_cache_info the runtime image build reads (the committed copy in
// examples/openpai-offline/runtime/ is what the example's build uses), in
// the three-column format the runtime's reader accepts, to stdout or to a
// file; a directory for -o and a profile without rows are refused.
func TestOpenPAIPackageCache(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot, "examples", "openpai-offline")
	committed := readFile(t, filepath.Join(dir, "runtime", "package_cache_info"))
	stdout, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !bytes.Equal(stdout, committed) {
		t.Errorf("stdout differs from examples/openpai-offline/runtime/package_cache_info (regenerate it with stowage openpai package-cache examples/openpai-offline --output-file examples/openpai-offline/runtime/package_cache_info):\n%s", stdout)
	}
	rows, err := pkgcache.Parse(bytes.NewReader(stdout), "package_cache_info")
	if err != nil || len(rows) != 8 {
		t.Fatalf("Parse: %d rows, %v; want the example's 8", len(rows), err)
	}
	if rows[0].Group != "azurefile" || rows[0].OS != "ubuntu16.04" || strings.Join(rows[0].Packages, " ") != "cifs-utils sshpass" {
		t.Errorf("first row %+v, want azurefile,ubuntu16.04,cifs-utils sshpass", rows[0])
	}

	out := filepath.Join(t.TempDir(), "package_cache_info")
	if _, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "--output-file", out); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, stderr)
	}
	if got := readFile(t, out); !bytes.Equal(got, committed) {
		t.Errorf("-o wrote %q, want %q", got, committed)
	}
	if _, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "--output-file", t.TempDir()); code != 1 || !strings.Contains(stderr, "is a directory") || !strings.Contains(stderr, "package_cache_info") {
		t.Errorf("-o DIR: exit %d, %q; want 1 naming the file to give", code, stderr)
	}
	// A second -o onto the file it wrote replaces it.
	if _, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "--output-file", out); code != 0 {
		t.Fatalf("-o again: exit %d: %s", code, stderr)
	}
	sub := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	if _, stderr, code := runCLI(t, nil, "openpai", "package-cache", sub); code != 1 || !strings.Contains(stderr, "no packageCache rows") {
		t.Errorf("no rows: exit %d, %q; want 1", code, stderr)
	}
}

// TestOpenPAIPackageCacheOutputChecked: package-cache -o never overwrites
// the config, the lock, or a file stowage did not write (README.md, a file
// without the marker line, a symbolic link), exit 1 with the file
// unchanged; -o json is refused as a format name (exit 2, nothing created)
// and the deprecated -o ./json writes that file.
func TestOpenPAIPackageCacheOutputChecked(t *testing.T) {
	// Not parallel: t.Chdir (-o ./json is relative to the working
	// directory, which is the process's).
	dir := filepath.Join(t.TempDir(), "cfg")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "examples", "openpai-offline"))); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "README.md")
	other := filepath.Join(t.TempDir(), "package_cache_info")
	if err := os.WriteFile(other, []byte("azurefile,ubuntu16.04,cifs-utils\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{filepath.Join(dir, "site.cue"), "is a config file"},
		{filepath.Join(dir, "stowage.lock.yaml"), "is the lock file"},
		{foreign, "stowage did not write it"},
		{other, "stowage did not write it"},
		{link, "not a regular file"},
	} {
		before, _ := os.ReadFile(c.target)
		_, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "--output-file", c.target)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("-o %s: exit %d, %q; want 1 saying %q", c.target, code, stderr, c.want)
		}
		if after, _ := os.ReadFile(c.target); !bytes.Equal(after, before) {
			t.Errorf("-o %s changed the file", c.target)
		}
	}
	wd := t.TempDir()
	t.Chdir(wd)
	_, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "-o", "json")
	if code != 2 || !strings.Contains(stderr, "--output-file ./json") {
		t.Errorf("-o json: exit %d, %q; want 2 with the hint", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(wd, "json")); err == nil {
		t.Errorf("-o json created a file")
	}
	// -o PATH, the spelling before --output-file, still writes, with a note.
	if _, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "-o", "./json"); code != 0 || !strings.Contains(stderr, "deprecated; say --output-file ./json") {
		t.Errorf("-o ./json: exit %d, %q; want 0 and the deprecation note", code, stderr)
	}
	if got := readFile(t, filepath.Join(wd, "json")); !bytes.HasPrefix(got, []byte("# written by stowage openpai package-cache")) {
		t.Errorf("-o ./json wrote %q", got)
	}
}

// TestOutputConventions: -o is a format and destinations have flags of
// their own. render -o named like another command's format is refused with
// the --output-dir hint (kubectl's formats too: wide, jsonpath=…), -o - and --output-dir - are refused (exit 2, no
// directory named - created), -o json needs --check; the old -o DIR still
// renders, with a note; package-cache --output-file - is stdout; bump
// --pr-body - and --render - are refused before anything is read.
func TestOutputConventions(t *testing.T) {
	// Not parallel: t.Chdir (the refused -o values are relative to the
	// working directory, which is the process's).
	dir, err := filepath.Abs(filepath.Join(repoRoot, "examples", "openpai-offline"))
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"render", dir, "-o", "table"}, "--output-dir ./table"},
		{[]string{"render", dir, "-o", "xml"}, "--output-dir ./xml"},
		{[]string{"render", dir, "-o", "wide"}, "--output-dir ./wide"},
		{[]string{"render", dir, "-o", "jsonpath={.items[*].metadata.name}"}, "jsonpath={.items[*].metadata.name}: render prints yaml, text or json (the -o formats it has)\n"},
		{[]string{"render", dir, "-o", "-"}, "writes to stdout by default"},
		{[]string{"render", dir, "--output-dir", "-"}, "--output-dir -: render writes the manifests to stdout"},
		{[]string{"render", dir, "-o", "json"}, "-o json is the report of --check"},
		{[]string{"render", dir, "-o", "out", "--output-dir", "out2"}, "give the destination with --output-dir alone"},
		{[]string{"openpai", "package-cache", dir, "-o", "-"}, "writes to stdout by default"},
		{[]string{"bump", dir, "--pr-body", "-"}, "--pr-body -: stdout carries the title and body already"},
		{[]string{"bump", dir, "--render", "-"}, "--render -: --render is the directory"},
		{[]string{"version", "-o", "xml"}, `-o "xml": not a format; want one of text, json, yaml`},
	} {
		_, stderr, code := runCLI(t, nil, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Errorf("refused commands created %v", entries)
	}

	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code := runCLI(t, nil, "render", dir, "-o", out)
	if code != 0 || !strings.Contains(stderr, "render -o PATH is deprecated; say --output-dir "+out) {
		t.Errorf("render -o DIR: exit %d, %q; want 0 and the deprecation note", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "kustomization.yaml")); err != nil {
		t.Errorf("render -o DIR wrote no kustomization.yaml: %v", err)
	}
	if _, stderr, code := runCLI(t, nil, "render", dir, "--output-dir", "json"); code != 0 {
		t.Errorf("--output-dir json: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(wd, "json", "kustomization.yaml")); err != nil {
		t.Errorf("--output-dir json wrote no kustomization.yaml: %v", err)
	}
	want, _, _ := runCLI(t, nil, "openpai", "package-cache", dir)
	got, stderr, code := runCLI(t, nil, "openpai", "package-cache", dir, "--output-file", "-")
	if code != 0 || !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("--output-file -: exit %d, %s; stdout %q, want %q", code, stderr, got, want)
	}
}

// TestProfileCompletion: shell completion of --profile offers the config's
// profile names, for every command that has the flag.
func TestProfileCompletion(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot, "examples", "openpai-offline")
	for _, cmd := range [][]string{{"render"}, {"vet"}, {"openpai", "services"}, {"openpai", "package-cache"}} {
		args := append(append([]string{"__complete"}, cmd...), dir, "--profile", "")
		stdout, stderr, code := runCLI(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
		if len(lines) != 2 || lines[0] != "offline" || lines[1] != ":4" {
			t.Errorf("%v: completion %q, want the profile offline and no file completion (:4)", cmd, stdout)
		}
	}
}

// TestRenderCheckDiff: render --check shows a unified diff of a changed
// file (the committed lines against the rendered ones), bounded, and when
// the directory holds a file stowage did not write, advice that works
// (move it out first) instead of a render command that would be refused.
func TestRenderCheckDiff(t *testing.T) {
	t.Parallel()
	config := filepath.Join(repoRoot, "examples", "gitops-flux", "config")
	committed := filepath.Join(repoRoot, "examples", "gitops-flux", "clusters", "prod", "prepull")
	out := filepath.Join(t.TempDir(), "prepull")
	if err := os.CopyFS(out, os.DirFS(committed)); err != nil {
		t.Fatal(err)
	}
	name := "daemonset-submarine-notebook-images.yaml"
	orig := readFile(t, filepath.Join(out, name))
	changed := strings.Replace(string(orig), "imagePullPolicy: IfNotPresent", "imagePullPolicy: Always", 1)
	if changed == string(orig) {
		t.Fatal("the example has no imagePullPolicy to change")
	}
	if err := os.WriteFile(filepath.Join(out, name), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, nil, "render", config, "--output-dir", out, "--check")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{"changed " + name, "(committed)", "(rendered now)", "@@ ", "-        imagePullPolicy: Always", "+        imagePullPolicy: IfNotPresent", "Run `stowage render"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "\n"); n > output.DiffTotalLines+20 {
		t.Errorf("%d lines of output, want at most about %d", n, output.DiffTotalLines)
	}

	if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, nil, "render", config, "--output-dir", out, "--check")
	if code != 1 || !strings.Contains(stderr, "extra notes.txt") || !strings.Contains(stderr, "Move those files out of "+out) {
		t.Errorf("with a foreign file: exit %d, want 1 with advice to move it out first:\n%s", code, stderr)
	}
}

// TestWrongDirectoryNamed: run on rendered output or on a kustomization,
// the commands that read a config directory say what the directory is, in
// one message, instead of CUE conflicts. vet and lock take a kustomization
// that runs stowage as a KRM function (TestLockKustomizationThenBuild), and
// name one that does not.
func TestWrongDirectoryNamed(t *testing.T) {
	t.Parallel()
	rendered := filepath.Join(repoRoot, "examples", "gitops-flux", "clusters", "prod", "prepull")
	kustomization := filepath.Join(repoRoot, "examples", "gitops-argo", "prepull")
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, "kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type dirWant struct{ dir, want string }
	cases := map[string][]dirWant{
		"render":           {{rendered, "is the output of `stowage render --output-dir`"}, {kustomization, "is a kustomization (kustomization.yaml)"}},
		"openpai services": {{rendered, "is the output of `stowage render --output-dir`"}, {kustomization, "is a kustomization (kustomization.yaml)"}},
		"vet":              {{rendered, "is the output of `stowage render --output-dir`"}, {plain, "kustomization.yaml declares no stowage KRM function in its transformers"}},
		"lock --check":     {{rendered, "is the output of `stowage render --output-dir`"}, {plain, "kustomization.yaml declares no stowage KRM function in its transformers"}},
	}
	for cmd, dws := range cases {
		for _, dw := range dws {
			words := strings.Fields(cmd)
			args := append(append([]string{}, words[0]), dw.dir)
			if words[0] == "openpai" {
				args = []string{"openpai", "services", dw.dir}
			} else {
				args = append(args, words[1:]...)
			}
			_, stderr, code := runCLI(t, nil, args...)
			if code != 1 || !strings.Contains(stderr, dw.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("%v: exit %d, %q; want 1 and one line saying it %s", args, code, stderr, dw.want)
			}
		}
	}
}

// TestInputErrorsAreNotUsage: a --ca-file without a PEM certificate (lock,
// vet --remote, bump, mirror) and mirror --to oci: naming a directory that
// holds files but is no OCI layout are bad input, exit 1 without usage
// help; a bad flag value (--jobs 0) stays a usage error, exit 2.
func TestInputErrorsAreNotUsage(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	tmp := t.TempDir()
	ca := filepath.Join(tmp, "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notLayout := filepath.Join(tmp, "notes")
	if err := os.MkdirAll(notLayout, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notLayout, "x"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SUBMARINE_HARBOR_PASSWORD": "x", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}
	empty := filepath.Join(tmp, "bundle")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lock", dir, "--ca-file", ca}, 1, "CA file " + ca + ": no PEM certificate in it"},
		{[]string{"vet", dir, "--remote", "--ca-file", ca}, 1, "no PEM certificate in it"},
		{[]string{"bump", dir, "--ca-file", ca}, 1, "no PEM certificate in it"},
		{[]string{"mirror", dir, "--to", "oci:" + empty, "--ca-file", ca}, 1, "no PEM certificate in it"},
		{[]string{"mirror", dir, "--to", "oci:" + notLayout}, 1, "is not an OCI image layout"},
		{[]string{"mirror", dir, "--to", "oci:" + empty, "--jobs", "0"}, 2, "jobs must be at least 1"},
	} {
		_, stderr, code := runCLI(t, env, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
		if usage := strings.Contains(stderr, "for usage"); usage != (c.code == 2) {
			t.Errorf("%v: usage hint shown %v, want %v: %q", c.args, usage, c.code == 2, stderr)
		}
	}
}

// TestVetRefusesWhatRenderRefuses: a file: password source that leads
// outside the config directory (a symbolic link to a file beside it) and
// an unset env: variable make vet exit 1 with render's words, without the
// file's content in any output.
func TestVetRefusesWhatRenderRefuses(t *testing.T) {
	t.Parallel()
	refs := append([]string{"apache/submarine:jupyter-notebook-0.7.0", "registry.example/app:1.0"}, cliDefaultImages...)
	config := cliJupyterConfig + `
images:
  app:
    reference: registry.example/app:1.0
    auth: {username: robot, password: "file:pw"}
`
	config = strings.Replace(config, "environments: [jupyter]", "environments: [jupyter]\n        images: [app]", 1)
	dir := cliConfigDir(t, refs, "config.yaml", config)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte(confinedCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "pw")); err != nil {
		t.Fatal(err)
	}
	_, renderErr, rcode := runCLI(t, map[string]string{}, "render", dir)
	stdout, stderr, code := runCLI(t, map[string]string{}, "vet", dir)
	want := "password file " + filepath.Join(dir, "pw") + ": leads outside the directory " + dir
	if code != 1 || rcode != 1 || !strings.Contains(stderr, want) || !strings.Contains(renderErr, want) {
		t.Errorf("vet exit %d %q, render exit %d %q; want both 1 with %q", code, stderr, rcode, renderErr, want)
	}
	if strings.Contains(stderr, confinedCanary) || strings.Contains(string(stdout), confinedCanary) {
		t.Errorf("vet shows the file's content")
	}
}

// TestRenderCheckJSON: render --check --format json prints one object on
// stdout with the check's exit code: the files that differ with their
// status, the entries stowage did not write, the diff printed on stderr,
// and errors located as vet -o json locates them; --format without
// --check, or with another value, is a usage error.
func TestRenderCheckJSON(t *testing.T) {
	t.Parallel()
	config := filepath.Join(repoRoot, "examples", "gitops-flux", "config")
	committed := filepath.Join(repoRoot, "examples", "gitops-flux", "clusters", "prod", "prepull")
	out := filepath.Join(t.TempDir(), "prepull")
	if err := os.CopyFS(out, os.DirFS(committed)); err != nil {
		t.Fatal(err)
	}
	decode := func(t *testing.T, stdout []byte) v1alpha1.RenderCheckReport {
		t.Helper()
		var r v1alpha1.RenderCheckReport
		dec := json.NewDecoder(bytes.NewReader(stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stdout is not render --check's JSON report: %v\n%s", err, stdout)
		}
		if dec.More() {
			t.Fatalf("stdout holds more than the report:\n%s", stdout)
		}
		return r
	}

	stdout, stderr, code := runCLI(t, nil, "render", config, "--output-dir", out, "--check", "-o", "json")
	want := "{\n  \"ok\": true,\n  \"dir\": \"" + out + "\",\n  \"changed\": [],\n  \"foreign\": [],\n  \"diff\": \"\",\n  \"errors\": []\n}\n"
	if code != 0 || len(stderr) != 0 || string(stdout) != want {
		t.Errorf("fresh output: exit %d, stderr %s, stdout\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	// The same report as YAML with -o yaml given; the default -o prints
	// none (the text report is on stderr).
	stdout, stderr, code = runCLI(t, nil, "render", config, "--output-dir", out, "--check", "-o", "yaml")
	want = "ok: true\ndir: " + out + "\nchanged: []\nforeign: []\ndiff: \"\"\nerrors: []\n"
	if code != 0 || len(stderr) != 0 || string(stdout) != want {
		t.Errorf("fresh output, -o yaml: exit %d, stderr %s, stdout\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	if stdout, stderr, code = runCLI(t, nil, "render", config, "--output-dir", out, "--check"); code != 0 || len(stderr) != 0 || len(stdout) != 0 {
		t.Errorf("fresh output, default -o: exit %d, stderr %s, stdout %s; want 0 and nothing", code, stderr, stdout)
	}

	// Stale three ways, and a link and a file stowage did not write.
	ds, cm := "daemonset-submarine-notebook-images.yaml", "configmap-submarine-notebook-images-records.yaml"
	orig := readFile(t, filepath.Join(out, ds))
	edited := strings.Replace(string(orig), "imagePullPolicy: IfNotPresent", "imagePullPolicy: Always", 1)
	if edited == string(orig) {
		t.Fatal("the example has no imagePullPolicy to change")
	}
	if err := os.WriteFile(filepath.Join(out, ds), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, cm)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A symbolic link is no file stowage wrote, and not compared.
	if err := os.Symlink("notes.txt", filepath.Join(out, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	before := cliSnapshot(t, out)
	stdout, stderr, code = runCLI(t, nil, "render", config, "--output-dir", out, "--check", "-o", "json")
	r := decode(t, stdout)
	wantChanged := []output.FileDiff{{File: cm, Status: "missing"}, {File: ds, Status: "changed"}, {File: "notes.txt", Status: "extra"}}
	if code != 1 || r.OK || r.Dir != out || !reflect.DeepEqual(r.Changed, wantChanged) ||
		!slices.Equal(r.Foreign, []string{"link.yaml", "notes.txt"}) || len(r.Errors) != 0 {
		t.Errorf("stale output: exit %d, report %+v, want changed %+v and foreign link.yaml, notes.txt", code, r, wantChanged)
	}
	for _, w := range []string{"--- " + filepath.Join(out, ds) + " (committed)\n", "+++ " + filepath.Join(out, ds) + " (rendered now)\n",
		"\n-        imagePullPolicy: Always\n", "\n+        imagePullPolicy: IfNotPresent\n"} {
		if !strings.Contains(r.Diff, w) {
			t.Errorf("diff lacks %q:\n%s", w, r.Diff)
		}
	}
	if !strings.Contains(stderr, r.Diff) || !strings.Contains(stderr, "Move those files out of "+out) {
		t.Errorf("stderr is not the text form's (with the same diff):\n%s", stderr)
	}
	if after := cliSnapshot(t, out); !maps.Equal(before, after) {
		t.Errorf("--check changed %s", out)
	}

	// A config error, located.
	bad := cliInvalidDir(t)
	stdout, stderr, code = runCLI(t, nil, "render", bad, "--output-dir", out, "--check", "-o", "json")
	r = decode(t, stdout)
	i := slices.IndexFunc(r.Errors, func(e v1alpha1.ReportError) bool { return e.Field == "profiles.notebooks.pullers[0].namespace" })
	if code != 1 || r.OK || i < 0 || len(r.Changed) != 0 || !strings.Contains(stderr, "Tenant_A") {
		t.Fatalf("config error: exit %d, report %+v; stderr:\n%s", code, r, stderr)
	}
	if e := r.Errors[i]; e.File != filepath.Join(bad, "config.yaml") || e.Line != 6 || !strings.Contains(e.Message, `"Tenant_A"`) {
		t.Errorf("namespace error %+v", e)
	}

	for _, args := range [][]string{
		{"render", config, "--output-dir", out, "-o", "json"},
		{"render", config, "-o", "json"},
		{"render", config, "--output-dir", out, "--check", "-o", "table"},
	} {
		if stdout, _, code := runCLI(t, nil, args...); code != 2 || len(stdout) != 0 {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, stdout)
		}
	}
}

// TestKustomizationFIFO: a kustomization.yaml that is a FIFO is refused by
// name; recognising the directory never blocks on opening it.
func TestKustomizationFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, "kustomization.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, nil, "vet", dir)
	if want := "kustomization.yaml: is not a regular file (a FIFO)"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %q; want 1 and %q", code, stderr, want)
	}
}

// TestWrongDirectoryInJSONReports: with a JSON report asked for, a wrong
// directory is in the report's errors too (the check runs once the report
// is set up), with the one line on stderr and exit 1.
func TestWrongDirectoryInJSONReports(t *testing.T) {
	t.Parallel()
	rendered := filepath.Join(repoRoot, "examples", "gitops-flux", "clusters", "prod", "prepull")
	want := rendered + " is the output of `stowage render --output-dir`"
	for _, args := range [][]string{
		{"vet", rendered, "-o", "json"},
		{"lock", rendered, "-o", "json"},
		{"lock", rendered, "--check", "-o", "json"},
		{"render", rendered, "--output-dir", filepath.Join(t.TempDir(), "out"), "--check", "-o", "json"},
	} {
		stdout, stderr, code := runCLI(t, nil, args...)
		var r struct {
			OK     bool
			Errors []v1alpha1.ReportError
		}
		if err := json.Unmarshal(stdout, &r); err != nil {
			t.Errorf("%v: stdout is no JSON report: %v\n%s", args, err, stdout)
			continue
		}
		if code != 1 || r.OK || len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0].Message, want) ||
			!strings.HasPrefix(stderr, "stowage: "+want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, report %+v, stderr %q; want 1 and the one message saying %q", args, code, r, stderr, want)
		}
	}
}
