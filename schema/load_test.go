package schema

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

// wantErr is one located error a load must report.
type wantErr struct {
	file string   // base name of the config file
	line int      // 1-based line in it
	path string   // field path as printed
	says []string // substrings of the message
}

// TestLoadRejects loads each invalid config directory under
// testdata/invalid, written as a user would, and checks that the load
// reports exactly the listed errors, each printed as
// "file:line:col: field.path: message" with the real file and line: bad
// renders, auth, OpenPAI selections and references, at the level where a
// user meets them, the config loader.
func TestLoadRejects(t *testing.T) {
	tests := []struct {
		dir   string
		want  []wantErr
		never []string // must not appear in any message
	}{
		{dir: "bad-namespace", want: []wantErr{
			{"config.yaml", 8, "profiles.notebooks.pullers[0].namespace", []string{`"Tenant_A"`, "must be a lowercase RFC 1123 label"}},
		}},
		// A valid label too long for stowage's names says how long it is.
		{dir: "long-puller-name", want: []wantErr{
			{"config.yaml", 7, "profiles.notebooks.pullers[0].name", []string{`of at most 50 characters (it names a DaemonSet): it has 53 characters`}},
		}},
		{dir: "bad-tenants", want: []wantErr{
			{"config.yaml", 11, "profiles.notebooks.pullers[0].tenants[1]", []string{`tenant namespace "Tenant_B"`, "must be a lowercase RFC 1123 label"}},
			{"config.yaml", 12, "profiles.notebooks.pullers[0].tenants[2]", []string{`tenant namespace "tenant-a" is listed twice (tenants[0] and tenants[2])`}},
		}},
		{dir: "bad-node-selector-key", want: []wantErr{
			{"environments.yaml", 5, `environments."jupyter-gpu".nodeSelector."gpu type"`,
				[]string{`key "gpu type" is not a valid label key`, "must consist of alphanumeric characters"}},
		}},
		// A startup gate's taint: a key that is not a qualified name, an
		// effect Kubernetes does not have, a NodeReadinessRule's key
		// outside readiness.k8s.io/, one key for two pullers, and a gate
		// on a puller whose main container is a pause image (no helper to
		// lift it).
		{dir: "startup-bad", want: []wantErr{
			{"config.yaml", 12, "profiles.lab.pullers[0].startup.taint.key", []string{`startup taint key "stowage.dev/new images" is not a valid taint key`}},
			{"config.yaml", 17, "profiles.lab.pullers[1].startup.taint.effect", []string{`"NoPods" is not allowed here`, `"NoSchedule"`}},
			{"config.yaml", 23, "profiles.lab.pullers[2].startup.taint.key", []string{`must start with "readiness.k8s.io/"`}},
			{"config.yaml", 28, "profiles.lab.pullers[3].startup.taint.key", []string{`startup taint "stowage.dev/new images" is also pullers[0]'s`}},
			{"config.yaml", 28, "profiles.lab.pullers[3].startup.taint.key", []string{"is not a valid taint key"}},
		}},
		// Lanes: none, and more than the images.
		{dir: "lanes-bad", want: []wantErr{
			{"config.yaml", 13, "profiles.lab.pullers[0].lanes", []string{"invalid value 0 (out of bound >=1)"}},
			{"config.yaml", 17, "profiles.lab.pullers[1].lanes", []string{"lanes 3 is more than the puller's 2 images"}},
		}},
		// A node pool's disk: not a quantity, zero, too large, a percent
		// out of 1..100, and two pullers of one nodeSelector that differ.
		{dir: "nodedisk-bad", want: []wantErr{
			{"config.yaml", 8, "profiles.lab.nodeDisk.size", []string{`"200 Gi" is not a Kubernetes quantity of bytes`}},
			{"config.yaml", 14, "profiles.lab.pullers[0].nodeDisk.size", []string{`"0" is not a disk size: it must be more than zero bytes`}},
			{"config.yaml", 15, "profiles.lab.pullers[0].nodeDisk.imageGCHighThresholdPercent", []string{"invalid value 0 (out of bound >=1)"}},
			{"config.yaml", 20, "profiles.lab.pullers[1].nodeDisk.size", []string{`"2Ei" is more than 1Ei`}},
			{"config.yaml", 21, "profiles.lab.pullers[1].nodeDisk.imageGCHighThresholdPercent", []string{"invalid value 101 (out of bound <=100)"}},
			{"config.yaml", 31, "profiles.lab.pullers[3].nodeDisk", []string{"nodeDisk differs from pullers[2]'s, which has the same nodeSelector"}},
		}},
		{dir: "startup-pause", want: []wantErr{
			{"config.yaml", 13, "profiles.lab.pullers[0].startup", []string{`puller "tools" has a startup gate, but the profile's helper.pause`}},
		}},
		// The top-level helper.pause is every profile's default: a gate
		// under it has no helper either.
		{dir: "startup-pause-top", want: []wantErr{
			{"config.yaml", 13, "profiles.lab.pullers[0].startup", []string{`puller "tools" has a startup gate, but the top-level helper.pause (profile "lab"'s default)`}},
		}},
		// Two gated pullers whose namespace and name join to one name
		// ("a-b"+"c", "a"+"b-c") would share their cluster-scoped objects.
		{dir: "startup-names", want: []wantErr{
			{"config.yaml", 13, "profiles.lab.pullers[1].name", []string{`puller "b-c" in namespace "a"`, `pullers[0] (puller "c" in namespace "a-b")`, `"stowage-startup-a-b-c"`}},
		}},
		{dir: "refresh-hours-string", want: []wantErr{
			{"config.yaml", 10, "profiles.notebooks.pullers[0].refreshHours", []string{`"two"`, "not a whole number of hours"}},
		}},
		{dir: "empty-puller", want: []wantErr{
			{"config.yaml", 7, "profiles.notebooks.pullers[0]", []string{`puller "notebooks" has no images`}},
		}},
		{dir: "inline-password", want: []wantErr{
			{"config.yaml", 6, "environments.notebook.auth.password",
				[]string{`environment "notebook"`, "literal passwords are refused in a GitOps repo", `"env:VARIABLE"`, `"file:path"`, "existing Secret"}},
		}, never: []string{"literal-secret"}},
		{dir: "username-with-colon", want: []wantErr{
			{"config.yaml", 5, "images.notebook.auth.username",
				[]string{`image "harbor.lab.internal/release/notebook:1.1.0"`, "a username for registry harbor.lab.internal cannot contain ':'"}},
		}},
		{dir: "same-name-two-images", want: []wantErr{
			{"jupyter-chinese.yaml", 4, "environments.jupyter.image",
				[]string{`environment "jupyter" is defined more than once`, `"apache/submarine:jupyter-notebook-0.7.0"`,
					`"apache/submarine:jupyter-notebook-0.7.0-chinese"`, "see also testdata/invalid/same-name-two-images/jupyter.yaml:3:"}},
		}},
		{dir: "password-conflict", want: []wantErr{
			{"a.yaml", 6, "environments.notebook.auth.password", []string{`environment "notebook" is defined more than once`, "not shown"}},
		}, never: []string{"hunter2-literal", "HARBOR_PASSWORD"}},
		{dir: "keep-typo", want: []wantErr{
			{"config.yaml", 5, "profiles.pai.openpai.keep[0]", []string{`"rest-sever" is not an OpenPAI v1.5.0 service`, `did you mean "rest-server"`}},
		}},
		{dir: "drop-required", want: []wantErr{
			{"config.yaml", 6, "profiles.pai.openpai.drop[0]", []string{`cannot drop "postgresql"`, "required by rest-server"}},
		}},
		{dir: "unsupported-version", want: []wantErr{
			{"config.yaml", 4, "profiles.pai.openpai.version", []string{`"v1.8.0" is not supported`, "supported versions: v1.5.0"}},
		}},
		{dir: "cache-unknown-os", want: []wantErr{
			{"config.yaml", 4, "profiles.pai.packageCache[0].os", []string{`"ubuntu20.04"`, "ubuntu16.04", "ubuntu18.04"}},
		}},
		{dir: "cache-duplicate-row", want: []wantErr{
			{"config.yaml", 5, "profiles.pai.packageCache[1].group",
				[]string{`group "nfs" for os "ubuntu18.04" is already defined by profiles.pai.packageCache[0]`, "config.yaml:4"}},
		}},
		{dir: "cache-bad-package-name", want: []wantErr{
			{"config.yaml", 6, "profiles.pai.packageCache[0].packages[0]", []string{`"openssh client"`, "Debian package names have no spaces or upper case"}},
		}},
		// cache-fourth-column, as config: a row has exactly group, os and
		// packages, so a precommands field is refused.
		{dir: "cache-fourth-column", want: []wantErr{
			{"config.yaml", 7, "profiles.pai.packageCache[0].precommands", []string{"field not allowed", "allowed here: group, os, packages"}},
		}},
		// Every rejected reference, each at its own image field.
		{dir: "bad-references", want: []wantErr{
			{"environments.yaml", 5, `environments."digest-with-colon".image`,
				[]string{`image "ghcr.io/example-org/source-controller:sha256:`, "the digest must follow '@', not ':'"}},
			{"environments.yaml", 7, `environments."with-scheme".image`,
				[]string{`image "https://harbor.lab.internal/release/notebook:1.1.0"`, "no URL scheme", `write "harbor.lab.internal/release/notebook:1.1.0"`}},
			{"environments.yaml", 9, `environments."uppercase-repo".image`,
				[]string{`image "registry.example.org/foo/ScreenApp:1"`, "repository names must be lowercase"}},
			{"environments.yaml", 11, `environments."empty-tag".image`,
				[]string{`image "ghcr.io/example-org/img:"`, "the tag after ':' is empty"}},
			{"images.yaml", 3, `images."empty-digest".reference`,
				[]string{`image "ghcr.io/example-org/img@"`, "the digest after '@' is empty"}},
			{"profiles.cue", 4, "profiles.lab.helper.image",
				[]string{`image "HTTP://ghcr.io/stowage/stowage-helper:v0.1.0"`, "no URL scheme"}},
		}},
		// The schema is closed: unknown fields are refused, with the
		// nearest known name.
		{dir: "unknown-fields", want: []wantErr{
			{"config.yaml", 4, "environments.jupyter.nodeSelectr", []string{"field not allowed", `did you mean "nodeSelector"?`}},
			{"config.yaml", 6, "profile", []string{"field not allowed", `did you mean "profiles"?`}},
		}},
		// A misspelt policy field gets the nearest name, and the kinds
		// it leaves out are named at the policy block (CUE's path for
		// them is kinds[0], an index, which once panicked the loader).
		{dir: "policy-kind-typo", want: []wantErr{
			{"config.yaml", 8, "profiles.lab.policy.kinds", []string{`kinds is required and missing: write kinds: followed by a list of at least one of "kyverno", "kyverno-ivpol", "policy-controller", "crio"`}},
			{"config.yaml", 9, "profiles.lab.policy.kind", []string{"field not allowed", `did you mean "kinds"?`}},
		}},
		{dir: "policy-missing-kinds", want: []wantErr{
			{"config.yaml", 8, "profiles.lab.policy.kinds", []string{"kinds is required and missing", `"kyverno", "kyverno-ivpol", "policy-controller", "crio"`}},
			{"config.yaml", 12, "profiles.audit.policy.kinds", []string{"kinds is required and missing", `"kyverno", "kyverno-ivpol", "policy-controller", "crio"`}},
		}},
		{dir: "policy-empty-kinds", want: []wantErr{
			{"config.yaml", 9, "profiles.lab.policy.kinds", []string{`kinds is empty: write at least one of "kyverno", "kyverno-ivpol", "policy-controller", "crio"`}},
		}, never: []string{"incompatible list lengths"}},
		// A key given twice in one YAML mapping is said to be, with
		// both lines, not reported as a conflict of values (which named
		// a kind the file never wrote, from the schema's disjunction).
		{dir: "policy-duplicate-key", want: []wantErr{
			{"config.yaml", 10, "profiles.lab.policy.kinds", []string{`duplicate key "kinds"`, "line 9 and again at line 10"}},
		}, never: []string{"policy-controller", "conflicting values"}},
		// A sigstore trusted root put directly in the config directory
		// is named once as what it is, with where it goes, not reported
		// field by field as unknown config.
		{dir: "trusted-root-inside", want: []wantErr{
			{"trusted_root.json", 2, "", []string{"is a sigstore trusted root", "not stowage config", `verify: trustedRoot: "trust/trusted_root.json"`}},
		}, never: []string{"field not allowed", "tlogs"}},
		{dir: "many-errors", want: []wantErr{
			{"environments.yaml", 8, "environments.jupyter.tolerations[0].operator", []string{`"Sometimes" is not allowed here; want one of "Equal", "Exists"`}},
			{"environments.yaml", 12, `environments."jupyter-gpu".nodeSelector."gpu type"`, []string{"not a valid label key"}},
			{"profiles.yaml", 5, "profiles.notebooks.pullers[0].namespace", []string{"lowercase RFC 1123 label"}},
			{"profiles.yaml", 7, "profiles.notebooks.pullers[0].refreshHours", []string{`"two"`}},
			{"profiles.yaml", 10, "profiles.notebooks.pullers[1].environments[1]", []string{`environment "jupytr" is not defined; did you mean "jupyter"?`}},
			{"profiles.yaml", 11, "profiles.notebooks.pullers[1].priority", []string{"field not allowed"}},
		}},
		{dir: "rendered-output-inside", want: []wantErr{
			{"rendered.yaml", 2, "", []string{"holds several YAML documents or a list, not stowage config"}},
			{"secret.json", 1, "", []string{"holds a Kubernetes object (apiVersion and kind), not stowage config"}},
		}, never: []string{"eyJ", "CANARY", "dockerconfigjson"}},
		{dir: "structural-cycle", want: []wantErr{
			{"cycle.cue", 4, `"_x".a`, []string{"structural cycle"}},
		}},
		{dir: "package-mismatch", want: []wantErr{
			{"b.cue", 1, "", []string{`package "notebooks" differs from package "stowage"`}},
		}},
		{dir: "package-missing", want: []wantErr{
			{"b.cue", 1, "", []string{`no package clause, while `, `a.cue is package "stowage"`, "begin this file with package stowage"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "invalid", tc.dir)
			cfg, err := Load(dir, Options{})
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want errors", dir, cfg)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T, want schema.Errors: %v", err, err)
			}
			if len(errs) != len(tc.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, w := range tc.want {
				if i >= len(errs) {
					t.Errorf("missing error at %s:%d %s", w.file, w.line, w.path)
					continue
				}
				checkErr(t, errs[i], filepath.Join(dir, w.file), w)
			}
			for _, n := range tc.never {
				if strings.Contains(err.Error(), n) {
					t.Errorf("the errors show %q:\n%v", n, err)
				}
			}
		})
	}
}

// checkErr checks one located error against w; file is the full name.
func checkErr(t *testing.T, e *Error, file string, w wantErr) {
	t.Helper()
	if e.File != file || e.Line != w.line || e.Path != w.path {
		t.Errorf("error at %s:%d %q, want %s:%d %q (%v)", e.File, e.Line, e.Path, file, w.line, w.path, e)
	}
	if e.Column < 1 {
		t.Errorf("error %v has no column", e)
	}
	prefix := fmt.Sprintf("%s:%d:%d: ", file, w.line, e.Column)
	if w.path != "" {
		prefix += w.path + ": "
	}
	if !strings.HasPrefix(e.Error(), prefix) {
		t.Errorf("error prints as %q, want it to start %q", e.Error(), prefix)
	}
	for _, s := range w.says {
		if !strings.Contains(e.Msg, s) {
			t.Errorf("message %q does not say %q", e.Msg, s)
		}
	}
}

// TestLoadReportsAllErrors: one load reports every problem, whether CUE
// finds it (a value outside a disjunction, an unknown field) or a Go rule
// does (label syntax, an undefined environment), across files.
func TestLoadReportsAllErrors(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "invalid", "many-errors"), Options{})
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %T %v, want schema.Errors", err, err)
	}
	files, paths := map[string]bool{}, map[string]bool{}
	for _, e := range errs {
		files[e.File] = true
		paths[e.Path] = true
	}
	if len(paths) < 2 || len(files) < 2 {
		t.Errorf("got errors at %d paths in %d files, want several of each:\n%v", len(paths), len(files), err)
	}
	for _, p := range []string{
		"environments.jupyter.tolerations[0].operator", // CUE: not one of the alternatives
		"profiles.notebooks.pullers[1].priority",       // CUE: closed schema
		"profiles.notebooks.pullers[0].namespace",      // Go: label syntax
		"profiles.notebooks.pullers[0].refreshHours",   // Go: does not decode
	} {
		if !paths[p] {
			t.Errorf("no error at %s:\n%v", p, err)
		}
	}
}

// TestLoadUnifiesFiles loads testdata/valid/mixed: a profile in CUE using a
// definition from another CUE file, environments in YAML, an image in JSON,
// and a stowage.lock.yaml that the schema would refuse if the loader read it.
func TestLoadUnifiesFiles(t *testing.T) {
	dir := filepath.Join("testdata", "valid", "mixed")
	cfg, err := Load(dir, Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Dir != dir {
		t.Errorf("Dir = %q, want %q", cfg.Dir, dir)
	}
	if got := cfg.Images["busybox"]; got.Reference != "busybox:1.31.1" || !slices.Equal(got.Platforms, []string{"linux/arm64"}) {
		t.Errorf("image from images.json = %+v", got)
	}
	gpu := cfg.Environments["jupyter-gpu"]
	if gpu.Image != "harbor.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0" ||
		gpu.Auth == nil || gpu.Auth.Password != "env:HARBOR_PASSWORD" || gpu.NodeSelector["nvidia.com/gpu.present"] != "true" ||
		len(gpu.Tolerations) != 1 || gpu.Tolerations[0].Operator != "Exists" {
		t.Errorf("environment from environments.yaml = %+v", gpu)
	}
	prof := cfg.Profiles["lab"]
	if prof.Namespace != "stowage-system" || prof.Secrets != v1alpha1.SecretsRender || prof.Helper.Image == "" {
		t.Errorf("profile from site.cue, with defaults = %+v", prof)
	}
	if len(prof.Pullers) != 2 {
		t.Fatalf("pullers = %+v, want 2", prof.Pullers)
	}
	for _, p := range prof.Pullers {
		// _tenant comes from tenant.cue.
		if !slices.Equal(p.Environments, []string{"jupyter", "jupyter-gpu"}) || !slices.Equal(p.Images, []string{"busybox"}) {
			t.Errorf("puller %s/%s = %+v, want tenant.cue's environments and images", p.Namespace, p.Name, p)
		}
		// refreshHours "2" (tenant-a) and 2 (tenant-b) mean the same.
		if p.RefreshHours != 2 {
			t.Errorf("puller %s refreshHours = %d, want 2", p.Namespace, p.RefreshHours)
		}
	}
}

// TestReadDirSkipsLock: the lock beside the config is not config.
func TestReadDirSkipsLock(t *testing.T) {
	files, err := ReadDir(filepath.Join("testdata", "valid", "mixed"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f.Name))
	}
	want := []string{"environments.yaml", "images.json", "site.cue", "tenant.cue"}
	if !slices.Equal(names, want) {
		t.Errorf("ReadDir = %v, want %v", names, want)
	}
}

// TestLoadFilesOrder: the order LoadFiles gets the files in changes
// neither the config nor the errors.
func TestLoadFilesOrder(t *testing.T) {
	for _, dir := range []string{filepath.Join("testdata", "valid", "mixed"), filepath.Join("testdata", "invalid", "many-errors")} {
		files, err := ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := LoadFiles(dir, files, Options{})
		r := rand.New(rand.NewPCG(1, 2))
		for range 5 {
			shuffled := slices.Clone(files)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			got, gotErr := LoadFiles(dir, shuffled, Options{})
			if !reflect.DeepEqual(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("%s: order %v gives a different result:\n%+v %v\nwant\n%+v %v", dir, names(shuffled), got, gotErr, want, wantErr)
			}
		}
	}
}

func names(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

// inMemory builds files from name/content pairs.
func inMemory(pairs ...string) []File {
	var files []File
	for i := 0; i+1 < len(pairs); i += 2 {
		files = append(files, File{Name: pairs[i], Data: []byte(pairs[i+1])})
	}
	return files
}

// TestRefreshHours: the Submarine design writes refreshHours as a string;
// "2" and 2 mean the same, anything but a positive whole number is refused
// at its field.
func TestRefreshHours(t *testing.T) {
	tests := []struct {
		value string // as written in CUE
		want  v1alpha1.Hours
		err   string
	}{
		{value: `"2"`, want: 2},
		{value: `2`, want: 2},
		{value: `"24"`, want: 24},
		{value: `"two"`, err: `refreshHours "two" is not a whole number of hours`},
		{value: `"02"`, err: `refreshHours "02": write the number without a sign or leading zeros ("2")`},
		{value: `"0"`, err: `refreshHours "0" is not a whole number of hours`},
		{value: `0`, err: "refreshHours must be at least 1 hour"},
		{value: `-3`, err: "refreshHours must be at least 1 hour"},
		{value: `1.5`, err: "1.5 is not allowed here; want one of int, string"},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			cfg, err := LoadFiles("cfg", inMemory("cfg/config.cue", `
environments: jupyter: image: "apache/submarine:jupyter-notebook-0.7.0"
profiles: p: pullers: [{
	name: "notebooks", namespace: "submarine", environments: ["jupyter"]
	refreshHours: `+tc.value+`
}]
`), Options{})
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if got := cfg.Profiles["p"].Pullers[0].RefreshHours; got != tc.want {
					t.Errorf("RefreshHours = %d, want %d", got, tc.want)
				}
				return
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("got %v, want one error", err)
			}
			checkErr(t, errs[0], "cfg/config.cue", wantErr{line: 5, path: "profiles.p.pullers[0].refreshHours", says: []string{tc.err}})
		})
	}
}

// TestCUEFilesLocated: errors in CUE files carry the file names as given
// and the lines of the values, for conflicts between two files too.
func TestCUEFilesLocated(t *testing.T) {
	_, err := LoadFiles("cfg", inMemory(
		"cfg/b.cue", "package stowage\n\nenvironments: jupyter: image: \"apache/submarine:jupyter-notebook-0.7.0-chinese\"\n",
		"cfg/a.cue", "package stowage\n\nenvironments: jupyter: image: \"apache/submarine:jupyter-notebook-0.7.0\"\n",
		"cfg/p.cue", "package stowage\n\nprofiles: p: pullers: [{name: \"n\", namespace: \"ns\", environments: [\"jupyter\"]}]\n",
	), Options{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("got %v, want one error", err)
	}
	checkErr(t, errs[0], "cfg/a.cue", wantErr{line: 3, path: "environments.jupyter.image", says: []string{
		`environment "jupyter" is defined more than once`, "jupyter-notebook-0.7.0-chinese", "see also cfg/b.cue:3:"}})
}

// TestSyntaxErrorLocated: a YAML syntax error names the file and line.
func TestSyntaxErrorLocated(t *testing.T) {
	_, err := LoadFiles("cfg", inMemory("cfg/config.yaml", "profiles:\n  p:\n    pullers:\n    - name: n\n       namespace: x\n"), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "cfg/config.yaml:5: ") {
		t.Errorf("got %v, want an error at cfg/config.yaml:5", err)
	}
}

// TestYAMLSyntaxAtFaultyLine: a YAML syntax error is reported at the line
// of the token at fault (counted by hand in each input), with the message
// of CUE's decoder, also where that decoder names the line where the
// enclosing block starts; where CUE's line is the right one, it stays.
func TestYAMLSyntaxAtFaultyLine(t *testing.T) {
	tests := []struct {
		name, data string
		line       int
		says       string
	}{
		// yaml.v2's parser problems: it counts their lines from 0.
		{"a list item's field indented short", "profiles:\n  p:\n    pullers:\n      - name: n\n        namespace: x\n       refreshHours: 1\n",
			6, "did not find expected '-' indicator"},
		{"a mapping key indented short", "images:\n  app:\n    reference: x\n   auth: {}\n", 4, "did not find expected key"},
		{"a list item inside a mapping", "images:\n  app:\n    reference: x\n  - y\n", 4, "did not find expected key"},
		{"an unclosed flow list", "images:\n  app:\n    platforms: [linux/amd64\n    reference: x\n", 4, "did not find expected ',' or ']'"},
		// A scanner problem, which yaml.v2 counts from 1.
		{"a plain value with a colon, inside a block", "images:\n  app:\n    reference: x\n    auth:\n      username: a: b\n", 5, "mapping values are not allowed in this context"},
		// CUE's decoder names the tab's line itself.
		{"a tab as indentation", "images:\n  app:\n\treference: x\n", 3, "found character that cannot start any token"},
		// CUE's decoder already names line 3, where "c:" follows the
		// over-indented plain scalar.
		{"a mapping key indented deeper", "images:\n  a: 1\n    c: 2\n", 3, "mapping values are not allowed in this context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadFiles("cfg", inMemory("cfg/config.yaml", tc.data), Options{})
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("got %v, want one error", err)
			}
			if e := errs[0]; e.File != "cfg/config.yaml" || e.Line != tc.line || e.Msg != tc.says {
				t.Errorf("got %s:%d %q, want cfg/config.yaml:%d %q", e.File, e.Line, e.Msg, tc.line, tc.says)
			}
		})
	}
	// A real file: refreshHours on line 11 is indented one space short of
	// its puller's fields; CUE's decoder names line 6.
	dir := filepath.Join("testdata", "invalid", "yaml-indentation")
	_, err := Load(dir, Options{})
	if want := filepath.Join(dir, "config.yaml") + ":11: did not find expected '-' indicator"; err == nil || err.Error() != want {
		t.Errorf("Load(%s) = %v, want %s", dir, err, want)
	}
	// The KRM function's functionConfig: lines of the document itself.
	_, err = LoadEmbedded("cfg", "fn.yaml", []byte("apiVersion: v1\nkind: Stowage\nspec:\n  images:\n    app:\n      reference: x\n     auth: {}\n"), "spec", nil, Options{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Line != 7 {
		t.Errorf("LoadEmbedded: got %v, want one error at fn.yaml:7", err)
	}
}

// TestYAMLSyntaxLargeFile: a 4 MiB config whose syntax error is on its
// last line is reported there, at once (the second parse is linear; a
// parser that is not took minutes on this file).
func TestYAMLSyntaxLargeFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("images:\n")
	n := 1
	for b.Len() < 4<<20-64 {
		fmt.Fprintf(&b, "  app%d:\n    reference: registry.example/app:%d\n", n, n)
		n += 2
	}
	b.WriteString("   bad: 1\n")
	lines := strings.Count(b.String(), "\n")
	_, err := LoadFiles("cfg", inMemory("cfg/config.yaml", b.String()), Options{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Line != lines || errs[0].Msg != "did not find expected key" {
		t.Errorf("got %v, want one error at line %d", err, lines)
	}
}

// TestAllowLiteralPasswords: the inline-password config loads when the
// user explicitly allows literal passwords.
func TestAllowLiteralPasswords(t *testing.T) {
	cfg, err := Load(filepath.Join("testdata", "invalid", "inline-password"), Options{AllowLiteralPasswords: true})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AllowLiteralPasswords || cfg.Environments["notebook"].Auth.Password != "literal-secret" {
		t.Errorf("config = %+v", cfg)
	}
}

// TestErrorFormat: the parts of a located error that are unknown are left
// out.
func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "a.yaml", Line: 3, Column: 5, Path: "profiles.p", Msg: "m"}, "a.yaml:3:5: profiles.p: m"},
		{Error{File: "a.yaml", Line: 3, Path: "profiles.p", Msg: "m"}, "a.yaml:3: profiles.p: m"},
		{Error{File: "a.yaml", Msg: "m"}, "a.yaml: m"},
		{Error{Path: "profiles", Msg: "m"}, "profiles: m"},
		{Error{Msg: "m"}, "m"},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v prints %q, want %q", tc.e, got, tc.want)
		}
	}
	errs := Errors{{File: "b", Msg: "x"}, {File: "a", Msg: "y"}}
	if got := errs.Error(); got != "b: x\na: y" {
		t.Errorf("Errors prints %q", got)
	}
}

// TestProfile: choosing a profile by name, or the only one.
func TestProfile(t *testing.T) {
	cfg := &v1alpha1.Config{Profiles: map[string]v1alpha1.Profile{"a": {Namespace: "x"}, "b": {}}}
	if _, _, err := cfg.Profile(""); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("Profile(\"\") with two profiles: %v, want an error listing them", err)
	}
	if n, p, err := cfg.Profile("a"); err != nil || n != "a" || p.Namespace != "x" {
		t.Errorf("Profile(a) = %q %+v %v", n, p, err)
	}
	if _, _, err := cfg.Profile("c"); err == nil || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("Profile(c): %v", err)
	}
	one := &v1alpha1.Config{Profiles: map[string]v1alpha1.Profile{"only": {}}}
	if n, _, err := one.Profile(""); err != nil || n != "only" {
		t.Errorf("Profile(\"\") with one profile = %q, %v", n, err)
	}
}

// TestErrorWithoutPlace: a problem with no field in any file (no profile
// at all) still names a file of the config.
func TestErrorWithoutPlace(t *testing.T) {
	_, err := LoadFiles("cfg", inMemory(
		"cfg/images.json", `{"images": {"busybox": {"reference": "busybox:1.31.1"}}}`,
		"cfg/environments.yaml", "environments:\n  jupyter:\n    image: apache/submarine:jupyter-notebook-0.7.0\n",
	), Options{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("got %v, want one error", err)
	}
	if got := errs[0].Error(); got != "cfg/environments.yaml: profiles: no profile is defined" {
		t.Errorf("error = %q", got)
	}
	if _, err := LoadFiles("cfg", nil, Options{}); err == nil {
		t.Error("LoadFiles with no files succeeded")
	}
}

// TestControlCharactersInNames: an environment or image name, or a config
// file name, holding a terminal control, a newline or a bidirectional
// override is refused, the name shown escaped: such a name would reach
// container names and every message raw (a newline in a file name made an
// error look like one about another file).
func TestControlCharactersInNames(t *testing.T) {
	src, err := os.ReadDir(filepath.Join("testdata", "valid", "mixed"))
	if err != nil {
		t.Fatal(err)
	}
	copyMixed := func(t *testing.T) string {
		dir := t.TempDir()
		for _, e := range src {
			data, err := os.ReadFile(filepath.Join("testdata", "valid", "mixed", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct{ name, file, data, want string }{
		{"environment", "extra.yaml", "environments:\n  \"sub\\e[31mred\\a\":\n    image: busybox:1.31.1\n",
			`extra.yaml:2:3: environments."sub\u001b[31mred\a": the name holds a control, format or non-UTF-8 character; use printable characters`},
		{"image", "extra.json", `{"images": {"x\u202ey": {"reference": "busybox:1.31.1"}}}`,
			`images."x\u202ey": the name holds a control`},
		{"file", "bad\x1b[31mx\ny.yaml", "images: {}\n",
			`bad\x1b[31mx\ny.yaml: the file name holds a control, format or non-UTF-8 character (shown escaped); rename the file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyMixed(t)
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatal("loaded; want the name refused")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error:\n%s\nwant it to contain %s", msg, tc.want)
			}
			if strings.ContainsAny(msg, "\x1b\a\u202e") || strings.Contains(msg, "x\ny") {
				t.Errorf("error holds the raw characters: %q", msg)
			}
		})
	}
}

// TestDecoderErrorNamesFileOnce: a YAML decoder error that carries the
// file name but no line (nesting past the decoder's depth) names the file
// once.
func TestDecoderErrorNamesFileOnce(t *testing.T) {
	deep := "a: " + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "\n"
	_, err := LoadFiles("cfg", inMemory("cfg/deep.yaml", deep), Options{})
	if err == nil || strings.Count(err.Error(), "cfg/deep.yaml") != 1 || !strings.Contains(err.Error(), "max depth") {
		t.Errorf("error %v; want cfg/deep.yaml named once, with the depth", err)
	}
}
