package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/initconfig"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/schema"
)

// TestInit: stowage init writes a starter config and an empty lock that,
// after `stowage lock` against Debian's docker-registry on 127.0.0.1
// (holding the stand-ins of the two images, reached through the README's
// STOWAGE_* variables), pass vet and render a DaemonSet pinning the
// image; every commented field, uncommented, still loads. init refuses a
// directory holding a config file or a lock, "-", and flags that are no
// reference or DNS label, changing nothing.
func TestInit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "prepull")
	stdout, stderr, code := runCLI(t, nil, "init", dir)
	if code != 0 || !strings.Contains(string(stdout), "next: stowage lock "+dir) {
		t.Fatalf("init: exit %d, %s %s", code, stdout, stderr)
	}
	cfg := readFile(t, filepath.Join(dir, initconfig.ConfigFile))
	if l, err := lock.Parse(readFile(t, filepath.Join(dir, lock.FileName)), lock.FileName); err != nil || len(l.Entries) != 0 {
		t.Errorf("the lock placeholder: %v, %+v", err, l)
	}

	// Every commented field, uncommented, is valid config.
	full := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	field := regexp.MustCompile(`(?m)^(\t+)// ([a-zA-Z]+: .*)$`)
	uncommented := field.ReplaceAll(cfg, []byte("$1$2"))
	if n := len(field.FindAll(cfg, -1)); n != 4 {
		t.Errorf("%d commented fields, want 4 (auth, nodeSelector, tolerations, site)", n)
	}
	if err := os.WriteFile(filepath.Join(full, initconfig.ConfigFile), uncommented, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := schema.Load(full, schema.Options{})
	if err != nil {
		t.Fatalf("the starter config with its comments uncommented:\n%s\n%v", uncommented, err)
	}
	if p := c.Profiles["default"]; p.Site == nil || len(p.Pullers) != 1 {
		t.Errorf("the uncommented profile: %+v", p)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"init", dir}, 1, "init never overwrites"},
		{[]string{"init", "-"}, 2, "DIR -: init writes a directory"},
		{[]string{"init", filepath.Join(t.TempDir(), "x"), "--namespace", "Tenant_A"}, 2, `--namespace "Tenant_A"`},
		{[]string{"init", filepath.Join(t.TempDir(), "x"), "--image", "UPPER/Case::"}, 2, `--image "UPPER/Case::"`},
	} {
		_, stderr, code := runCLI(t, nil, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if got := readFile(t, filepath.Join(dir, initconfig.ConfigFile)); string(got) != string(cfg) {
		t.Error("a refused init changed config.cue")
	}

	d := registrytest.Start(t, registrytest.Options{})
	images := []string{"apache/submarine:jupyter-notebook-0.7.0", "ghcr.io/stowage/stowage-helper:v0.1.0"}
	seedStandIns(t, d.Host, images)
	env := localRegistryEnv(d.Host)
	for _, args := range [][]string{{"lock", dir, "-q"}, {"vet", dir}, {"render", dir, "--output-dir", filepath.Join(dir, "..", "out")}} {
		if _, stderr, code := runCLI(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	want, err := offlineimage.Entry(images[0])
	if err != nil {
		t.Fatal(err)
	}
	ds := string(readFile(t, filepath.Join(dir, "..", "out", "daemonset-default-images.yaml")))
	if !strings.Contains(ds, images[0]+"@"+want.Digest) {
		t.Errorf("the DaemonSet does not pin %s@%s:\n%s", images[0], want.Digest, ds)
	}
}
