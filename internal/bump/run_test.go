package bump

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/schema"
)

// runConfig is a config of two images and one profile, written in a
// directory of its own.
const runConfig = `images: {
	app: reference: "registry.lab.internal/app:1"
	tools: reference: "registry.lab.internal/tools:2"
}
profiles: lab: pullers: [{name: "tools", namespace: "prepull", images: ["app", "tools"]}]
`

// runInput is a bump run of runConfig in a new directory: its lock holds
// the stand-in entries of every image (written to the lock file), with
// --render and --pr-body in a directory beside it. resolve is what the
// registry answers.
func runInput(t *testing.T, resolve func(context.Context) (*lock.Lock, error)) (Input, *lock.Lock) {
	t.Helper()
	return runInputOf(t, runConfig, resolve)
}

// runInputOf is runInput of the config config.
func runInputOf(t *testing.T, config string, resolve func(context.Context) (*lock.Lock, error)) (Input, *lock.Lock) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "config")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.cue"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := plan.All(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := &lock.Lock{}
	for _, img := range all.Images {
		e, err := offlineimage.Entry(img.Ref.Written)
		if err != nil {
			t.Fatal(err)
		}
		old.Put(e)
	}
	data := old.Marshal()
	path := filepath.Join(dir, "stowage.lock.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Input{
		Config: cfg, Dir: dir, LockPath: path, Old: old, OldData: data, Images: all.Images,
		RenderDir: filepath.Join(root, "out"), Profile: "lab", PRBody: filepath.Join(root, "pr.md"),
		Connect: func() (func(context.Context) (*lock.Lock, error), error) { return resolve, nil },
	}, old
}

// bumped is old with the entry of key at another digest.
func bumped(t *testing.T, old *lock.Lock, key string) *lock.Lock {
	t.Helper()
	next := &lock.Lock{}
	for _, e := range old.Entries {
		if e.Name == key {
			e.Digest = digest('9')
		}
		next.Put(e)
	}
	return next
}

// readOr returns the file's bytes, or "absent".
func readOr(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunWritesTogether: a digest that moved is written to the lock, the
// profile is rendered into --render with it and the body into --pr-body;
// a second run finds everything current and writes nothing.
func TestRunWritesTogether(t *testing.T) {
	var next *lock.Lock
	in, old := runInput(t, func(context.Context) (*lock.Lock, error) { return next, nil })
	const key = "registry.lab.internal/app:1"
	next = bumped(t, old, key)
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Key != key || !res.LockChanged || !res.RenderChanged || !res.Changed() || res.Err != nil || res.Entries != len(next.Entries) {
		t.Fatalf("result %+v", res)
	}
	if got := readOr(t, in.LockPath); got != string(next.Marshal()) {
		t.Errorf("lock file:\n%s", got)
	}
	if got := readOr(t, in.PRBody); got != output.PRBodyMarker+res.Report.Body || !strings.Contains(got, digest('9')[7:19]) {
		t.Errorf("PR body:\n%s", got)
	}
	if res.Report.Title == "" || res.Report.Body == "" {
		t.Errorf("report %+v", res.Report)
	}
	files, err := filepath.Glob(filepath.Join(in.RenderDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("rendered %q, %v", files, err)
	}
	var pinned bool
	for _, f := range files {
		pinned = pinned || strings.Contains(readOr(t, f), "registry.lab.internal/app:1@"+digest('9'))
	}
	if !pinned {
		t.Errorf("no rendered file of %q pins the new digest", files)
	}

	// Again from what the first run wrote: nothing to change.
	in.Old, in.OldData = next, next.Marshal()
	body := readOr(t, in.PRBody)
	res, err = Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 || res.LockChanged || res.RenderChanged || res.Changed() || res.Report.Body != "" {
		t.Errorf("second run: %+v", res)
	}
	if got := readOr(t, in.PRBody); got != body {
		t.Errorf("the PR body was rewritten:\n%s", got)
	}
}

// TestRunRendersSecretsPrivate: the Secret bump --render writes is 0600,
// the other files 0644, as render --output-dir writes them.
func TestRunRendersSecretsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
	var next *lock.Lock
	in, old := runInputOf(t, `images: app: {
	reference: "registry.lab.internal/app:1"
	auth: {username: "robot", password: "env:STOWAGE_APP_PASSWORD"}
}
profiles: lab: {secrets: "render", pullers: [{name: "tools", namespace: "prepull", images: ["app"]}]}
`, func(context.Context) (*lock.Lock, error) { return next, nil })
	in.Getenv = func(k string) (string, bool) { return "pw", k == "STOWAGE_APP_PASSWORD" }
	next = bumped(t, old, "registry.lab.internal/app:1")
	if res, err := Run(context.Background(), in); err != nil || !res.RenderChanged {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	ents, err := os.ReadDir(in.RenderDir)
	if err != nil {
		t.Fatal(err)
	}
	secrets := 0
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		want := fs.FileMode(0o644)
		if strings.HasPrefix(e.Name(), "secret-") {
			want = 0o600
			secrets++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("mode of %s = %v, want %v", e.Name(), fi.Mode().Perm(), want)
		}
	}
	if secrets == 0 {
		t.Errorf("no Secret rendered into %s", in.RenderDir)
	}
}

// TestRunAllOrNothing: a failed render, a failed resolution (without
// --keep-going) or an output on an input leaves every file as it was;
// the outputs are checked before Connect, and Connect's error is
// returned as it is.
func TestRunAllOrNothing(t *testing.T) {
	unchanged := func(t *testing.T, in Input) {
		t.Helper()
		if got := readOr(t, in.LockPath); got != string(in.OldData) {
			t.Errorf("the lock changed:\n%s", got)
		}
		if got := readOr(t, in.PRBody); got != "absent" {
			t.Errorf("the PR body was written:\n%s", got)
		}
		if _, err := os.Stat(in.RenderDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the render directory was written (%v)", err)
		}
	}
	failure := registry.Errors{{Image: "registry.lab.internal/tools:2", Key: "registry.lab.internal/tools:2", Registry: "registry.lab.internal", Op: "HEAD tag 2", Answer: "503 Service Unavailable"}}

	t.Run("render fails", func(t *testing.T) {
		var in Input
		in, _ = runInput(t, func(context.Context) (*lock.Lock, error) {
			// The lock the registry answers lacks an image render needs.
			next := &lock.Lock{}
			for _, e := range bumped(t, in.Old, "registry.lab.internal/app:1").Entries {
				if e.Name != "registry.lab.internal/tools:2" {
					next.Put(e)
				}
			}
			return next, nil
		})
		_, err := Run(context.Background(), in)
		if err == nil || !strings.HasPrefix(err.Error(), "--render "+in.RenderDir+": ") {
			t.Errorf("error %v", err)
		}
		unchanged(t, in)
	})

	t.Run("an image fails", func(t *testing.T) {
		var in Input
		in, _ = runInput(t, func(context.Context) (*lock.Lock, error) {
			return bumped(t, in.Old, "registry.lab.internal/app:1"), failure
		})
		_, err := Run(context.Background(), in)
		if want := in.LockPath + " not changed: " + failure.Error(); err == nil || err.Error() != want || !errors.As(err, new(registry.Errors)) {
			t.Errorf("error %v, want %s", err, want)
		}
		unchanged(t, in)
	})

	t.Run("output on an input", func(t *testing.T) {
		connected := false
		in, _ := runInput(t, nil)
		in.Connect = func() (func(context.Context) (*lock.Lock, error), error) {
			connected = true
			return nil, errors.New("not reached")
		}
		in.PRBody = in.LockPath
		_, err := Run(context.Background(), in)
		if want := "--pr-body " + in.LockPath + " is the lock file: write the body elsewhere"; err == nil || err.Error() != want || connected {
			t.Errorf("error %v (connected %v), want %s", err, connected, want)
		}
		if got := readOr(t, in.LockPath); got != string(in.OldData) {
			t.Errorf("the lock changed:\n%s", got)
		}
	})

	t.Run("connect fails", func(t *testing.T) {
		in, _ := runInput(t, nil)
		refused := errors.New("--retries must not be negative, got -1")
		in.Connect = func() (func(context.Context) (*lock.Lock, error), error) { return nil, refused }
		if _, err := Run(context.Background(), in); err != refused {
			t.Errorf("error %v", err)
		}
		unchanged(t, in)
	})
}

// TestRunKeepGoing: with KeepGoing the images that resolved are written,
// the failed one keeps its old entry, and Result.Err names the failure
// after the write.
func TestRunKeepGoing(t *testing.T) {
	failure := registry.Errors{{Image: "registry.lab.internal/tools:2", Key: "registry.lab.internal/tools:2", Registry: "registry.lab.internal", Op: "HEAD tag 2", Answer: "503 Service Unavailable"}}
	var in Input
	in, _ = runInput(t, func(context.Context) (*lock.Lock, error) {
		return bumped(t, in.Old, "registry.lab.internal/app:1"), failure
	})
	in.KeepGoing = true
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := "--keep-going: " + failure.Error() + "\nthe other images were bumped; the failed ones keep their old entries in " + in.LockPath
	if res.Err == nil || res.Err.Error() != want || !errors.As(res.Err, new(registry.Errors)) || len(res.Changes) != 1 || !res.LockChanged {
		t.Fatalf("result %+v, error %v; want %s", res, res.Err, want)
	}
	got := readOr(t, in.LockPath)
	if !strings.Contains(got, digest('9')) {
		t.Errorf("the bumped digest is not in the lock:\n%s", got)
	}
	if e, ok := in.Old.Lookup("registry.lab.internal/tools:2"); !ok || !strings.Contains(got, e.Digest) {
		t.Errorf("the failed image lost its old entry:\n%s", got)
	}
	// The pull request says which images were not re-checked.
	wantFailure := ReportFailure{Key: "registry.lab.internal/tools:2", Image: "registry.lab.internal/tools:2", Error: failure[0].Error()}
	if len(res.Report.Failures) != 1 || res.Report.Failures[0] != wantFailure {
		t.Errorf("report failures %+v, want [%+v]", res.Report.Failures, wantFailure)
	}
	if !strings.Contains(res.Report.Body, "**Not re-checked:** 1 image did not resolve and keeps its old entry in ") ||
		!strings.Contains(res.Report.Body, "| `registry.lab.internal/tools:2` | ") || !strings.Contains(res.Report.Body, "503 Service Unavailable") {
		t.Errorf("the body does not name the failed image:\n%s", res.Report.Body)
	}
}
