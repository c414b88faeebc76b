package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/mirror"
	"github.com/stowage/stowage/internal/site"
)

// TestMirrorArtifactFlag checks --artifact's input: the reference push
// prints becomes a mirror image at its site repository by the images'
// rule, tag and digest kept; a reference without a digest, a bad one, and
// --artifact with --from are usage errors (exit 2) naming the value, before
// any registry is contacted.
func TestMirrorArtifactFlag(t *testing.T) {
	t.Parallel()
	const (
		digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
		pushed = "registry.example.org/platform/notebook-prepull:v1@" + digest
	)
	img, err := mirror.ArtifactImage(pushed, &site.Mapping{Default: "registry.site.example:5000/mirror"})
	if err != nil {
		t.Fatal(err)
	}
	if img.Name != "registry.example.org/platform/notebook-prepull:v1" || img.Tag != "v1" || img.Digest.String() != digest ||
		img.Source.Name() != "registry.example.org/platform/notebook-prepull" ||
		img.Site != "registry.site.example:5000/mirror/registry.example.org/platform/notebook-prepull" {
		t.Errorf("artifact image: %+v", img)
	}
	img, err = mirror.ArtifactImage("registry.example.org/platform/notebook-prepull@"+digest, nil)
	if err != nil || img.Tag != "" || img.Site != "" {
		t.Errorf("digest-only artifact without a site: %+v, %v", img, err)
	}

	config := filepath.Join(repoRoot, "examples", "gitops-flux", "config")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mirror", config, "--to", "127.0.0.1:1", "--artifact", "registry.example.org/platform/notebook-prepull:v1"},
			`--artifact "registry.example.org/platform/notebook-prepull:v1": want REGISTRY/REPOSITORY[:TAG]@sha256:…, the reference with its digest that stowage push prints`},
		{[]string{"mirror", config, "--to", "127.0.0.1:1", "--artifact", "registry.example.org/Bad@" + digest},
			`--artifact: image "registry.example.org/Bad@` + digest + `"`},
		{[]string{"mirror", "--from", "oci:" + t.TempDir(), "--to", "127.0.0.1:1", "--artifact", pushed},
			"--from oci: pushes the artifacts the bundle holds; give --artifact when the bundle is written (--to oci:)"},
	} {
		stdout, stderr, code := runCLI(t, nil, tc.args...)
		if code != 2 || len(stdout) != 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("stowage %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}
