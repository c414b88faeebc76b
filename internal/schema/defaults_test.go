package schema

import (
	"errors"
	"testing"
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
	want := map[string]Helper{
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
	if got := cfg.Profiles["plain"].Helper; got != (Helper{Image: DefaultHelperImage}) {
		t.Errorf("helper without any setting = %+v, want image %s and no pause", got, DefaultHelperImage)
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
