package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// The secret hygiene suite (issue 5, item 5): every command and every
// failure path we can reach runs with a canary password, set through an
// env: source, a file: source, a literal (--allow-literal-passwords) and a
// JupyterImagePuller's inline password (the allow annotation). The canary
// must never appear in stdout, stderr, the lock, the PR body, the KRM
// results or any rendered file — except in a Secret's data, and there only
// base64-encoded inside .dockerconfigjson, where the test decodes it and
// finds it.

// hygieneCanary has a unique core (hygieneCore) that survives any quoting
// or escaping, and the characters that trip up quoting and URL encoding.
const (
	hygieneCore   = "hYg13nE-cAnArY"
	hygieneCanary = hygieneCore + `-[p~a_s.s>w=o"r%d;\`
	hygieneUser   = "robot"
)

// leakForms are the spellings of the canary that must not appear outside a
// Secret's data: as is, its core, and base64 of it and of the basic-auth
// pair (what a docker config's "auth" holds).
func leakForms() map[string]string {
	pair := hygieneUser + ":" + hygieneCanary
	return map[string]string{
		"the canary":                   hygieneCanary,
		"the canary's core":            hygieneCore,
		"base64 of the canary":         base64.StdEncoding.EncodeToString([]byte(hygieneCanary)),
		"base64url of the canary":      base64.URLEncoding.EncodeToString([]byte(hygieneCanary)),
		"base64 of user:canary":        base64.StdEncoding.EncodeToString([]byte(pair)),
		"JSON-quoted canary":           strings.Trim(mustJSON(hygieneCanary), `"`),
		"base64 of the canary's core ": base64.StdEncoding.EncodeToString([]byte(hygieneCore))[:16],
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// noLeak fails when b holds any spelling of the canary.
func noLeak(t *testing.T, where string, b []byte) {
	t.Helper()
	for what, form := range leakForms() {
		if bytes.Contains(b, []byte(form)) {
			t.Errorf("%s holds %s:\n%s", where, what, b)
		}
	}
}

// noPlainLeak fails when b holds the canary in plain text (a Secret's
// YAML, whose base64 data could contain other encodings by chance).
func noPlainLeak(t *testing.T, where string, b []byte) {
	t.Helper()
	if bytes.Contains(b, []byte(hygieneCore)) {
		t.Errorf("%s holds the canary in plain text:\n%s", where, b)
	}
}

// secretHoldsCanary decodes a Secret's .dockerconfigjson and reports
// whether one of its auths carries the canary: auth decodes to
// user:canary.
func secretHoldsCanary(t *testing.T, where string, s *corev1.Secret) bool {
	t.Helper()
	if s.Type != corev1.SecretTypeDockerConfigJson || len(s.Data) != 1 || len(s.StringData) != 0 {
		t.Errorf("%s: Secret %s is %s with keys %v and stringData %v, want only data[.dockerconfigjson]", where, s.Name, s.Type, keysOf(s.Data), s.StringData)
	}
	var cfg struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		t.Errorf("%s: Secret %s: .dockerconfigjson is not JSON: %v", where, s.Name, err)
		return false
	}
	for _, a := range cfg.Auths {
		pair, err := base64.StdEncoding.DecodeString(a.Auth)
		if err == nil && string(pair) == hygieneUser+":"+hygieneCanary {
			return true
		}
	}
	return false
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// checkManifest checks one rendered YAML document: a Secret holds the
// canary only in its decoded data (reported through found), anything else
// holds no spelling of it.
func checkManifest(t *testing.T, where string, doc []byte, found *int) {
	t.Helper()
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if head.Kind != "Secret" {
		noLeak(t, where, doc)
		return
	}
	noPlainLeak(t, where, doc)
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(doc, &s); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if secretHoldsCanary(t, where, &s) {
		*found++
	}
}

// checkStream checks a render stream and returns how many Secrets carry
// the canary.
func checkStream(t *testing.T, where string, stream []byte) int {
	t.Helper()
	found := 0
	for i, doc := range bytes.Split(append([]byte("\n"), stream...), []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) > 0 {
			checkManifest(t, fmt.Sprintf("%s, document %d", where, i+1), doc, &found)
		}
	}
	return found
}

// checkDir checks every file under dir (render -o output) and returns how
// many Secrets carry the canary.
func checkDir(t *testing.T, dir string) int {
	t.Helper()
	found := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checkManifest(t, p, b, &found)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// checkResourceList checks a KRM function's output: results and every item
// but a Secret's data hold no spelling of the canary; it returns how many
// Secret items carry it. The functionConfig is left out: the framework
// echoes the input's as it was, and only a literal the user wrote there
// can be in it.
func checkResourceList(t *testing.T, where string, out []byte) int {
	t.Helper()
	var whole map[string]any
	if err := yaml.Unmarshal(out, &whole); err != nil {
		t.Fatalf("%s: not a ResourceList: %v\n%s", where, err, out)
	}
	delete(whole, "functionConfig")
	noPlainLeak(t, where, []byte(mustJSON(whole)))
	var rl struct {
		Items   []json.RawMessage `json:"items"`
		Results json.RawMessage   `json:"results"`
	}
	if err := yaml.Unmarshal(out, &rl); err != nil {
		t.Fatalf("%s: not a ResourceList: %v\n%s", where, err, out)
	}
	noLeak(t, where+" results", rl.Results)
	found := 0
	for i, it := range rl.Items {
		checkManifest(t, fmt.Sprintf("%s item %d", where, i), it, &found)
	}
	return found
}

// hygieneRun runs the command line in-process with env and stdin, checks
// that neither stdout nor stderr spells the canary, and returns them.
func hygieneRun(t *testing.T, env map[string]string, stdin string, args ...string) ([]byte, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr, envFrom(env))
	where := "stowage " + strings.Join(args, " ")
	noLeak(t, where+": stderr", stderr.Bytes())
	// render prints Secrets on stdout, but not with --check.
	if (args[0] != "render" || slices.Contains(args, "--check")) && args[0] != "fn" {
		noLeak(t, where+": stdout", stdout.Bytes())
	}
	return stdout.Bytes(), stderr.String(), code
}

// hygieneRegistries are two in-process registries: "private" answers only
// robot with the canary, "public" anyone (the helper and pause images).
type hygieneRegistries struct {
	private, public *inProcess
	refs            []string // app, tool on private; helper, pause on public
}

func newHygieneRegistries(t *testing.T) *hygieneRegistries {
	t.Helper()
	r := &hygieneRegistries{private: startInProcess(t), public: startInProcess(t)}
	p, q := r.private.Host, r.public.Host
	r.refs = []string{p + "/team/app:1.0", p + "/team/tool:2", q + "/stowage/helper:v1", q + "/k8s/pause:3.10"}
	seed(t, nil, r.refs[:2], registry.WithInsecure(p))
	seed(t, nil, r.refs[2:], registry.WithInsecure(q))
	r.private.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: registrytest.RequireBasic(hygieneUser, hygieneCanary)})
	return r
}

// flags are the registry flags of lock, bump and vet --remote.
func (r *hygieneRegistries) flags() []string {
	return []string{"--insecure-registry", r.private.Host, "--insecure-registry", r.public.Host, "--retries", "0"}
}

// config writes a config directory whose app image reads its password
// from appSource and whose tool image from toolSource (a literal when not
// env: or file:), with secrets/pw holding the canary. extra is appended to
// the YAML. With lockIt, the stand-in lock comes too.
func (r *hygieneRegistries) config(t *testing.T, appSource, toolSource, extra string, lockIt bool) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`images:
  app: {reference: %q, auth: {username: %s, password: %q}}
  tool: {reference: %q, auth: {username: %s, password: %q}}
profiles:
  p:
    helper: {image: %q, pause: %q}
    pullers: [{name: pre, namespace: ns, images: [app, tool]}]
%s`, r.refs[0], hygieneUser, appSource, r.refs[1], hygieneUser, toolSource, r.refs[2], r.refs[3], extra)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets", "pw"), []byte(hygieneCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if lockIt {
		l := &lock.Lock{}
		for _, ref := range r.refs {
			e, err := offlineimage.Entry(ref)
			if err != nil {
				t.Fatal(err)
			}
			l.Put(e)
		}
		if err := os.WriteFile(filepath.Join(dir, lock.FileName), l.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// moveApp pushes other content under the app tag, so that bump has a
// change to report.
func (r *hygieneRegistries) moveApp(t *testing.T) {
	t.Helper()
	res, err := registry.New(registry.WithInsecure(r.private.Host))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(r.refs[0])
	other, _ := name.ParseReference(r.refs[0] + "-moved")
	img, idx, err := offlineimage.For(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.Write(context.Background(), res, ref, &authn.AuthConfig{Username: hygieneUser, Password: hygieneCanary}, img, idx); err != nil {
		t.Fatal(err)
	}
}

// TestSecretHygiene runs every command and failure path with the canary.
func TestSecretHygiene(t *testing.T) {
	// Not parallel: the KRM function's file: sources are relative to the
	// working directory, which its subtest changes with os.Chdir for the
	// whole process.
	regs := newHygieneRegistries(t)
	env := map[string]string{"HYGIENE_PW": hygieneCanary, "STOWAGE_HYGIENE_PW": hygieneCanary, "STOWAGE_ALLOW_ENV": "HYGIENE_PW"}

	// Success paths, with env: and file: sources.
	t.Run("env and file sources", func(t *testing.T) {
		dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", false)
		lockPath := filepath.Join(dir, lock.FileName)
		if _, stderr, code := hygieneRun(t, env, "", append([]string{"lock", dir}, regs.flags()...)...); code != 0 {
			t.Fatalf("lock: exit %d: %s", code, stderr)
		}
		noLeak(t, "the lock", readFile(t, lockPath))
		if _, stderr, code := hygieneRun(t, env, "", "lock", dir, "--check"); code != 0 {
			t.Fatalf("lock --check: exit %d: %s", code, stderr)
		}
		if _, stderr, code := hygieneRun(t, env, "", "lock", dir, "--check", "-o", "json"); code != 0 {
			t.Fatalf("lock --check -o json: exit %d: %s", code, stderr)
		}

		stdout, stderr, code := hygieneRun(t, env, "", "render", dir)
		if code != 0 {
			t.Fatalf("render: exit %d: %s", code, stderr)
		}
		// app and tool share registry and user and their password is the
		// same canary, but their sources differ: two Secrets.
		if n := checkStream(t, "render", stdout); n != 2 {
			t.Errorf("render: %d Secrets carry the canary, want 2", n)
		}
		out := filepath.Join(t.TempDir(), "out")
		if _, stderr, code := hygieneRun(t, env, "", "render", dir, "--output-dir", out); code != 0 {
			t.Fatalf("render -o: exit %d: %s", code, stderr)
		}
		if n := checkDir(t, out); n != 2 {
			t.Errorf("render -o: %d Secrets carry the canary, want 2", n)
		}
		if _, stderr, code := hygieneRun(t, env, "", "render", dir, "--output-dir", out, "--check"); code != 0 {
			t.Errorf("render --check of fresh output: exit %d: %s", code, stderr)
		}
		secretFiles, _ := filepath.Glob(filepath.Join(out, "secret-*.yaml"))
		if len(secretFiles) == 0 {
			t.Fatal("no Secret file")
		}
		if err := os.WriteFile(secretFiles[0], []byte("stale\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := hygieneRun(t, env, "", "render", dir, "--output-dir", out, "--check"); code != 1 {
			t.Errorf("render --check of stale output: exit %d: %s", code, stderr)
		}
		if _, stderr, code := hygieneRun(t, env, "", "render", dir, "--output-dir", out, "--check", "-o", "json"); code != 1 {
			t.Errorf("render --check --format json of stale output: exit %d: %s", code, stderr)
		}

		for _, args := range [][]string{
			{"vet", dir},
			append([]string{"vet", dir, "--remote"}, regs.flags()...),
			{"schema"},
			{"openpai", "services", dir},
			{"openpai", "services", dir, "-o", "json"},
		} {
			hygieneRun(t, env, "", args...)
		}

		regs.moveApp(t)
		body := filepath.Join(t.TempDir(), "body.md")
		rendered := filepath.Join(t.TempDir(), "rendered")
		for i, output := range []string{"text", "json"} {
			args := append([]string{"bump", dir, "-o", output, "--pr-body", body, "--render", rendered}, regs.flags()...)
			if _, stderr, code := hygieneRun(t, env, "", args...); code != 0 {
				t.Fatalf("bump -o %s: exit %d: %s", output, code, stderr)
			}
			if i == 0 {
				b := readFile(t, body)
				if len(b) == 0 {
					t.Error("bump wrote no PR body")
				}
				noLeak(t, "the PR body", b)
			}
		}
		noLeak(t, "the bumped lock", readFile(t, lockPath))
		if n := checkDir(t, rendered); n != 2 {
			t.Errorf("bump --render: %d Secrets carry the canary, want 2", n)
		}
	})

	t.Run("literal password", func(t *testing.T) {
		dir := regs.config(t, hygieneCanary, "env:HYGIENE_PW", "", true)
		stdout, stderr, code := hygieneRun(t, env, "", "render", dir, "--allow-literal-passwords")
		if code != 0 {
			t.Fatalf("render --allow-literal-passwords: exit %d: %s", code, stderr)
		}
		if n := checkStream(t, "render --allow-literal-passwords", stdout); n != 2 {
			t.Errorf("%d Secrets carry the canary, want 2", n)
		}
		out := filepath.Join(t.TempDir(), "out")
		if _, stderr, code := hygieneRun(t, env, "", "render", dir, "--allow-literal-passwords", "--output-dir", out); code != 0 {
			t.Fatalf("render -o: exit %d: %s", code, stderr)
		}
		if n := checkDir(t, out); n != 2 {
			t.Errorf("render -o: %d Secrets carry the canary, want 2", n)
		}
		if _, stderr, code := hygieneRun(t, env, "", append([]string{"lock", dir, "--allow-literal-passwords"}, regs.flags()...)...); code != 0 {
			t.Errorf("lock --allow-literal-passwords: exit %d: %s", code, stderr)
		}
		noLeak(t, "the lock", readFile(t, filepath.Join(dir, lock.FileName)))
		hygieneRun(t, env, "", "vet", dir, "--allow-literal-passwords")
	})

	t.Run("KRM function", func(t *testing.T) {
		lockYAML := func() string {
			l := &lock.Lock{}
			for _, ref := range append(regs.refs, "apache/submarine:jupyter-notebook-0.7.0", "ghcr.io/stowage/stowage-helper:v0.1.0") {
				e, err := offlineimage.Entry(ref)
				if err != nil {
					t.Fatal(err)
				}
				l.Put(e)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(l.Marshal(), &doc); err != nil {
				t.Fatal(err)
			}
			return mustJSON(doc)
		}()
		stowageFC := func(source string) string {
			return fmt.Sprintf(`{"apiVersion": "stowage.dev/v1alpha1", "kind": "Stowage", "metadata": {"name": "n"},
  "spec": {"profile": "p",
    "images": {"app": {"reference": %q, "auth": {"username": %q, "password": %s}}},
    "profiles": {"p": {"helper": {"image": %q, "pause": %q}, "pullers": [{"name": "pre", "namespace": "ns", "images": ["app"]}]}}}}`,
				regs.refs[0], hygieneUser, mustJSON(source), regs.refs[2], regs.refs[3])
		}
		submarineFC := func(annotations, auth string) string {
			return fmt.Sprintf(`{"apiVersion": "org.apache.submarine/v1", "kind": "JupyterImagePuller",
  "metadata": {"name": "puller", "namespace": "submarine", "annotations": {%s}},
  "spec": {"images": [
    {"name": "jupyter", "image": "apache/submarine:jupyter-notebook-0.7.0"},
    {"name": "app", "image": %q, "auth": %s}]}}`, annotations, regs.refs[0], auth)
		}
		inline := mustJSON(map[string]string{"username": hygieneUser, "password": hygieneCanary})
		tests := []struct {
			name    string
			fc      string
			code    int
			secrets int
			args    []string
		}{
			{"Stowage with an env: source the operator allows, kept by --allow-env", stowageFC("env:HYGIENE_PW"), 0, 1, []string{"--allow-env", "HYGIENE_PW"}},
			{"Stowage with an env: source --allow-env leaves out", stowageFC("env:HYGIENE_PW"), 1, 0, []string{"--allow-env", "OTHER"}},
			{"Stowage with a STOWAGE_ env: source", stowageFC("env:STOWAGE_HYGIENE_PW"), 0, 1, nil},
			{"Stowage with a file: source", stowageFC("file:secrets/pw"), 0, 1, nil},
			{"Stowage with a literal", stowageFC(hygieneCanary), 1, 0, nil},
			{"Stowage with an unset variable", stowageFC("env:HYGIENE_UNSET"), 1, 0, nil},
			{"JupyterImagePuller inline, allowed", submarineFC(`"stowage.dev/allow-inline-passwords": "true"`, inline), 0, 1, nil},
			{"JupyterImagePuller inline, refused", submarineFC("", inline), 1, 0, nil},
			{"JupyterImagePuller auth as a string", submarineFC(`"stowage.dev/allow-inline-passwords": "true"`, mustJSON(hygieneCanary)), 1, 0, nil},
		}
		dir := regs.config(t, "env:HYGIENE_PW", "env:HYGIENE_PW", "", false)
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		// file: sources are relative to the working directory, the
		// kustomization's when kustomize runs the function.
		if err := os.Chdir(dir); err != nil {
			t.Fatal(err)
		}
		defer os.Chdir(wd)
		for _, tc := range tests {
			rl := fmt.Sprintf(`{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "functionConfig": %s, "items": [%s]}`, tc.fc, lockYAML)
			stdout, stderr, code := hygieneRun(t, env, rl, append([]string{"fn"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("%s: exit %d, want %d: %s\n%s", tc.name, code, tc.code, stderr, stdout)
			}
			if n := checkResourceList(t, tc.name, stdout); n != tc.secrets {
				t.Errorf("%s: %d Secret items carry the canary, want %d", tc.name, n, tc.secrets)
			}
		}
	})

	// Failure paths: each must fail, and say so without the canary.
	t.Run("failures", func(t *testing.T) {
		noEnv := map[string]string{}
		wrong := startInProcess(t) // answers only another password
		seed(t, nil, []string{wrong.Host + "/team/app:1.0", wrong.Host + "/team/tool:2"}, registry.WithInsecure(wrong.Host))
		realm := startInProcess(t) // a token realm on another host name
		realmHost := "localhost:" + realm.Host[strings.LastIndex(realm.Host, ":")+1:]
		cases := []struct {
			name string
			dir  func(t *testing.T) string
			env  map[string]string
			args []string
		}{
			{"render: variable unset, file read", func(t *testing.T) string {
				return regs.config(t, "env:HYGIENE_UNSET", "file:secrets/pw", "", true)
			}, env, []string{"render"}},
			{"render: file missing, variable read", func(t *testing.T) string {
				return regs.config(t, "env:HYGIENE_PW", "file:secrets/missing", "", true)
			}, env, []string{"render"}},
			{"render -o: lock entries missing", func(t *testing.T) string {
				return regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", false)
			}, env, []string{"render", "--output-dir", "OUT"}},
			{"render -o: a name too long", func(t *testing.T) string {
				return regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", true)
			}, env, []string{"render", "--output-dir", "OUT/" + strings.Repeat("o", 250)}},
			{"render: a literal without --allow-literal-passwords", func(t *testing.T) string {
				return regs.config(t, hygieneCanary, "file:secrets/pw", "", true)
			}, env, []string{"render"}},
			{"vet: a literal without --allow-literal-passwords", func(t *testing.T) string {
				return regs.config(t, hygieneCanary, "file:secrets/pw", "", true)
			}, env, []string{"vet"}},
			{"lock: a literal without --allow-literal-passwords", func(t *testing.T) string {
				return regs.config(t, hygieneCanary, "file:secrets/pw", "", false)
			}, env, append([]string{"lock"}, regs.flags()...)},
			{"render: a literal password and a username with ':'", func(t *testing.T) string {
				dir := regs.config(t, hygieneCanary, "file:secrets/pw", "", true)
				b := bytes.Replace(readFile(t, filepath.Join(dir, "config.yaml")), []byte("username: robot"), []byte("username: ro:bot"), 1)
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				return dir
			}, env, []string{"render", "--allow-literal-passwords"}},
			{"render: auth written as the password", func(t *testing.T) string {
				dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", true)
				b := bytes.Replace(readFile(t, filepath.Join(dir, "config.yaml")),
					[]byte(`auth: {username: robot, password: "env:HYGIENE_PW"}`), []byte(`auth: `+mustJSON(hygieneCanary)), 1)
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				return dir
			}, env, []string{"render", "--allow-literal-passwords"}},
			{"render: the password in a list", func(t *testing.T) string {
				dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", true)
				b := bytes.Replace(readFile(t, filepath.Join(dir, "config.yaml")),
					[]byte(`password: "env:HYGIENE_PW"`), []byte(`password: [`+mustJSON(hygieneCanary)+`]`), 1)
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				return dir
			}, env, []string{"render", "--allow-literal-passwords"}},
			{"render: two files disagree about the password", func(t *testing.T) string {
				dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", true)
				more := "images: app: auth: password: " + mustJSON(hygieneCanary) + "\n"
				if err := os.WriteFile(filepath.Join(dir, "more.cue"), []byte(more), 0o644); err != nil {
					t.Fatal(err)
				}
				return dir
			}, env, []string{"render", "--allow-literal-passwords"}},
			{"lock: the registry refuses the password", func(t *testing.T) string {
				wrong.Faults.Reset()
				wrong.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: registrytest.RequireBasic(hygieneUser, "another-password")})
				dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", false)
				b := bytes.ReplaceAll(readFile(t, filepath.Join(dir, "config.yaml")), []byte(regs.private.Host), []byte(wrong.Host))
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				return dir
			}, env, []string{"lock", "--insecure-registry", wrong.Host, "--insecure-registry", regs.public.Host, "--retries", "0"}},
			{"lock: the registry echoes Authorization, user:password and the password", func(t *testing.T) string {
				wrong.Faults.Reset()
				wrong.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: echoCredentials("")})
				return wrongRegistry(t, regs, wrong.Host)
			}, env, []string{"lock", "--insecure-registry", wrong.Host, "--insecure-registry", regs.public.Host, "--retries", "0"}},
			{"lock: the registry echoes its bearer and refresh tokens", func(t *testing.T) string {
				wrong.Faults.Reset()
				wrong.Faults.Add(registrytest.Rule{Path: "/token", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
					w.Write([]byte(`{"token": "` + hygieneCore + `-bearer", "refresh_token": "` + hygieneCore + `-refresh"}`))
				}})
				wrong.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: echoCredentials("http://" + wrong.Host + "/token")})
				return wrongRegistry(t, regs, wrong.Host)
			}, env, []string{"lock", "--insecure-registry", wrong.Host, "--insecure-registry", regs.public.Host, "--retries", "0"}},
			{"lock: a token realm on another host", func(t *testing.T) string {
				realm.Faults.Reset()
				realm.Faults.Add(registrytest.Rule{Path: "/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
					r.ParseForm()
					noLeak(t, "the request to the token realm on another host", []byte(r.Header.Get("Authorization")+" "+r.Form.Encode()))
					w.WriteHeader(http.StatusUnauthorized)
				}})
				wrong.Faults.Reset()
				wrong.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: echoCredentials("http://" + realmHost + "/token")})
				t.Cleanup(func() {
					if realm.Faults.Count("GET", "/token") == 0 {
						t.Error("the token realm on another host got no request: the case tests nothing")
					}
				})
				return wrongRegistry(t, regs, wrong.Host)
			}, env, []string{"lock", "--insecure-registry", wrong.Host, "--insecure-registry", regs.public.Host, "--insecure-registry", realmHost, "--retries", "0"}},
			{"lock: variable unset", func(t *testing.T) string {
				return regs.config(t, "env:HYGIENE_UNSET", "file:secrets/pw", "", false)
			}, noEnv, append([]string{"lock"}, regs.flags()...)},
			{"bump: 500 on the last image", func(t *testing.T) string {
				// The 500 goes first: a request takes the first rule that
				// matches.
				regs.private.Faults.Reset()
				regs.private.Faults.Add(registrytest.Rule{Path: "/v2/team/tool/manifests/", Times: 1, Fault: registrytest.Status(500, nil)})
				regs.private.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: registrytest.RequireBasic(hygieneUser, hygieneCanary)})
				return regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", true)
			}, env, append([]string{"bump", "--jobs", "1", "--pr-body", "OUT/body.md", "--render", "OUT/rendered"}, regs.flags()...)},
			{"vet --remote: the registry refuses the password", func(t *testing.T) string {
				wrong.Faults.Reset()
				wrong.Faults.Add(registrytest.Rule{Path: "/v2/", Fault: registrytest.RequireBasic(hygieneUser, "another-password")})
				dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", false)
				b := bytes.ReplaceAll(readFile(t, filepath.Join(dir, "config.yaml")), []byte(regs.private.Host), []byte(wrong.Host))
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				l := &lock.Lock{}
				for _, ref := range []string{strings.Replace(regs.refs[0], regs.private.Host, wrong.Host, 1), strings.Replace(regs.refs[1], regs.private.Host, wrong.Host, 1), regs.refs[2], regs.refs[3]} {
					e, err := offlineimage.Entry(ref)
					if err != nil {
						t.Fatal(err)
					}
					l.Put(e)
				}
				if err := os.WriteFile(filepath.Join(dir, lock.FileName), l.Marshal(), 0o644); err != nil {
					t.Fatal(err)
				}
				return dir
			}, env, []string{"vet", "--remote", "--insecure-registry", wrong.Host, "--insecure-registry", regs.public.Host, "--retries", "0"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				dir := tc.dir(t)
				out := t.TempDir()
				args := []string{tc.args[0], dir}
				for _, a := range tc.args[1:] {
					args = append(args, strings.ReplaceAll(a, "OUT", out))
				}
				before := readFile(t, filepath.Join(dir, lock.FileName))
				_, stderr, code := hygieneRun(t, tc.env, "", args...)
				if code != 1 {
					t.Errorf("exit %d, want 1: %s", code, stderr)
				}
				// lock keeps the entries that resolved; the others leave
				// the lock as it was.
				if after := readFile(t, filepath.Join(dir, lock.FileName)); tc.args[0] != "lock" && !bytes.Equal(before, after) {
					t.Error("the failed run changed the lock")
				}
				noLeak(t, "the lock", readFile(t, filepath.Join(dir, lock.FileName)))
				if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) > 0 {
					t.Errorf("the failed run wrote %v", files)
				}
				// lock -o json reports the same failure on stdout.
				if tc.args[0] == "lock" {
					if _, stderr, code := hygieneRun(t, tc.env, "", append([]string{"lock", tc.dir(t), "-o", "json"}, tc.args[1:]...)...); code != 1 {
						t.Errorf("-o json: exit %d, want 1: %s", code, stderr)
					}
				}
			})
		}
	})
}

// echoCredentials is a registry that refuses every request and echoes the
// credentials it got in its error, in every spelling: the Authorization
// header value, the password and the base64 of user:password it holds.
// With realm set it asks for a Bearer token from there.
func echoCredentials(realm string) registrytest.Fault {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		if realm != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`",service="hygiene"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Basic realm="hygiene"`)
		}
		w.WriteHeader(http.StatusUnauthorized)
		h := r.Header.Get("Authorization")
		user, pw, _ := r.BasicAuth()
		_, cred, _ := strings.Cut(h, " ")
		msg, _ := json.Marshal("you sent " + h + " that is " + cred + " for " + user + " with " + pw)
		w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":` + string(msg) + `}]}`))
	}
}

// wrongRegistry is a config whose private images live on host.
func wrongRegistry(t *testing.T, regs *hygieneRegistries, host string) string {
	dir := regs.config(t, "env:HYGIENE_PW", "file:secrets/pw", "", false)
	b := bytes.ReplaceAll(readFile(t, filepath.Join(dir, "config.yaml")), []byte(regs.private.Host), []byte(host))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
