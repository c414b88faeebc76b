package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

// startupNamesConfig gates two pullers whose namespace and name join to
// one cluster-scoped name, "stowage-startup-a-b-c"; nsOfC is the first
// puller's namespace.
func startupNamesConfig(nsOfC string) string {
	return `images:
  tools:
    reference: busybox:1.36
profiles:
  lab:
    namespace: prepull
    pullers:
      - name: c
        namespace: ` + nsOfC + `
        images: [tools]
        startup:
          taint: {key: stowage.dev/c-images, effect: NoSchedule}
      - name: b-c
        namespace: a
        images: [tools]
        startup:
          taint: {key: stowage.dev/b-c-images, effect: NoSchedule}
`
}

// TestStartupNamesCollide: pullers "c" in "a-b" and "b-c" in "a", both
// gated, would render two ClusterRoles (and bindings, admission policies)
// named "stowage-startup-a-b-c"; vet, render and render -d exit 1 with an
// error at the second puller's name naming both pullers and the name, and
// render no file. With the first puller in namespace "ab" the same config
// renders.
func TestStartupNamesCollide(t *testing.T) {
	t.Parallel()
	refs := append([]string{"busybox:1.36"}, cliDefaultImages...)
	dir := cliConfigDir(t, refs, "config.yaml", startupNamesConfig("a-b"))
	want := []string{
		"config.yaml:13:9: profiles.lab.pullers[1].name: ",
		`puller "b-c" in namespace "a"`,
		`pullers[0] (puller "c" in namespace "a-b")`,
		`"stowage-startup-a-b-c"`,
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{{"vet", dir}, {"render", dir}, {"render", dir, "-d", out}} {
		stdout, stderr, code := runCLI(t, nil, args...)
		if code != 1 || len(stdout) != 0 {
			t.Errorf("%v: exit %d, stdout %d bytes; want 1 and none", args, code, len(stdout))
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", args, stderr, w)
			}
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("render -d wrote %s (%v)", out, err)
	}

	stdout, stderr, code := runCLI(t, nil, "vet", dir, "-o", "json")
	var r v1alpha1.VetReport
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("vet -o json: %v\n%s", err, stdout)
	}
	if code != 1 || len(r.Errors) != 1 || r.Errors[0].Line != 13 || r.Errors[0].Field != "profiles.lab.pullers[1].name" ||
		!strings.HasSuffix(r.Errors[0].File, "config.yaml") || !strings.Contains(r.Errors[0].Message, `"stowage-startup-a-b-c"`) {
		t.Errorf("vet -o json: exit %d, errors %+v, stderr %q", code, r.Errors, stderr)
	}

	ok := cliConfigDir(t, refs, "config.yaml", startupNamesConfig("ab"))
	stdout, stderr, code = runCLI(t, nil, "render", ok)
	for _, name := range []string{"stowage-startup-ab-c", "stowage-startup-a-b-c"} {
		// metadata.name of the ClusterRole, its binding, the policy and
		// its binding, and the binding's roleRef.
		if n := strings.Count(string(stdout), "  name: "+name+"\n"); code != 0 || n != 5 {
			t.Errorf("render of distinct names: exit %d, %s %d times, stderr %q; want 0 and 5", code, name, n, stderr)
		}
	}
}

// TestStartupTopLevelPause: examples/gpu-platform with a top-level
// helper.pause (every profile's default) is refused by vet before the
// lock is read: one located error per gated puller, at its startup field,
// and no word of the lock (whose pause image entry is missing).
func TestStartupTopLevelPause(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "gpu-platform")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "examples", "gpu-platform"))); err != nil {
		t.Fatal(err)
	}
	cue := filepath.Join(dir, "platform.cue")
	src := readFile(t, cue)
	if err := os.WriteFile(cue, append(src, "\nhelper: pause: \"registry.k8s.io/pause:3.9\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, nil, "vet", dir, "-o", "json")
	var r v1alpha1.VetReport
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("vet -o json: %v\n%s", err, stdout)
	}
	want := []v1alpha1.ReportError{
		{Line: 66, Column: 3, Field: "profiles.gpu.pullers[0].startup", Message: `puller "gpu-platform" has a startup gate, but the top-level helper.pause (profile "gpu"'s default)`},
		{Line: 81, Column: 3, Field: `profiles."gpu-readiness".pullers[0].startup`, Message: `puller "models" has a startup gate, but the top-level helper.pause (profile "gpu-readiness"'s default)`},
	}
	if code != 1 || len(r.Errors) != len(want) {
		t.Fatalf("vet -o json: exit %d, errors %+v, stderr %q; want 1 and %d errors", code, r.Errors, stderr, len(want))
	}
	for i, w := range want {
		g := r.Errors[i]
		if g.File != cue || g.Line != w.Line || g.Column != w.Column || g.Field != w.Field || !strings.HasPrefix(g.Message, w.Message) {
			t.Errorf("error %d: %+v; want %s:%d:%d %s %q…", i, g, cue, w.Line, w.Column, w.Field, w.Message)
		}
		if strings.Contains(g.Message, "lock") {
			t.Errorf("error %d speaks of the lock: %q", i, g.Message)
		}
	}
	_, stderr, code = runCLI(t, nil, "vet", dir)
	if code != 1 || !strings.Contains(stderr, cue+":66:3: profiles.gpu.pullers[0].startup: puller \"gpu-platform\"") || strings.Contains(stderr, "stowage lock") {
		t.Errorf("vet: exit %d, stderr %q", code, stderr)
	}
}
