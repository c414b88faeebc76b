package plan

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stowage/stowage/schema"
)

// loadCUE loads one config.cue holding src.
func loadCUE(t *testing.T, src string, o schema.Options) *schema.Config {
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
