package plan

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/schema"
)

// loadCUE loads one config.cue holding src.
func loadCUE(t *testing.T, src string, o schema.Options) *v1alpha1.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.cue"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const twoSites = `
images: tool: reference: "ghcr.io/example-org/tool:1"
site: registry: "site.top:5000/mirror"
profiles: {
	a: {namespace: "a", site: registry: "site.a:5000/mirror", pullers: [{name: "p", namespace: "a", images: ["tool"]}]}
	b: {namespace: "b", site: registry: "site.b:5000/mirror", pullers: [{name: "p", namespace: "b", images: ["tool"]}]}
	c: {namespace: "c", pullers: [{name: "p", namespace: "c", images: ["tool"]}]}
	d: {namespace: "d", site: registry: "site.b:5000/mirror", pullers: [{name: "p", namespace: "d", images: ["tool"]}]}
}
`

// TestSiteProfiles: a profile's site is its own over the top-level one; a
// set of profiles has a site only when they all name the same one; when
// they disagree, the error names every profile with its site, and Build's
// uses follow the same rule.
func TestSiteProfiles(t *testing.T) {
	t.Parallel()
	cfg := loadCUE(t, twoSites, schema.Options{})
	for _, tc := range []struct {
		profiles []string
		want     string // the default prefix; "" for an error
		err      string
	}{
		{profiles: []string{"a"}, want: "site.a:5000/mirror"},
		{profiles: []string{"c"}, want: "site.top:5000/mirror"},
		{profiles: []string{"b", "d"}, want: "site.b:5000/mirror"},
		{profiles: []string{"a", "b"}, err: `the profiles name different site registries: profile "a": site.a:5000/mirror; profile "b": site.b:5000/mirror`},
		{profiles: nil, err: `the profiles name different site registries: profile "a": site.a:5000/mirror; profiles "b", "d": site.b:5000/mirror; profile "c": site.top:5000/mirror`},
		{profiles: []string{"x"}, err: `no such profile "x"; profiles: a, b, c, d`},
	} {
		s, err := Site(cfg, tc.profiles...)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Site(%q): error %v, want %s", tc.profiles, err, tc.err)
			}
			continue
		}
		if err != nil || s == nil || s.Registry != tc.want {
			t.Errorf("Site(%q) = %+v, %v; want registry %s", tc.profiles, s, err, tc.want)
		}
	}
	var se *SiteError
	if _, err := Site(cfg, "a", "c"); !errors.As(err, &se) || len(se.Groups) != 2 || !reflect.DeepEqual(se.Groups[1].Profiles, []string{"c"}) {
		t.Errorf("Site(a, c): %#v, want a *SiteError with groups a and c", err)
	}
	p, err := Build(cfg, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Pullers[0].Uses[0].Site, "site.a:5000/mirror/ghcr.io/example-org/tool:1"; got != want || p.Site.Registry != "site.a:5000/mirror" {
		t.Errorf("Build(a): use at %s (plan site %+v), want %s", got, p.Site, want)
	}
}

// TestSiteMixed: profiles of which one names a site and one none are
// ambiguous too; a config without any site has none.
func TestSiteMixed(t *testing.T) {
	t.Parallel()
	cfg := loadCUE(t, `
images: tool: reference: "ghcr.io/example-org/tool:1"
profiles: {
	a: {namespace: "a", site: registry: "site.a:5000/mirror", pullers: [{name: "p", namespace: "a", images: ["tool"]}]}
	b: {namespace: "b", pullers: [{name: "p", namespace: "b", images: ["tool"]}]}
}
`, schema.Options{})
	want := `the profiles name different site registries: profile "a": site.a:5000/mirror; profile "b": no site registry`
	if _, err := Site(cfg); err == nil || err.Error() != want {
		t.Errorf("Site: %v, want %s", err, want)
	}
	if s, err := Site(cfg, "b"); s != nil || err != nil {
		t.Errorf("Site(b) = %+v, %v; want none", s, err)
	}
}

// TestSitePinOnly: a config without profiles (a functionConfig that only
// pins) has the top-level site, mapping included; without a default
// prefix it is an error, not silently no site.
func TestSitePinOnly(t *testing.T) {
	t.Parallel()
	cfg := loadCUE(t, `site: {registry: "site.lab:5000/mirror", registries: "ghcr.io": "site.lab:5000/ghcr"}`, schema.Options{AllowNoProfiles: true})
	s, err := Site(cfg)
	if err != nil || s == nil || s.Registry != "site.lab:5000/mirror" || s.Registries["ghcr.io"] != "site.lab:5000/ghcr" {
		t.Errorf("Site = %+v, %v; want the top-level site", s, err)
	}
	cfg = loadCUE(t, `site: registries: "ghcr.io": "site.lab:5000/ghcr"`, schema.Options{AllowNoProfiles: true})
	if _, err := Site(cfg); err == nil {
		t.Error("Site of a top-level site without registry: no error")
	}
	cfg = loadCUE(t, `images: {}`, schema.Options{AllowNoProfiles: true})
	if s, err := Site(cfg); s != nil || err != nil {
		t.Errorf("Site without a site = %+v, %v; want none", s, err)
	}
}

// TestOpenPAIList: images.<role>.list names each image at its site
// reference pinned as its pre-pulling use is; an image of a role no puller
// pre-pulls is pinned from the lock, and written by tag only when the lock
// lacks it.
func TestOpenPAIList(t *testing.T) {
	t.Parallel()
	dir := "../../examples/openpai-offline"
	cfg := load(t, dir)
	l := readLock(t, dir)
	prof := cfg.Profiles["offline"]
	prof.Pullers = slices.Clone(prof.Pullers)
	prof.Pullers[0].OpenPAI = []string{"worker"}
	cfg.Profiles["offline"] = prof
	p, err := Build(cfg, "offline", l)
	if err != nil {
		t.Fatal(err)
	}
	const runtime = "registry.pai.lab.internal:5000/openpai/openpai-runtime:v1.5.0"
	const fc = "registry.pai.lab.internal:5000/mirror/docker.io/frameworkcontroller/frameworkcontroller:v0.9.0"
	e, _ := l.Lookup("registry.pai.lab.internal:5000/openpai/openpai-runtime:v1.5.0")
	worker, err := p.OpenPAIList(openpai.RoleWorker, l)
	if err != nil || !slices.Equal(worker, []string{runtime + "@" + e.Digest}) {
		t.Errorf("worker list = %v, %v; want %s@%s", worker, err, runtime, e.Digest)
	}
	fe, _ := l.Lookup("docker.io/frameworkcontroller/frameworkcontroller:v0.9.0")
	master, err := p.OpenPAIList(openpai.RoleMaster, l)
	if err != nil || !slices.Contains(master, fc+"@"+fe.Digest) {
		t.Errorf("master list (no puller) = %v, %v; want %s@%s from the lock", master, err, fc, fe.Digest)
	}
	if master, _ = p.OpenPAIList(openpai.RoleMaster, nil); !slices.Contains(master, fc) {
		t.Errorf("master list without a lock = %v; want %s by tag", master, fc)
	}
	// vet --site checks the master images too, each index child included.
	ms, err := p.SiteManifests(p.Site)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		if m.Reference == fc+"@"+fe.Digest {
			got = append(got, m.Digest+" "+m.Platform)
		}
	}
	want := []string{fe.Digest + " "}
	for _, c := range fe.Platforms {
		want = append(want, c.Digest+" "+c.Platform)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("site manifests of %s = %v, want %v", fc, got, want)
	}
}

// TestSiteMapping: the mapping --via-site reads at is the site every
// profile shares, mapped as render maps it; profiles that disagree are
// Site's error, and a config naming no site says so.
func TestSiteMapping(t *testing.T) {
	one := loadCUE(t, `
images: tool: reference: "ghcr.io/example-org/tool:1"
site: registry: "site.top:5000/mirror"
profiles: a: {namespace: "a", pullers: [{name: "p", namespace: "a", images: ["tool"]}]}
`, schema.Options{})
	m, err := SiteMapping(one)
	if err != nil || m.Default != "site.top:5000/mirror" {
		t.Fatalf("SiteMapping = %+v, %v; want the default prefix site.top:5000/mirror", m, err)
	}
	if _, err := SiteMapping(loadCUE(t, twoSites, schema.Options{})); !errors.As(err, new(*SiteError)) {
		t.Errorf("disagreeing profiles: %v, want a *SiteError", err)
	}
	none := loadCUE(t, `
images: tool: reference: "ghcr.io/example-org/tool:1"
profiles: a: {namespace: "a", pullers: [{name: "p", namespace: "a", images: ["tool"]}]}
`, schema.Options{})
	if _, err := SiteMapping(none); err == nil || err.Error() != "the config names no site registry (its site field, top-level or in a profile)" {
		t.Errorf("no site: %v", err)
	}
}
