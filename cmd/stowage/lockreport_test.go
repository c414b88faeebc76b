package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// decodeLockReport decodes lock -o json's stdout: exactly one object, with
// no field the report type does not know.
func decodeLockReport(t *testing.T, stdout []byte) v1alpha1.LockReport {
	t.Helper()
	var r v1alpha1.LockReport
	dec := json.NewDecoder(bytes.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not lock's JSON report: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than the report:\n%s", stdout)
	}
	return r
}

// TestLockJSON: lock -o json on a run where two images fail (one behind
// credentials), then the run that resolves them, a run with nothing to
// do, --check of an image the lock lacks, and a config error. Each prints
// one JSON object on stdout with the exit code of the text form.
func TestLockJSON(t *testing.T) {
	t.Parallel()
	const password = "pw-Secret-4711"
	reg := startInProcess(t)
	h := reg.Host
	app, tool, helper, pause := h+"/team/app:1.0", h+"/team/tool:2", h+"/stowage/helper:v1", h+"/k8s/pause:3.10"
	seed(t, nil, []string{app, tool, helper, pause}, registry.WithInsecure(h))
	dir := writeConfig(t, map[string]configImage{
		"app":  {Ref: app},
		"tool": {Ref: tool, User: "bot", Password: "env:TOOL_PASSWORD"},
	}, helper, pause)
	env := map[string]string{"TOOL_PASSWORD": password, "STOWAGE_ALLOW_ENV": "TOOL_PASSWORD"}
	lockPath := filepath.Join(dir, lock.FileName)
	entry := func(ref string) lock.Entry {
		e, err := offlineimage.Entry(ref)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	reg.Faults.Add(registrytest.Rule{Path: "/v2/team/app/manifests/", Fault: registrytest.Status(http.StatusNotFound, nil)})
	reg.Faults.Add(registrytest.Rule{Path: "/v2/team/tool/manifests/", Fault: registrytest.Status(http.StatusForbidden, nil)})
	stdout, stderr, code := runCLI(t, env, "lock", dir, "--insecure-registry", h, "-o", "json")
	if strings.Contains(string(stdout)+stderr, password) {
		t.Errorf("the password is in the output:\n%s\n%s", stdout, stderr)
	}
	r := decodeLockReport(t, stdout)
	if code != 1 || r.OK || r.Lock != lockPath || !r.Written || r.Entries != 2 || len(r.Stale) != 0 || len(r.Errors) != 0 {
		t.Fatalf("exit %d, report %+v; stderr:\n%s", code, r, stderr)
	}
	if !strings.Contains(stderr, "2 images failed") || !strings.Contains(stderr, "keeps the 2 entries it has") {
		t.Errorf("stderr is not the text form's:\n%s", stderr)
	}
	var keys []string
	for _, c := range r.Changes {
		keys = append(keys, c.Key)
		if e := entry(c.Key); c.Reference != c.Key || c.NewDigest != e.Digest || c.OldDigest != "" || c.NewKind != string(e.Kind) ||
			!slices.Equal(c.Pullers, []string{"p/ns/pre"}) {
			t.Errorf("change %+v, want %s added at %s", c, c.Key, e.Digest)
		}
	}
	if want := []string{pause, helper}; !slices.Equal(keys, want) {
		t.Errorf("changes of %v, want the resolved %v", keys, want)
	}
	if len(r.Failures) != 2 {
		t.Fatalf("failures %+v, want app and tool", r.Failures)
	}
	for i, want := range []struct{ image, answer string }{{app, "404 Not Found"}, {tool, "403 Forbidden"}} {
		f := r.Failures[i]
		if f.Image != want.image || f.Key != want.image || f.Registry != h || f.UsedBy == "" || f.Op == "" ||
			!strings.HasPrefix(f.Message, `image "`+want.image+`"`) || !strings.Contains(f.Message, want.answer) || !strings.Contains(stderr, f.Message) {
			t.Errorf("failure %d = %+v, want %s answered %s, its message as on stderr", i, f, want.image, want.answer)
		}
	}

	reg.Faults.Reset()
	stdout, stderr, code = runCLI(t, env, "lock", dir, "--insecure-registry", h, "-o", "json")
	r = decodeLockReport(t, stdout)
	if code != 0 || len(stderr) != 0 || !r.OK || !r.Written || r.Entries != 4 || len(r.Failures) != 0 || len(r.Errors) != 0 {
		t.Fatalf("second run: exit %d, report %+v; stderr:\n%s", code, r, stderr)
	}
	keys = nil
	for _, c := range r.Changes {
		keys = append(keys, c.Key)
	}
	if want := []string{app, tool}; !slices.Equal(keys, want) {
		t.Errorf("second run's changes %v, want %v", keys, want)
	}

	// Nothing to do: nothing written, every list empty (not null).
	stdout, stderr, code = runCLI(t, env, "lock", dir, "--insecure-registry", h, "-o", "json")
	want := `{
  "ok": true,
  "lock": "` + lockPath + `",
  "written": false,
  "entries": 4,
  "changes": [],
  "failures": [],
  "stale": [],
  "errors": []
}
`
	if code != 0 || len(stderr) != 0 || string(stdout) != want {
		t.Errorf("up-to-date run: exit %d, stderr %s, stdout\n%s\nwant\n%s", code, stderr, stdout, want)
	}

	// --check: the image a new config adds is missing, the one it drops
	// unused; nothing is written.
	before := readFile(t, lockPath)
	other := h + "/team/other:3"
	dir2 := writeConfig(t, map[string]configImage{"app": {Ref: app}, "other": {Ref: other}}, helper, pause)
	if err := os.WriteFile(filepath.Join(dir2, lock.FileName), before, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, nil, "lock", dir2, "--check", "-o", "json")
	r = decodeLockReport(t, stdout)
	wantStale := []bump.StaleEntry{{Status: "missing", Key: other, Reference: other}, {Status: "unused", Key: tool}}
	if code != 1 || r.OK || r.Written || r.Entries != 4 || !reflect.DeepEqual(r.Stale, wantStale) || len(r.Changes) != 0 ||
		len(r.Failures) != 0 || len(r.Errors) != 0 || !strings.Contains(stderr, "unused   "+tool) {
		t.Errorf("--check: exit %d, report %+v, want stale %+v; stderr:\n%s", code, r, wantStale, stderr)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir2, lock.FileName)), before) {
		t.Error("--check changed the lock")
	}
	stdout, _, code = runCLI(t, env, "lock", dir, "--check", "-o", "json")
	if r = decodeLockReport(t, stdout); code != 0 || !r.OK || len(r.Stale) != 0 || r.Entries != 4 {
		t.Errorf("--check of a lock in line: exit %d, report %+v", code, r)
	}

	// A config error is located as vet -o json locates it.
	bad := cliInvalidDir(t)
	stdout, stderr, code = runCLI(t, nil, "lock", bad, "-o", "json")
	r = decodeLockReport(t, stdout)
	i := slices.IndexFunc(r.Errors, func(e v1alpha1.ReportError) bool { return e.Field == "profiles.notebooks.pullers[0].namespace" })
	if code != 1 || r.OK || r.Written || i < 0 || !strings.Contains(stderr, "Tenant_A") {
		t.Fatalf("config error: exit %d, report %+v; stderr:\n%s", code, r, stderr)
	}
	if e := r.Errors[i]; e.File != filepath.Join(bad, "config.yaml") || e.Line != 6 || !strings.Contains(e.Message, `"Tenant_A"`) {
		t.Errorf("namespace error %+v", e)
	}

	// A lock file that is not a lock: the report names it (the config
	// said where it is) and locates the error in it.
	dir3 := writeConfig(t, map[string]configImage{"app": {Ref: app}}, helper, pause)
	lock3 := filepath.Join(dir3, lock.FileName)
	if err := os.WriteFile(lock3, []byte("entries: [1, 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, nil, "lock", dir3, "--check", "-o", "json")
	r = decodeLockReport(t, stdout)
	if code != 1 || r.OK || r.Written || r.Lock != lock3 || len(r.Errors) != 1 || r.Errors[0].File != lock3 || !strings.Contains(stderr, lock3) {
		t.Errorf("invalid lock: exit %d, report %+v, want the lock %s named; stderr:\n%s", code, r, lock3, stderr)
	}
	// An entry that does not validate: its file, line and field.
	bad3 := "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\nspec:\n  images:\n" +
		"  - name: " + app + "\n    reference: " + app + "\n    digest: sha256:abc\n    kind: manifest\n    size: 1\n"
	if err := os.WriteFile(lock3, []byte(bad3), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, nil, "lock", dir3, "--check", "-o", "json")
	r = decodeLockReport(t, stdout)
	if code != 1 || r.Lock != lock3 || len(r.Errors) != 1 || r.Errors[0].File != lock3 || r.Errors[0].Line != 9 ||
		r.Errors[0].Field != "spec.images[0].digest" || !strings.Contains(stderr, r.Errors[0].Message) {
		t.Errorf("invalid entry: exit %d, report %+v, want %s:9 spec.images[0].digest; stderr:\n%s", code, r, lock3, stderr)
	}

	if stdout, _, code := runCLI(t, nil, "lock", dir, "-o", "xml"); code != 2 || len(stdout) != 0 {
		t.Errorf("lock -o xml: exit %d, stdout %q; want 2 and nothing", code, stdout)
	}
}

// TestVetJSONLockErrors: vet -o json of a config whose lock is broken
// locates each problem in the lock as stderr says it: a YAML syntax error
// at its line (said once), an unknown field of an entry and a stray key
// at the top by their names, with no Go type in any message.
func TestVetJSONLockErrors(t *testing.T) {
	src := filepath.Join(repoRoot, "examples", "submarine-notebooks")
	dir := t.TempDir()
	for _, name := range []string{"environments.yaml", "profiles.cue", lock.FileName} {
		if err := os.WriteFile(filepath.Join(dir, name), readFile(t, filepath.Join(src, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lockPath := filepath.Join(dir, lock.FileName)
	good := string(readFile(t, lockPath))
	env := map[string]string{"SUBMARINE_HARBOR_PASSWORD": "x", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}
	vet := func(t *testing.T, data string) ([]v1alpha1.ReportError, string) {
		t.Helper()
		if err := os.WriteFile(lockPath, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI(t, env, "vet", dir, "-o", "json")
		var r v1alpha1.VetReport
		dec := json.NewDecoder(bytes.NewReader(stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stdout is not vet's JSON report: %v\n%s", err, stdout)
		}
		if code != 1 || r.OK {
			t.Fatalf("exit %d, report %+v; stderr:\n%s", code, r, stderr)
		}
		for _, e := range r.Errors {
			if !strings.Contains(stderr, e.Message) {
				t.Errorf("error %+v is not on stderr:\n%s", e, stderr)
			}
			if m := strings.ReplaceAll(e.Message, lockPath, "LOCK"); strings.Contains(m, "lock.") || strings.Contains(m, "v1alpha1.") || strings.Contains(m, "yaml: line") {
				t.Errorf("error %+v names a Go type or says its line twice", e)
			}
		}
		return r.Errors, stderr
	}

	// Line 13 ("    size: 2407") indented one space short.
	errs, _ := vet(t, strings.Replace(good, "    size: 2407\n", "   size: 2407\n", 1))
	want := []v1alpha1.ReportError{{File: lockPath, Line: 13, Message: lockPath + ":13: did not find expected key"}}
	if !reflect.DeepEqual(errs, want) {
		t.Errorf("syntax error: %+v, want %+v", errs, want)
	}

	// A control character: its line and column.
	errs, _ = vet(t, strings.Replace(good, "kind: manifest\n    size: 2407", "kind: \"manifest\x01\"\n    size: 2407", 1))
	if len(errs) != 1 || errs[0].File != lockPath || errs[0].Line != 12 || errs[0].Column != 20 ||
		!strings.HasPrefix(errs[0].Message, lockPath+":12:20: U+0001 is a control character") {
		t.Errorf("control character: %+v, want %s:12:20", errs, lockPath)
	}

	// An unknown field of the first entry (line 14), and a key at the top
	// with a flow list after the last entry.
	data := strings.Replace(good, "    size: 2407\n", "    size: 2407\n    extra: 1\n", 1) + "x: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"
	last := strings.Count(data, "\n")
	errs, _ = vet(t, data)
	want = []v1alpha1.ReportError{
		{File: lockPath, Line: 14, Field: "spec.images[0].extra", Message: lockPath + ":14: spec.images[0] (docker.io/apache/submarine:jupyter-notebook-0.7.0): extra: field not allowed (allowed here: digest, kind, name, platform, platforms, reference, size, verifiedBy)"},
		{File: lockPath, Line: last, Field: "x", Message: lockPath + ":" + strconv.Itoa(last) + ": x: field not allowed (allowed here: apiVersion, kind, metadata, spec)"},
	}
	if !reflect.DeepEqual(errs, want) {
		t.Errorf("unknown fields:\n%+v\nwant\n%+v", errs, want)
	}

	// A value of the wrong type.
	errs, _ = vet(t, strings.Replace(good, "    size: 2407\n", "    size: [2407]\n", 1))
	want = []v1alpha1.ReportError{{File: lockPath, Line: 13, Field: "spec.images[0].size", Message: lockPath + ":13: spec.images[0] (docker.io/apache/submarine:jupyter-notebook-0.7.0): size: a list where an integer is expected"}}
	if !reflect.DeepEqual(errs, want) {
		t.Errorf("wrong type:\n%+v\nwant\n%+v", errs, want)
	}
}
