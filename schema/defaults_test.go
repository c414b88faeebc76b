package schema

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestHelperDefaults: the top-level helper is every profile's default,
// a profile's own helper fields override it field by field, and with
// neither the helper image is DefaultHelperImage and there is no pause.
func TestHelperDefaults(t *testing.T) {
	const pullers = `pullers: [{name: "p", namespace: "n", images: ["busybox"]}]`
	cfg, err := LoadFiles("cfg", inMemory("cfg/config.cue", `
images: busybox: reference: "busybox:1.31.1"
helper: {image: "registry.site/stowage/stowage-helper:v0.1.0", pause: "registry.site/k8s/pause:3.10"}
profiles: {
	inherits: {`+pullers+`}
	ownImage: {helper: image: "other.site/helper:v2", `+pullers+`}
	ownPause: {helper: pause: "other.site/pause:3.9", `+pullers+`}
}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.Helper{
		"inherits": {Image: "registry.site/stowage/stowage-helper:v0.1.0", Pause: "registry.site/k8s/pause:3.10"},
		"ownImage": {Image: "other.site/helper:v2", Pause: "registry.site/k8s/pause:3.10"},
		"ownPause": {Image: "registry.site/stowage/stowage-helper:v0.1.0", Pause: "other.site/pause:3.9"},
	}
	for name, w := range want {
		if got := cfg.Profiles[name].Helper; got != w {
			t.Errorf("profile %s helper = %+v, want %+v", name, got, w)
		}
	}

	cfg, err = LoadFiles("cfg", inMemory("cfg/config.cue", `
images: busybox: reference: "busybox:1.31.1"
profiles: plain: {`+pullers+`}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Profiles["plain"].Helper; got != (v1alpha1.Helper{Image: v1alpha1.DefaultHelperImage}) {
		t.Errorf("helper without any setting = %+v, want image %s and no pause", got, v1alpha1.DefaultHelperImage)
	}
}

// TestHelperDefaultsLocated: a bad top-level helper reference is reported
// at the top-level field, a bad profile one at the profile's.
func TestHelperDefaultsLocated(t *testing.T) {
	_, err := LoadFiles("cfg", inMemory("cfg/config.yaml", `images:
  busybox: {reference: "busybox:1.31.1"}
helper:
  pause: "Registry.Site/Pause:3.10"
profiles:
  p:
    helper:
      image: "helper:v1:v2"
    pullers: [{name: p, namespace: n, images: [busybox]}]
`), Options{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("got %v, want two errors", err)
	}
	if errs[0].Path != "helper.pause" || errs[0].Line != 4 {
		t.Errorf("first error at %s line %d, want helper.pause line 4: %v", errs[0].Path, errs[0].Line, errs[0])
	}
	if errs[1].Path != "profiles.p.helper.image" || errs[1].Line != 8 {
		t.Errorf("second error at %s line %d, want profiles.p.helper.image line 8: %v", errs[1].Path, errs[1].Line, errs[1])
	}
}

// TestSiteDefaults: the top-level site is every profile's, a profile's own
// registry overrides the default prefix and its registries replace the map.
func TestSiteDefaults(t *testing.T) {
	const pullers = `pullers: [{name: "p", namespace: "n", images: ["busybox"]}]`
	cfg, err := LoadFiles("cfg", inMemory("cfg/config.cue", `
images: busybox: reference: "busybox:1.31.1"
site: {registry: "registry.site:5000/mirror", registries: "docker.io": "registry.site:5000/hub"}
profiles: {
	inherits: {`+pullers+`}
	ownRegistry: {site: registry: "other.site/m", `+pullers+`}
	ownMap: {site: registries: "ghcr.io": "registry.site:5000/gh", `+pullers+`}
}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.Site{
		"inherits":    {Registry: "registry.site:5000/mirror", Registries: map[string]string{"docker.io": "registry.site:5000/hub"}},
		"ownRegistry": {Registry: "other.site/m", Registries: map[string]string{"docker.io": "registry.site:5000/hub"}},
		"ownMap":      {Registry: "registry.site:5000/mirror", Registries: map[string]string{"ghcr.io": "registry.site:5000/gh"}},
	}
	for name, w := range want {
		got := cfg.Profiles[name].Site
		if got == nil || got.Registry != w.Registry || !maps.Equal(got.Registries, w.Registries) {
			t.Errorf("profile %s site = %+v, want %+v", name, got, w)
		}
	}
	plain, err := LoadFiles("cfg", inMemory("cfg/config.cue", `
images: busybox: reference: "busybox:1.31.1"
profiles: plain: {`+pullers+`}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := plain.Profiles["plain"].Site; s != nil {
		t.Errorf("site without any setting = %+v, want nil", s)
	}
}

// TestSiteErrorsLocated: a bad prefix, a missing default prefix and two
// source repositories meeting in one site repository are each reported at
// the field that decides, with the repositories named.
func TestSiteErrorsLocated(t *testing.T) {
	_, err := LoadFiles("cfg", inMemory("cfg/config.yaml", `images:
  a: {reference: "docker.io/team/app:1"}
  b: {reference: "ghcr.io/team/app:2"}
site:
  registry: "https://registry.site"
profiles:
  p:
    pullers: [{name: p, namespace: n, images: [a, b]}]
  q:
    site:
      registry: "registry.site/mirror"
      registries:
        docker.io: "registry.site/same"
        ghcr.io: "registry.site/same"
    pullers: [{name: q, namespace: n, images: [a, b]}]
  r:
    site:
      registries: {quay.io: "registry.site/quay"}
    helper: {image: "registry.site/helper:v1"}
    pullers: [{name: r, namespace: n, images: [a]}]
`), Options{})
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want located errors", err)
	}
	got := map[string]*Error{}
	for _, e := range errs {
		got[e.Path] = e
	}
	check := func(path string, line int, says ...string) {
		t.Helper()
		e, ok := got[path]
		if !ok {
			t.Errorf("no error at %s; got %v", path, err)
			return
		}
		if e.Line != line {
			t.Errorf("%s: line %d, want %d", path, e.Line, line)
		}
		for _, s := range says {
			if !strings.Contains(e.Msg, s) {
				t.Errorf("%s: message %q lacks %q", path, e.Msg, s)
			}
		}
	}
	check("site.registry", 5, `"https://registry.site"`, "want host[:port][/path]")
	check("profiles.q.site.registries", 12, "registry.site/same/team/app", "docker.io/team/app", "ghcr.io/team/app")
	if len(errs) != 2 {
		t.Errorf("got %d errors, want 2 (profiles p and r inherit the bad top-level prefix, reported once): %v", len(errs), err)
	}
}
