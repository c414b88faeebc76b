package apitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

const example = "../examples/openpai-offline"

// readLock reads the example's stowage.lock.yaml with render.ReadLock.
func readLock(t *testing.T) *v1alpha1.ImageLock {
	t.Helper()
	l, err := render.ReadLock(filepath.Join(example, v1alpha1.ImageLockFile))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// exampleEnv is the environment cmd/stowage's golden test renders the
// examples with (golden_test.go): submarine-notebooks' Harbor password.
var exampleEnv = map[string]string{"SUBMARINE_HARBOR_PASSWORD": "example-harbor-robot-password", "STOWAGE_ALLOW_ENV": "SUBMARINE_HARBOR_PASSWORD"}

// TestRenderEveryExample: every profile of every example with a lock,
// rendered from Go as a program outside the module would (schema.Load,
// render.ReadLock, render.ReadNeeded, render.Render, render.WriteStream),
// gives byte for byte the golden file `stowage render` is held to
// (cmd/stowage TestGoldenExamples): gpu-platform's admission policies
// inline its verify key, submarine-notebooks' Secret holds its password.
func TestRenderEveryExample(t *testing.T) {
	locks, err := filepath.Glob(filepath.Join("..", "examples", "*", v1alpha1.ImageLockFile))
	if err != nil || len(locks) == 0 {
		t.Fatalf("no example with a lock: %v", err)
	}
	getenv := func(k string) (string, bool) { v, ok := exampleEnv[k]; return v, ok }
	rendered := 0
	for _, lockPath := range locks {
		dir := filepath.Dir(lockPath)
		cfg, err := schema.Load(dir, schema.WithLimits(schema.Limits{Time: time.Minute}))
		if err != nil {
			t.Fatal(err)
		}
		l, err := render.ReadLock(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, profile := range cfg.ProfileNames() {
			name := filepath.Base(dir) + "/" + profile
			passwords, trust, err := render.ReadNeeded(dir, cfg, profile, getenv)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			objs, err := render.Render(render.Input{Config: cfg, Lock: l, Profile: profile, Passwords: passwords, Trust: trust})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			var stream bytes.Buffer
			if err := render.WriteStream(&stream, objs); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("..", "golden", filepath.Base(dir), profile+".yaml")
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stream.Bytes(), want) {
				t.Errorf("%s: the Go API's stream differs from %s; first difference:\n%s", name, golden, firstDiff(want, stream.Bytes()))
			}
			rendered++
		}
	}
	if rendered < 3 {
		t.Errorf("rendered %d profiles, want every example's (3 or more)", rendered)
	}
}

// firstDiff shows the first line where got differs from want.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(none)"
}

// TestParseLockRefusesUnknownField: a lock with a field ImageLock does not
// have is refused as the CLI refuses it, with the file, line and field.
func TestParseLockRefusesUnknownField(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(example, v1alpha1.ImageLockFile))
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "extra: 1\n"...)
	line := bytes.Count(data, []byte("\n"))
	_, err = render.ParseLock(data, "stowage.lock.yaml")
	if want := fmt.Sprintf("stowage.lock.yaml:%d: extra: field not allowed (allowed here: apiVersion, kind, metadata, spec)", line); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestRenderExample: the example config loaded with schema.Load and
// rendered with render.Render gives, through WriteStream, exactly the
// committed golden file `stowage render` is held to; WriteDir writes the
// same objects as files with a kustomization.yaml listing them.
func TestRenderExample(t *testing.T) {
	cfg, err := schema.Load(example, schema.WithLimits(schema.Limits{Time: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(render.Input{Config: cfg, Lock: readLock(t), Profile: "offline"})
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if err := render.WriteStream(&stream, objs); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../golden/openpai-offline/offline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stream.Bytes(), want) {
		t.Errorf("render.WriteStream differs from golden/openpai-offline/offline.yaml (%d bytes, want %d)", stream.Len(), len(want))
	}

	dir := filepath.Join(t.TempDir(), "out")
	if err := render.WriteDir(context.Background(), dir, objs); err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if !strings.Contains(string(k), "- "+o.FileName()+"\n") {
			t.Errorf("kustomization.yaml does not list %s:\n%s", o.FileName(), k)
		}
		if _, err := os.Stat(filepath.Join(dir, o.FileName())); err != nil {
			t.Error(err)
		}
	}
}

// TestLoadRefusesUnknownField: a located error for a field the schema does
// not have.
func TestLoadRefusesUnknownField(t *testing.T) {
	_, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/c.yaml", Data: []byte("images: {x: {reference: busybox:1, colour: red}}\nprofiles: {p: {namespace: n}}\n")}})
	if want := "cfg/c.yaml:1:36: images.x.colour: field not allowed (allowed here: artifact, auth, byNodeLabel, platforms, reference, verify)"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// functionInput is a ResourceList carrying the example's config as a
// Stowage functionConfig and its lock as an item, as kustomize passes
// them to the function.
func functionInput(t *testing.T) []byte {
	t.Helper()
	cfg, err := schema.Load(example)
	if err != nil {
		t.Fatal(err)
	}
	_, prof, err := cfg.Profile("offline")
	if err != nil {
		t.Fatal(err)
	}
	// The effective profile carries the top-level site and helper.
	fc := v1alpha1.Stowage{
		APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.StowageKind, Metadata: v1alpha1.ObjectMeta{Name: "prepull"},
		Spec: v1alpha1.StowageSpec{Profile: "offline", Config: v1alpha1.Config{
			Images: cfg.Images, Environments: cfg.Environments, Profiles: map[string]v1alpha1.Profile{"offline": *prof},
		}},
	}
	l := readLock(t)
	l.Metadata.Annotations = map[string]string{"config.kubernetes.io/local-config": "true", "config.kubernetes.io/path": "stowage.lock.yaml"}
	rl := map[string]any{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "functionConfig": fc, "items": []any{l}}
	b, err := yaml.Marshal(rl)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFunction: the Processor through kyaml's framework and the command
// of NewCommand render the example's objects (the lock item first, then
// the ConfigMaps and DaemonSets render.Render gives), and the command's
// --max-input-bytes refuses a larger input.
func TestFunction(t *testing.T) {
	in := functionInput(t)
	var out bytes.Buffer
	if err := framework.Execute(&fn.Processor{Dir: example}, &kio.ByteReadWriter{Reader: bytes.NewReader(in), Writer: &out}); err != nil {
		t.Fatalf("%v\n%s", err, in)
	}
	got := objects(t, out.Bytes())
	want := []string{
		"ImageLock /stowage-lock",
		"ConfigMap default/openpai-package-cache", "ConfigMap default/openpai-services", "ConfigMap pai-prepull/openpai-prepull-records",
		"DaemonSet pai-prepull/openpai-prepull", "DaemonSet pai-prepull/openpai-prepull-master", "DaemonSet pai-prepull/openpai-prepull-worker",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	cmd := fn.NewCommand()
	var cmdOut, cmdErr bytes.Buffer
	cmd.SetIn(bytes.NewReader(in))
	cmd.SetOut(&cmdOut)
	cmd.SetErr(&cmdErr)
	cmd.SetArgs([]string{"--max-input-bytes", "100"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Errorf("a 100-byte bound: %v", err)
	}
	cmd = fn.NewCommand()
	cmdOut.Reset()
	cmd.SetIn(bytes.NewReader(in))
	cmd.SetOut(&cmdOut)
	cmd.SetErr(&cmdErr)
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, cmdErr.String())
	}
	if c := objects(t, cmdOut.Bytes()); strings.Join(c, "\n") != strings.Join(want, "\n") {
		t.Errorf("NewCommand's items:\n%s\nwant:\n%s", strings.Join(c, "\n"), strings.Join(want, "\n"))
	}
}

// objects lists the items of a ResourceList as "Kind namespace/name".
func objects(t *testing.T, rl []byte) []string {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: bytes.NewReader(rl)}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.GetKind()+" "+it.GetNamespace()+"/"+it.GetName())
	}
	return out
}
