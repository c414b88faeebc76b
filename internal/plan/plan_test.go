package plan

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/schema"
)

func load(t *testing.T, dir string) *v1alpha1.Config {
	t.Helper()
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readLock(t *testing.T, dir string) *lock.Lock {
	t.Helper()
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// useRow is what a test compares of a use.
type useRow struct {
	puller, usedBy, written, key, digest string
	why                                  Why
}

func rowsOf(p Puller) []useRow {
	var out []useRow
	for _, u := range append(slices.Clone(p.Uses), p.Helper, p.Pause) {
		if u == nil {
			continue // no pause
		}
		out = append(out, useRow{u.PullerName(), u.UsedBy(), u.Ref.Written, u.Key(), u.Pin.Digest, u.Pin.Why})
	}
	return out
}

// TestBuildSubmarine plans the Submarine example against its committed
// lock: every environment of its puller (which serves both tenants) and
// the default helper (no pause: the helper is the main container), each
// pinned to its entry's digest (index or manifest).
func TestBuildSubmarine(t *testing.T) {
	t.Parallel()
	dir := "../../examples/submarine-notebooks"
	p, err := Build(load(t, dir), "", readLock(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Profiles, []string{"notebooks"}) || len(p.Pullers) != 1 || p.OpenPAI != nil {
		t.Fatalf("profiles %v, %d pullers, OpenPAI %v", p.Profiles, len(p.Pullers), p.OpenPAI)
	}
	const (
		jupyter = "sha256:d35c3aac9ab2a974fd37636040d8fdb098790f3ddcc0100dbaa8814eee19eb45"
		gpu     = "sha256:89f1f07a0b423a57a04f88c47130898c3c613457f66a9fd14fef80781f5cec21"
		chinese = "sha256:7811b08e2c9f9fa1e8bd441b29cef307f79c4ba06ae7d384ea71771d66fff518"
		helper  = "sha256:9ccb2baaa0a37beba8785dd69f68243baac189a17366071dd5afd23fe5b5470c"
	)
	for i, pp := range p.Pullers {
		pl := pp.Puller.Namespace + "/" + pp.Puller.Name
		want := []useRow{
			{pl, `environment "jupyter"`, "apache/submarine:jupyter-notebook-0.7.0", "docker.io/apache/submarine:jupyter-notebook-0.7.0", jupyter, PinManifest},
			{pl, `environment "jupyter-gpu"`, "harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0", "harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0", gpu, PinManifest},
			{pl, `environment "jupyter-chinese"`, "apache/submarine:jupyter-notebook-0.7.0-chinese", "docker.io/apache/submarine:jupyter-notebook-0.7.0-chinese", chinese, PinIndex},
			{pl, `profile "notebooks" helper.image`, "ghcr.io/stowage/stowage-helper:v0.1.0", "ghcr.io/stowage/stowage-helper:v0.1.0", helper, PinIndex},
		}
		if got := rowsOf(p.Pullers[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("puller %d uses:\n%+v\nwant\n%+v", i, got, want)
		}
		if pp.Pause != nil {
			t.Errorf("puller %d pause use %+v, want none", i, pp.Pause)
		}
	}
	gpuUse := p.Pullers[0].Uses[1]
	if gpuUse.Auth == nil || gpuUse.Auth.Username != "robot$submarine" || gpuUse.Auth.Password != "env:SUBMARINE_HARBOR_PASSWORD" ||
		gpuUse.NodeSelector["nvidia.com/gpu.present"] != "true" || len(gpuUse.Tolerations) != 1 {
		t.Errorf("jupyter-gpu use: auth %+v, nodeSelector %v, tolerations %v", gpuUse.Auth, gpuUse.NodeSelector, gpuUse.Tolerations)
	}
	if got, want := gpuUse.Pinned(), "harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0@"+gpu; got != want {
		t.Errorf("Pinned = %s, want %s", got, want)
	}

	// One image per lock key: exactly the committed lock's entries, each
	// with its entry and its one use.
	l := readLock(t, dir)
	var keys []string
	for _, img := range p.Images {
		keys = append(keys, img.Key)
		if img.Entry == nil || img.Entry.Name != img.Key {
			t.Errorf("image %s: entry %+v", img.Key, img.Entry)
		}
		if len(img.Uses) != 1 || img.Uses[0].Puller != p.Pullers[0].Puller.Name || img.Uses[0].Namespace != "submarine" {
			t.Errorf("image %s: uses %s", img.Key, img.UsedBy())
		}
	}
	var entries []string
	for _, e := range l.Entries {
		entries = append(entries, e.Name)
	}
	if !reflect.DeepEqual(keys, entries) {
		t.Errorf("image keys %v, lock entries %v", keys, entries)
	}
	gpuImg := p.Image("harbor.submarine.lab.internal:5000/apache/submarine:jupyter-notebook-gpu-0.7.0")
	if gpuImg == nil || gpuImg.Auth != gpuUse.Auth || !reflect.DeepEqual(gpuImg.Pins(), []string{gpu}) {
		t.Errorf("gpu image %+v", gpuImg)
	}
	// An auth that names a Secret is no credential for a registry client.
	if img := p.Image("docker.io/apache/submarine:jupyter-notebook-0.7.0-chinese"); img == nil || img.Auth != nil {
		t.Errorf("chinese image %+v", img)
	}
}

// TestBuildOpenPAI plans the OpenPAI example: the reduced set's images of
// both roles (role "all" with each), the lock keys those are exactly the
// committed lock's, and every use pinned to its entry.
func TestBuildOpenPAI(t *testing.T) {
	t.Parallel()
	dir := "../../examples/openpai-offline"
	l := readLock(t, dir)
	p, err := Build(load(t, dir), "offline", l)
	if err != nil {
		t.Fatal(err)
	}
	if p.OpenPAI == nil || len(p.Pullers) != 1 {
		t.Fatalf("OpenPAI %v, %d pullers", p.OpenPAI, len(p.Pullers))
	}
	var want []string
	for _, role := range []openpai.Role{openpai.RoleMaster, openpai.RoleAll, openpai.RoleWorker, openpai.RoleAll} {
		want = append(want, p.OpenPAI.Images[role]...)
	}
	var got []string
	for _, u := range p.Pullers[0].Uses {
		got = append(got, u.Ref.Written)
		if u.Kind != KindOpenPAI || u.Item() != "OpenPAI images" {
			t.Errorf("use %s: kind %v, item %s", u.Ref.Written, u.Kind, u.Item())
		}
		e, ok := l.Lookup(u.Key())
		if !ok || u.Pin.Digest != e.Digest || len(u.Pin.Errs) != 0 {
			t.Errorf("use %s pins %+v, lock has %+v", u.Ref.Written, u.Pin, e)
		}
	}
	if !reflect.DeepEqual(got, want) || len(got) < 10 {
		t.Errorf("uses\n%q\nwant\n%q", got, want)
	}
	if u := p.Pullers[0].Uses[0]; u.Name != "master" || u.UsedBy() != "OpenPAI master role" {
		t.Errorf("first use %s: role %s, used by %s", u.Ref.Written, u.Name, u.UsedBy())
	}
	var keys, entries []string
	for _, img := range p.Images {
		keys = append(keys, img.Key)
	}
	for _, e := range l.Entries {
		entries = append(entries, e.Name)
	}
	if !reflect.DeepEqual(keys, entries) {
		t.Errorf("image keys\n%q\nlock entries\n%q", keys, entries)
	}
	// Role "all" images are used under both roles: one image, two uses.
	all := p.OpenPAI.Images[openpai.RoleAll]
	if len(all) == 0 {
		t.Fatal("no role all images")
	}
	ref, _ := imageref.Parse(all[0])
	var roles []string
	for _, u := range p.Image(ref.Key()).Uses {
		roles = append(roles, u.Name)
		if !u.EveryNode {
			t.Errorf("%s: a role all image not on every node", u.Ref.Written)
		}
	}
	if u := p.Pullers[0].Uses[0]; u.EveryNode != slices.Contains(all, u.Ref.Written) {
		t.Errorf("%s: EveryNode %v", u.Ref.Written, u.EveryNode)
	}
	if !reflect.DeepEqual(roles, []string{"master", "worker"}) {
		t.Errorf("%s is used by roles %v", all[0], roles)
	}
}

// TestAll is the whole-config view lock and bump resolve: one image per
// key over every spelling, the pinned spelling recorded, platforms united,
// only a username/password auth kept.
func TestAll(t *testing.T) {
	t.Parallel()
	p, err := All(load(t, "testdata/mixed"), nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key, written string
		platforms    []string
		auth         string
		usedBy       string
	}
	var got []row
	for _, img := range p.Images {
		r := row{key: img.Key, written: img.Ref.Written, platforms: img.Platforms, usedBy: img.UsedBy()}
		if img.Auth != nil {
			r.auth = img.Auth.Username + " " + img.Auth.Password
		}
		if img.Entry != nil {
			t.Errorf("%s: entry without a lock", img.Key)
		}
		got = append(got, r)
	}
	want := []row{
		{"docker.io/apache/submarine:jupyter-notebook-0.7.0", "apache/submarine:jupyter-notebook-0.7.0", nil, "",
			`environment "jupyter" in tenant-a/notebook-images, environment "jupyter" in tenant-b/notebook-images`},
		{"docker.io/apache/submarine:jupyter-notebook-0.7.0-chinese", "docker.io/apache/submarine:jupyter-notebook-0.7.0-chinese", nil, "",
			`environment "jupyter-chinese" in tenant-a/notebook-images`},
		{"docker.io/library/busybox:1.31.1", "docker.io/library/busybox:1.31.1@sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb", []string{"linux/arm64"}, "",
			`image "busybox" in tenant-a/notebook-images, image "busybox-hub" in tenant-a/notebook-images`},
		{"harbor.lab.internal:5000/apache/submarine:gpu-0.7.0", "harbor.lab.internal:5000/apache/submarine:gpu-0.7.0", []string{"linux/amd64"}, "robot$ci env:HARBOR_PASSWORD",
			`environment "jupyter-gpu" in tenant-b/notebook-images`},
		{"registry.lab.internal/pause:3.10", "registry.lab.internal/pause:3.10", nil, "",
			`pause image in tenant-a/notebook-images, pause image in tenant-b/notebook-images`},
		{"registry.lab.internal/stowage-helper:v1", "registry.lab.internal/stowage-helper:v1", nil, "",
			`helper image in tenant-a/notebook-images, helper image in tenant-b/notebook-images`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("All =\n%+v\nwant\n%+v", got, want)
	}
	// Without a lock only the written digest is pinned.
	for _, u := range p.Uses() {
		want := Pin{}
		if u.Ref.Digest != "" {
			want = Pin{Digest: u.Ref.Digest, Why: PinWritten}
		}
		if !reflect.DeepEqual(u.Pin, want) {
			t.Errorf("%s: pin %+v without a lock, want %+v", u.Ref.Written, u.Pin, want)
		}
	}
}

func TestAllTwoPins(t *testing.T) {
	t.Parallel()
	_, err := All(load(t, "testdata/conflict"), nil)
	want := `image docker.io/library/busybox:1.31.1 is pinned to 2 different digests: "busybox:1.31.1@sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb", "docker.io/library/busybox:1.31.1@sha256:3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %s", err, want)
	}
	// One profile's plan pins each spelling to what it wrote.
	p, err := Build(load(t, "testdata/conflict"), "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Images[0].Pins(); len(got) != 2 {
		t.Errorf("pins %v, want both written digests", got)
	}
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// TestPin covers the pin rule: a written digest, else the entry's digest
// (index or manifest), the child of one requested platform, the index
// checked against several, and the errors of a missing entry or platform.
func TestPin(t *testing.T) {
	t.Parallel()
	l := &lock.Lock{}
	l.Put(lock.Entry{Name: "docker.io/library/busybox:1.31.1", Reference: "busybox:1.31.1", Digest: digest('a'), Kind: lock.KindIndex,
		Platforms: []lock.Platform{{Platform: "linux/amd64", Digest: digest('b')}, {Platform: "linux/arm64/v8", Digest: digest('c')}}})
	l.Put(lock.Entry{Name: "quay.io/x/tool:1", Reference: "quay.io/x/tool:1", Digest: digest('d'), Kind: lock.KindManifest})
	for _, tc := range []struct {
		name, written string
		platforms     []string
		digest        string
		why           Why
		errs          []error // each wrapped by the matching error, or nil
		nerrs         int
	}{
		{"index", "busybox:1.31.1", nil, digest('a'), PinIndex, nil, 0},
		{"other spelling, same key", "docker.io/library/busybox:1.31.1", nil, digest('a'), PinIndex, nil, 0},
		{"manifest", "quay.io/x/tool:1", nil, digest('d'), PinManifest, nil, 0},
		{"child by variant", "busybox:1.31.1", []string{"linux/arm64"}, digest('c'), PinChild, nil, 0},
		{"child exact", "busybox:1.31.1", []string{"linux/amd64"}, digest('b'), PinChild, nil, 0},
		{"several platforms pin the index", "busybox:1.31.1", []string{"linux/amd64", "linux/arm64"}, digest('a'), PinIndex, nil, 0},
		{"several platforms, one missing", "busybox:1.31.1", []string{"linux/amd64", "linux/s390x", "linux/ppc64le"}, digest('a'), PinIndex, []error{lock.ErrNoPlatform}, 2},
		{"one platform missing", "busybox:1.31.1", []string{"linux/s390x"}, "", Unpinned, []error{lock.ErrNoPlatform}, 1},
		{"platform of a manifest", "quay.io/x/tool:1", []string{"linux/amd64"}, "", Unpinned, []error{lock.ErrNoPlatform}, 1},
		{"no entry", "busybox:1.32", nil, "", Unpinned, []error{lock.ErrMissing}, 1},
		{"written digest wins", "busybox:1.31.1@" + digest('e'), []string{"linux/amd64"}, digest('e'), PinWritten, nil, 0},
		{"written digest without an entry", "busybox:9@" + digest('f'), nil, digest('f'), PinWritten, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := imageref.Parse(tc.written)
			if err != nil {
				t.Fatal(err)
			}
			u := &Use{Ref: ref, Platforms: tc.platforms}
			got := pin(u, l)
			if got.Digest != tc.digest || got.Why != tc.why || len(got.Errs) != tc.nerrs {
				t.Fatalf("pin = %+v, want digest %s, %v, %d errors", got, tc.digest, tc.why, tc.nerrs)
			}
			for _, want := range tc.errs {
				for _, e := range got.Errs {
					if !errors.Is(e, want) {
						t.Errorf("error %v does not wrap %v", e, want)
					}
				}
			}
			if tc.why == PinChild && got.Platform != tc.platforms[0] {
				t.Errorf("platform %q", got.Platform)
			}
		})
	}
}

func TestBuildUnknownProfile(t *testing.T) {
	t.Parallel()
	_, err := Build(load(t, "testdata/mixed"), "nope", nil)
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "notebooks") {
		t.Errorf("err = %v, want the profile and the ones there are named", err)
	}
}

// TestPasswordSources lists each source once with everything that needs it.
func TestPasswordSources(t *testing.T) {
	t.Parallel()
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
environments: {
	a: {image: "harbor.lab.internal/x/a:1", auth: {username: "u", password: "env:P"}}
	b: {image: "harbor.lab.internal/x/b:1", auth: {username: "u", password: "env:P"}}
}
images: c: {reference: "quay.example.org/x/c:1", auth: {username: "v", password: "file:q"}}
profiles: lab: pullers: [{name: "p", namespace: "n", environments: ["a", "b"], images: ["c"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.PasswordSources()
	want := []creds.Source{
		{Source: "env:P", UsedBy: []string{`environment "a"`, `environment "b"`},
			At: []v1alpha1.Position{{File: "cfg/config.cue", Line: 3, Column: 64, Path: "environments.a.auth.password"}, {File: "cfg/config.cue", Line: 4, Column: 64, Path: "environments.b.auth.password"}}},
		{Source: "file:q", UsedBy: []string{`image "c"`}, At: []v1alpha1.Position{{File: "cfg/config.cue", Line: 6, Column: 72, Path: "images.c.auth.password"}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PasswordSources = %v, want %v", got, want)
	}
}

// TestBuildSameImageDifferentAuth: one image written in two spellings in
// one puller, only one with auth, is refused naming both uses, both
// spellings and the lock key, in either order of the names, and no
// password source; the same auth on both is fine.
func TestBuildSameImageDifferentAuth(t *testing.T) {
	t.Parallel()
	for _, names := range [][2]string{{"hub1", "hub2"}, {"hub2", "hub1"}} {
		cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(fmt.Sprintf(`
images: {
	%s: {reference: "nvidia/k8s-device-plugin:1.0.0-beta4", auth: {username: "someone", password: "env:HUB_TOKEN"}}
	%s: {reference: "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4"}
}
profiles: lab: pullers: [{name: "p", namespace: "n", images: ["hub1", "hub2"]}]
`, names[0], names[1]))}}, schema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Build(cfg, "", nil)
		if err == nil {
			t.Fatalf("%v: Build accepted two auths for one image", names)
		}
		for _, w := range []string{"puller n/p", `image "hub1"`, `image "hub2"`, "(nvidia/k8s-device-plugin:1.0.0-beta4)", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", "different auth"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not say %q", names, err, w)
			}
		}
		if strings.Contains(err.Error(), "HUB_TOKEN") || strings.Contains(err.Error(), "someone") {
			t.Errorf("error shows an auth value: %v", err)
		}
	}
	cfg, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/config.cue", Data: []byte(`
images: {
	hub1: {reference: "nvidia/k8s-device-plugin:1.0.0-beta4", auth: {username: "someone", password: "env:HUB_TOKEN"}}
	hub2: {reference: "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", auth: {username: "someone", password: "env:HUB_TOKEN"}}
}
profiles: lab: pullers: [{name: "p", namespace: "n", images: ["hub1", "hub2"]}]
`)}}, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(cfg, "", nil); err != nil {
		t.Errorf("same auth on both spellings: %v", err)
	}
}
