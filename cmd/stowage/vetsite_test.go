package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// standinOf returns repo:tN for the first N whose stand-in is an index
// (index true) or a single manifest.
func standinOf(t *testing.T, repo string, index bool) string {
	t.Helper()
	for i := 1; i < 100; i++ {
		s := fmt.Sprintf("%s:t%d", repo, i)
		ref, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		if offlineimage.IsIndex(ref) == index {
			return s
		}
	}
	t.Fatal("no tag of the kind wanted")
	return ""
}

// TestVetSite: vet --site against docker-registry as the site. Filled by
// the site mapping render uses, the site holds every pinned reference the
// rendered output names, index children included: exit 0. With one
// image's manifest and one child of an index deleted from the site, vet
// --site exits 1 naming both (the child with its platform), in text and in
// -o json's site report; vet without --site still passes (it asks no
// registry), and --site on a profile without a site is refused.
func TestVetSite(t *testing.T) {
	t.Parallel()
	d := registrytest.Start(t, registrytest.Options{})
	multi := standinOf(t, "ghcr.io/example-org/multi", true)
	single := standinOf(t, "ghcr.io/example-org/single", false)
	const helper = "ghcr.io/stowage/stowage-helper:v0.1.0"
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"config.cue": `
images: {
	multi: reference: "` + multi + `"
	single: reference: "` + single + `"
}
site: registry: "` + d.Host + `/site"
profiles: {
	p: {namespace: "p", pullers: [{name: "pre", namespace: "p", images: ["multi", "single"]}]}
	plain: {namespace: "plain", site: registry: "` + d.Host + `/other", pullers: [{name: "pre", namespace: "plain", images: ["single"]}]}
}
`})
	m := site.Mapping{Default: d.Host + "/site"}
	push := mustResolver(t, registry.WithInsecure(d.Host), registry.WithSite(m))
	if err := registrytest.SeedStandIns(context.Background(), push, nil, []string{multi, single, helper}, 3); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, nil, "lock", dir, "--quiet", "--insecure-registry", d.Host, "--mirror", "ghcr.io="+d.Host+"/site/ghcr.io"); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	multiEntry, _ := l.Lookup("ghcr.io/example-org/multi:" + strings.SplitN(multi, ":", 2)[1])
	singleEntry, _ := l.Lookup("ghcr.io/example-org/single:" + strings.SplitN(single, ":", 2)[1])
	if len(multiEntry.Platforms) != 2 || singleEntry.Digest == "" {
		t.Fatalf("lock entries: %+v %+v", multiEntry, singleEntry)
	}
	// multi: the index and its two children; single; the helper (an
	// index with two children, or one manifest, as its stand-in is).
	helperEntry, _ := l.Lookup(helper)
	n := 3 + 1 + 1 + len(helperEntry.Platforms)
	stdout, stderr, code := runCLI(t, nil, "vet", dir, "--site", "--profile", "p", "--insecure-registry", d.Host)
	if code != 0 || !strings.HasPrefix(string(stdout), "ok: profile p: ") || !strings.HasSuffix(string(stdout), fmt.Sprintf("\nok: %d manifests on the site registry\n", n)) {
		t.Fatalf("vet --site on a full site: exit %d\n%s%s", code, stdout, stderr)
	}

	// Take a child of the index and the single image off the site.
	arm := multiEntry.Platforms[1]
	siteMulti := d.Host + "/site/" + strings.SplitN(multi, ":", 2)[0]
	siteSingle := d.Host + "/site/" + strings.SplitN(single, ":", 2)[0]
	for _, s := range []string{siteMulti + "@" + arm.Digest, siteSingle + "@" + singleEntry.Digest} {
		ref, err := name.ParseReference(s, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Delete(ref); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code = runCLI(t, nil, "vet", dir, "--site", "--profile", "p", "--insecure-registry", d.Host)
	wantMulti := `image "` + d.Host + "/site/" + multi + "@" + multiEntry.Digest + `"`
	wantChild := "HEAD digest " + arm.Digest + " (index child " + arm.Platform + "): 404 Not Found"
	wantSingle := `image "` + d.Host + "/site/" + single + "@" + singleEntry.Digest + `"`
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("lacks or could not confirm 2 of %d manifests", n)) || !strings.Contains(stderr, wantMulti) ||
		!strings.Contains(stderr, wantChild) || !strings.Contains(stderr, wantSingle) {
		t.Errorf("vet --site, two manifests gone: exit %d\n%s%s\nwant %s, %s and %s", code, stdout, stderr, wantMulti, wantChild, wantSingle)
	}

	stdout, _, code = runCLI(t, nil, "vet", dir, "--site", "--profile", "p", "--insecure-registry", d.Host, "-o", "json")
	var rep struct {
		OK      bool `json:"ok"`
		Objects int  `json:"objects"`
		Site    struct {
			Registries []string `json:"registries"`
			Manifests  int      `json:"manifests"`
			Missing    []struct {
				Reference, Digest, Platform, Image string
				NotFound                           bool
			} `json:"missing"`
		} `json:"site"`
	}
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("vet --site -o json: %v\n%s", err, stdout)
	}
	if code != 1 || rep.OK || rep.Objects == 0 || rep.Site.Manifests != n || len(rep.Site.Missing) != 2 ||
		fmt.Sprint(rep.Site.Registries) != "["+d.Host+"/site]" {
		t.Fatalf("vet --site -o json: exit %d\n%s", code, stdout)
	}
	got := rep.Site.Missing
	if got[0].Reference != d.Host+"/site/"+multi+"@"+multiEntry.Digest || got[0].Digest != arm.Digest || got[0].Platform != arm.Platform || !got[0].NotFound ||
		got[1].Reference != d.Host+"/site/"+single+"@"+singleEntry.Digest || got[1].Digest != singleEntry.Digest || got[1].Platform != "" || !got[1].NotFound {
		t.Errorf("vet --site -o json missing = %+v", got)
	}

	if _, stderr, code := runCLI(t, nil, "vet", dir, "--profile", "p"); code != 0 {
		t.Errorf("vet without --site: exit %d\n%s", code, stderr)
	}
	// Profile plain's site holds nothing: single and the helper are named.
	want := fmt.Sprintf("(%s/other) lacks or could not confirm %d of %d manifests", d.Host, n-3, n-3)
	if _, stderr, code := runCLI(t, nil, "vet", dir, "--site", "--profile", "plain", "--insecure-registry", d.Host); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("vet --site --profile plain: exit %d\n%s", code, stderr)
	}
}

// TestVetSitePrivate: a site registry behind basic auth is asked with the
// credentials the rendered pull Secret carries there (the image's config
// auth): vet --site passes with the password source set, names the 401
// and the credential sent (user and source, never the password) when the
// password is wrong, and never prints the password.
func TestVetSitePrivate(t *testing.T) {
	t.Parallel()
	const canary = "canary-pw-5e1d07"
	d := registrytest.Start(t, registrytest.Options{Users: map[string]string{"qa": canary}})
	private := standinOf(t, "ghcr.io/example-org/private", false)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"config.cue": `
images: private: {reference: "` + private + `", auth: {username: "qa", password: "env:STOWAGE_QA_PW"}}
helper: image: "` + private + `"
site: registry: "` + d.Host + `/site"
profiles: p: {namespace: "p", pullers: [{name: "pre", namespace: "p", images: ["private"]}]}
`})
	push := mustResolver(t, registry.WithInsecure(d.Host), registry.WithSite(site.Mapping{Default: d.Host + "/site"}))
	if err := registrytest.SeedStandIns(context.Background(), push, &authn.AuthConfig{Username: "qa", Password: canary}, []string{private}, 1); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"STOWAGE_QA_PW": canary}
	// The lock the connected side wrote for the image.
	e, err := offlineimage.Entry(private)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{lock.FileName: string((&lock.Lock{Entries: []lock.Entry{e}}).Marshal())})
	stdout, stderr, code := runCLI(t, env, "vet", dir, "--site", "--insecure-registry", d.Host)
	if code != 0 || strings.Contains(string(stdout)+stderr, canary) {
		t.Errorf("vet --site with the password: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, map[string]string{"STOWAGE_QA_PW": "wrong"}, "vet", dir, "--site", "--insecure-registry", d.Host)
	if code != 1 || !strings.Contains(stderr, "401 Unauthorized") || !strings.Contains(stderr, `sent the config's credentials: user "qa", password from env:STOWAGE_QA_PW`) || strings.Contains(string(stdout)+stderr, canary) {
		t.Errorf("vet --site with a wrong password: exit %d\n%s%s", code, stdout, stderr)
	}
}
