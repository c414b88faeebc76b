package site

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

func repo(t *testing.T, s string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRepository(t *testing.T) {
	t.Parallel()
	m := Mapping{
		Default:    "registry.pai.lab.internal:5000/mirror",
		Registries: map[string]string{"ghcr.io": "registry.pai.lab.internal:5000/ghcr"},
	}
	for _, tc := range []struct{ src, want string }{
		{"busybox", "registry.pai.lab.internal:5000/mirror/docker.io/library/busybox"},
		{"docker.io/frameworkcontroller/frameworkcontroller", "registry.pai.lab.internal:5000/mirror/docker.io/frameworkcontroller/frameworkcontroller"},
		{"index.docker.io/nvidia/k8s-device-plugin", "registry.pai.lab.internal:5000/mirror/docker.io/nvidia/k8s-device-plugin"},
		{"registry.k8s.io/pause", "registry.pai.lab.internal:5000/mirror/registry.k8s.io/pause"},
		{"registry.lab:5000/team/app", "registry.pai.lab.internal:5000/mirror/registry.lab_5000/team/app"},
		{"REGISTRY.lab:5000/team/app", "registry.pai.lab.internal:5000/mirror/registry.lab_5000/team/app"},
		{"ghcr.io/stowage/stowage-helper", "registry.pai.lab.internal:5000/ghcr/stowage/stowage-helper"},
		// Already on the site registry: left as it is.
		{"registry.pai.lab.internal:5000/openpai/rest-server", "registry.pai.lab.internal:5000/openpai/rest-server"},
	} {
		got, err := m.Repository(repo(t, tc.src))
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if got.Name() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.src, got.Name(), tc.want)
		}
	}
}

func TestRepositoryNoPrefixPath(t *testing.T) {
	t.Parallel()
	got, err := Mapping{Default: "127.0.0.1:5000"}.Repository(repo(t, "quay.io/a/b"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name() != "127.0.0.1:5000/quay.io/a/b" {
		t.Errorf("got %s", got.Name())
	}
}

func TestReferenceKeepsTagAndDigest(t *testing.T) {
	t.Parallel()
	m := Mapping{Default: "site.example/m"}
	for _, tc := range []struct{ in, want string }{
		{"busybox:1.31.1", "site.example/m/docker.io/library/busybox:1.31.1"},
		{"busybox@sha256:" + hex64, "site.example/m/docker.io/library/busybox@sha256:" + hex64},
	} {
		ref, err := name.ParseReference(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Reference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestPortsAndHostsNeverMeet(t *testing.T) {
	t.Parallel()
	// "a.b:5000" and a registry literally named like its mapped form
	// cannot collide: host names have no '_'.
	m := Mapping{Default: "site.example"}
	srcs := []name.Repository{repo(t, "a.b:5000/x"), repo(t, "a.b/x"), repo(t, "a.b-5000/x"), repo(t, "docker.io/x/y"), repo(t, "x/y")}
	if err := m.Check(srcs[:4]); err != nil {
		t.Fatal(err)
	}
	// The same repository spelled twice is one repository, not a collision.
	if err := m.Check([]name.Repository{repo(t, "docker.io/x/y"), repo(t, "index.docker.io/x/y"), srcs[4]}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckCollision(t *testing.T) {
	t.Parallel()
	m := Mapping{Default: "site.example", Registries: map[string]string{"ghcr.io": "site.example/hub", "docker.io": "site.example/hub"}}
	err := m.Check([]name.Repository{repo(t, "ghcr.io/a/b"), repo(t, "docker.io/a/b")})
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want *Error", err)
	}
	want := "site registry: site.example/hub/a/b: both docker.io/a/b and ghcr.io/a/b map to it; give them different prefixes"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestBadPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "https://site.example", "site.example/UPPER", "user@site.example"} {
		if err := (Mapping{Default: p}).Validate(); err == nil {
			t.Errorf("%q: no error", p)
		}
		if _, err := (Mapping{Default: p}).Repository(repo(t, "busybox")); err == nil {
			t.Errorf("%q: Repository gave no error", p)
		}
	}
}

// TestHostilePrefix: a prefix with credentials is refused without echoing
// them, and one whose path holds "..", "." or another component the
// distribution grammar refuses (pkg/name takes them) is refused naming it.
func TestHostilePrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"robot:s3cr3t-pw@site.example:5000/mirror", "https://robot:s3cr3t-pw@site.example"} {
		err := (Mapping{Default: p}).Validate()
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "robot") || !strings.Contains(err.Error(), "credentials") {
			t.Errorf("%q: %v, want a refusal without the credentials", p, err)
		}
	}
	for _, p := range []string{"site.example/../other", "site.example/a/./b", "site.example/a/..", "site.example/a..b", "site.example/-a"} {
		err := (Mapping{Default: p}).Validate()
		if err == nil || !strings.Contains(err.Error(), "not a repository path") {
			t.Errorf("%q: %v, want refused as not a repository path", p, err)
		}
		if _, err := (Mapping{Default: p}).Repository(repo(t, "busybox")); err == nil {
			t.Errorf("%q: Repository gave no error", p)
		}
	}
}
