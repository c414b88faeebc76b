package v1alpha1

import (
	"strings"
	"testing"
)

// TestVetReportWriteText: one line per profile with its pre-pulled images
// and the pull Secrets to create, one line for the checks across profiles
// when any ran, the details only with Verbose, untrusted text escaped.
func TestVetReportWriteText(t *testing.T) {
	two := 2
	r := NewVetReport()
	r.Profiles = []string{"gpu", "cpu\x1b[31m"}
	r.Images = []VetImage{
		{Profile: "gpu", Reference: "r/a@sha256:1", OfflineUse: ImageAccess{Summary: "any pod"}},
		{Profile: "gpu", Reference: "r/b@sha256:2", OfflineUse: ImageAccess{Summary: "any pod"}},
		{Profile: "cpu\x1b[31m", Reference: "r/c@sha256:3", OfflineUse: ImageAccess{Summary: "any pod"}},
	}
	r.ExternalSecrets = []VetSecret{{Profile: "gpu", Name: "pull", Registry: "r", UsedBy: []string{`image "a"`}, Namespaces: []string{"ns"}}}
	r.PinnedDigests = &two
	r.Site = &VetSiteReport{Manifests: 1}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "ok: profile gpu: 2 images pre-pulled, 1 pull Secret to create\n" +
		"ok: profile cpu\\x1b[31m: 1 image pre-pulled\n" +
		"ok: 2 pinned digests exist in their registries, 1 manifest on the site registry\n"
	if b.String() != want {
		t.Errorf("WriteText =\n%s\nwant\n%s", b.String(), want)
	}

	r.Verbose = true
	b.Reset()
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"  profile gpu: Secret pull (r; image \"a\") in ns\n",
		"offline use of the pre-pulled images (" + KubeletRule + "):\n",
		"  profile cpu\\x1b[31m: r/c@sha256:3: any pod\n",
	} {
		if !strings.HasPrefix(b.String(), want) || !strings.Contains(b.String(), line) {
			t.Errorf("WriteText with Verbose lacks %q after the verdict:\n%s", line, b.String())
		}
	}

	// A kustomization that only pins: no profile, the workloads counted.
	pins := &VetReport{Workloads: 1, Unpinned: []VetUnpinned{{}, {}}}
	b.Reset()
	if err := pins.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "ok: 1 workload image pinned, 2 strings read as image references left unpinned (warnings above)\n"; b.String() != want {
		t.Errorf("WriteText = %q, want %q", b.String(), want)
	}
}
