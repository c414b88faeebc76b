package schema

import (
	"strings"
	"testing"
)

// TestImagePlacesLocated: an image place's pattern must compile with one
// capturing group and its path have no empty key, each error at its field;
// a good place reaches the typed config.
func TestImagePlacesLocated(t *testing.T) {
	const base = "images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\n"
	for _, c := range []struct{ places, want string }{
		{"imagePlaces: [{kind: \"ConfigMap\", path: \"data//x\"}]\n", `imagePlaces[0].path: "data//x" has an empty key`},
		{"imagePlaces: [{kind: \"ConfigMap\", path: \"data/x\", pattern: \"(\"}]\n", `imagePlaces[0].pattern: "(" is not a regular expression`},
		{"imagePlaces: [{kind: \"ConfigMap\", path: \"data/x\", pattern: \"--image=\\\\S+\"}]\n", `imagePlaces[0].pattern: "--image=\\S+" has 0 capturing groups; give exactly one`},
		{"imagePlaces: [{kind: \"\", path: \"data/x\"}]\n", "cfg/c.cue:4:22: imagePlaces[0].kind: invalid value"},
	} {
		_, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + base + c.places)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v\nwant it to hold %s", c.places, err, c.want)
		}
	}
	cfg, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + base +
		"imagePlaces: [{kind: \"Deployment\", name: \"web\", path: \"spec/template/spec/containers/args\", pattern: \"^--image=(.+)$\"}]\n")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ImagePlaces) != 1 || cfg.ImagePlaces[0].Pattern != "^--image=(.+)$" || cfg.ImagePlaces[0].Name != "web" {
		t.Errorf("image places %+v", cfg.ImagePlaces)
	}
}
