package imageref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

const (
	hex64  = "1f3c66cf0f0e4c4da2f1d7c3f2b7d5b8e6a5c4f3e2d1c0b9a8f7e6d5c4b3a291"
	hex128 = hex64 + hex64
)

// TestParseAccepts covers the accepted reference cases and
// others of the same kinds: what a reference normalises to (lock key,
// registry, tag, digest) and that the written spelling is kept.
func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in                   string
		key, registry, tag, digest string
		authKey                    string
	}{
		// ref-port-no-tag: ':5000' is a port, the implied tag is latest.
		{name: "ref-port-no-tag", in: "registry.lab.internal:5000/team/app",
			key: "registry.lab.internal:5000/team/app:latest", registry: "registry.lab.internal:5000", tag: "latest",
			authKey: "registry.lab.internal:5000"},
		{name: "ref-localhost-port-tag", in: "localhost:5000/svc:1.2",
			key: "localhost:5000/svc:1.2", registry: "localhost:5000", tag: "1.2", authKey: "localhost:5000"},
		{name: "localhost without port", in: "localhost/svc",
			key: "localhost/svc:latest", registry: "localhost", tag: "latest", authKey: "localhost"},
		// ref-tag-and-digest: both kept; the key is the tag form.
		{name: "ref-tag-and-digest", in: "busybox:1.31.1@sha256:" + hex64,
			key: "docker.io/library/busybox:1.31.1", registry: "index.docker.io", tag: "1.31.1", digest: "sha256:" + hex64,
			authKey: DockerHubAuthKey},
		{name: "port, tag and digest", in: "registry.lab.internal:5000/team/app:2@sha256:" + hex64,
			key: "registry.lab.internal:5000/team/app:2", registry: "registry.lab.internal:5000", tag: "2", digest: "sha256:" + hex64,
			authKey: "registry.lab.internal:5000"},
		// ref-docker-hub-spellings: one key for the three spellings.
		{name: "ref-docker-hub-spellings/short", in: "nvidia/k8s-device-plugin:1.0.0-beta4",
			key: "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", registry: "index.docker.io", tag: "1.0.0-beta4", authKey: DockerHubAuthKey},
		{name: "ref-docker-hub-spellings/docker.io", in: "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
			key: "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", registry: "index.docker.io", tag: "1.0.0-beta4", authKey: DockerHubAuthKey},
		{name: "ref-docker-hub-spellings/index.docker.io", in: "index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
			key: "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", registry: "index.docker.io", tag: "1.0.0-beta4", authKey: DockerHubAuthKey},
		// ref-official-image: library/ is added for the lock and registry calls.
		{name: "ref-official-image", in: "busybox:1.31.1",
			key: "docker.io/library/busybox:1.31.1", registry: "index.docker.io", tag: "1.31.1", authKey: DockerHubAuthKey},
		{name: "official image, no tag", in: "busybox",
			key: "docker.io/library/busybox:latest", registry: "index.docker.io", tag: "latest", authKey: DockerHubAuthKey},
		{name: "official image, explicit library", in: "docker.io/library/busybox:1.31.1",
			key: "docker.io/library/busybox:1.31.1", registry: "index.docker.io", tag: "1.31.1", authKey: DockerHubAuthKey},
		{name: "name-never-from-digest: digest only", in: "registry.lab.internal/team/metadata-broker@sha256:" + hex64,
			key: "registry.lab.internal/team/metadata-broker@sha256:" + hex64, registry: "registry.lab.internal", digest: "sha256:" + hex64,
			authKey: "registry.lab.internal"},
		{name: "sha512 digest", in: "ghcr.io/example-org/tool@sha512:" + hex128,
			key: "ghcr.io/example-org/tool@sha512:" + hex128, registry: "ghcr.io", digest: "sha512:" + hex128, authKey: "ghcr.io"},
		{name: "tag named like an algorithm", in: "ghcr.io/example-org/tool:sha256",
			key: "ghcr.io/example-org/tool:sha256", registry: "ghcr.io", tag: "sha256", authKey: "ghcr.io"},
		{name: "upper case tag", in: "ghcr.io/example-org/tool:V1.0_RC",
			key: "ghcr.io/example-org/tool:V1.0_RC", registry: "ghcr.io", tag: "V1.0_RC", authKey: "ghcr.io"},
		{name: "path separators", in: "quay.io/a__b/c.d/e---f_g:1",
			key: "quay.io/a__b/c.d/e---f_g:1", registry: "quay.io", tag: "1", authKey: "quay.io"},
		{name: "name-from-long-ref", in: "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name:2.0",
			key:      "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name:2.0",
			registry: "default-image-registry-openshift-image-registry.svc.cluster.local", tag: "2.0",
			authKey: "default-image-registry-openshift-image-registry.svc.cluster.local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			for _, c := range []struct{ what, got, want string }{
				{"Written", r.Written, tc.in},
				{"Key()", r.Key(), tc.key},
				{"Registry()", r.Registry(), tc.registry},
				{"Tag", r.Tag, tc.tag},
				{"Digest", r.Digest, tc.digest},
				{"AuthKey()", r.AuthKey(), tc.authKey},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestDockerHubSpellingsShareKey: ref-docker-hub-spellings compares after
// normalisation, so the lock holds one entry for the three spellings.
func TestDockerHubSpellingsShareKey(t *testing.T) {
	t.Parallel()
	keys := map[string]bool{}
	for _, s := range []string{
		"nvidia/k8s-device-plugin:1.0.0-beta4",
		"docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
		"index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
	} {
		r, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		keys[r.Key()] = true
	}
	if len(keys) != 1 {
		t.Errorf("keys = %v, want one", keys)
	}
}

// TestParseRejects covers the rejected reference cases and
// more inputs of each kind of fault. Every error is an *Error naming the
// image as written, and its message says what is wrong.
func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string // substrings of the message, besides the image
	}{
		// ref-digest-with-colon and its kind: any algorithm after ':'.
		{"ref-digest-with-colon", "ghcr.io/example-org/source-controller:sha256:b3012918c1e54eb56a8c12f2bf2b0af4fe9e1d1d3d8a0c7a2a1a3f6a9a7c5e10",
			[]string{"must follow '@', not ':'", `write "ghcr.io/example-org/source-controller@sha256:b3012918c1e54eb56a8c12f2bf2b0af4fe9e1d1d3d8a0c7a2a1a3f6a9a7c5e10"`}},
		{"sha512 after ':'", "ghcr.io/x/tool:sha512:" + hex128, []string{"must follow '@', not ':'", `write "ghcr.io/x/tool@sha512:` + hex128 + `"`}},
		{"digest after ':' behind a tag", "ghcr.io/x/tool:1.0:sha256:" + hex64, []string{"must follow '@', not ':'"}},
		// ref-with-scheme and its kind.
		{"ref-with-scheme", "https://harbor.lab.internal/release/notebook:1.1.0",
			[]string{"no URL scheme", `write "harbor.lab.internal/release/notebook:1.1.0"`}},
		{"http scheme", "http://harbor.lab.internal/release/notebook:1.1.0",
			[]string{"no URL scheme", `write "harbor.lab.internal/release/notebook:1.1.0"`}},
		{"docker scheme", "docker://ghcr.io/x/tool:1", []string{"no URL scheme", `write "ghcr.io/x/tool:1"`}},
		{"upper case scheme", "HTTPS://ghcr.io/x/tool:1", []string{"no URL scheme", `write "ghcr.io/x/tool:1"`}},
		// ref-uppercase-repo and its kind: upper case in any path component.
		{"ref-uppercase-repo", "registry.example.org/foo/ScreenApp:1", []string{"repository names must be lowercase", `"screenapp"`}},
		{"upper case namespace", "registry.example.org/Foo/screenapp:1", []string{"repository names must be lowercase", `"foo"`}},
		{"upper case, no tag", "ghcr.io/x/Tool", []string{"repository names must be lowercase"}},
		{"upper case, Docker Hub", "Nvidia/k8s-device-plugin:1.0.0-beta4", []string{"repository names must be lowercase"}},
		{"upper case with digest", "ghcr.io/X/tool@sha256:" + hex64, []string{"repository names must be lowercase"}},
		// Other path grammar faults pkg/name lets through.
		{"doubled slash", "ghcr.io/x//tool:1", []string{"empty component"}},
		{"leading slash", "/x/tool", []string{"empty component"}},
		{"trailing slash", "ghcr.io/x/tool/", []string{"empty component"}},
		{"component starting with a separator", "ghcr.io/x/-tool:1", []string{`component "-tool" is not valid`}},
		{"triple underscore", "ghcr.io/x/a___b:1", []string{`component "a___b" is not valid`}},
		// ref-empty-tag and its kind.
		{"ref-empty-tag", "ghcr.io/example-org/img:", []string{"the tag after ':' is empty"}},
		{"empty tag with port", "registry.lab.internal:5000/team/app:", []string{"the tag after ':' is empty"}},
		{"empty tag before digest", "ghcr.io/x/tool:@sha256:" + hex64, []string{"the tag after ':' is empty"}},
		{"tag starting with '.'", "ghcr.io/x/tool:.1", []string{`tag ".1" is not valid`}},
		{"tag starting with '-'", "ghcr.io/x/tool:-rc", []string{`tag "-rc" is not valid`}},
		{"tag too long", "ghcr.io/x/tool:" + strings.Repeat("a", 129), []string{"is not valid", "1 to 128"}},
		{"tag with '+'", "ghcr.io/x/tool:1.0+build", []string{`tag "1.0+build" is not valid`}},
		// '@' with an empty or malformed digest.
		{"'@' with empty digest", "ghcr.io/x/tool@", []string{"the digest after '@' is empty"}},
		{"tag and '@' with empty digest", "ghcr.io/x/tool:1@", []string{"the digest after '@' is empty"}},
		{"'@' with algorithm only", "ghcr.io/x/tool@sha256:", []string{"must be algorithm:hex"}},
		{"'@' with hex only", "ghcr.io/x/tool@" + hex64, []string{"must be algorithm:hex"}},
		{"unknown algorithm", "ghcr.io/x/tool@md5:d41d8cd98f00b204e9800998ecf8427e", []string{`algorithm "md5" is not supported`}},
		{"upper case hex", "ghcr.io/x/tool@sha256:" + strings.ToUpper(hex64), []string{"must be lowercase", "sha256:" + hex64}},
		{"short hex", "ghcr.io/x/tool@sha256:abc", []string{"length"}},
		{"two digests", "ghcr.io/x/tool@sha256:" + hex64 + "@sha256:" + hex64, []string{"at most one '@'"}},
		// White space and emptiness.
		{"empty", "", []string{"empty"}},
		{"inner space", "ghcr.io/x/tool :1", []string{"no white space"}},
		{"trailing newline", "ghcr.io/x/tool:1\n", []string{"no white space"}},
		{"no repository", ":1", []string{"repository name is empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tc.in, r)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			if e.Image != tc.in {
				t.Errorf("Error.Image = %q, want %q", e.Image, tc.in)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, fmt.Sprintf("image %q: ", tc.in)) {
				t.Errorf("message %q does not start by naming the image", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestPinKeepsSpelling: the rendered image is the written spelling plus the
// digest; a written digest is kept with its tag.
func TestPinKeepsSpelling(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, digest, want string }{
		{"docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", "sha256:" + hex64, "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4@sha256:" + hex64},
		{"registry.lab.internal:5000/team/app", "sha256:" + hex64, "registry.lab.internal:5000/team/app@sha256:" + hex64},
		{"busybox:1.31.1@sha256:" + hex64, "sha256:" + hex64, "busybox:1.31.1@sha256:" + hex64},
	}
	for _, tc := range tests {
		r, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Pin(tc.digest); got != tc.want {
			t.Errorf("Parse(%q).Pin = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestShortHashStable: derived names depend only on the key.
func TestShortHashStable(t *testing.T) {
	t.Parallel()
	a, _ := Parse("busybox:1.31.1")
	b, _ := Parse("docker.io/library/busybox:1.31.1")
	c, _ := Parse("busybox:1.31.2")
	if a.ShortHash(8) != b.ShortHash(8) {
		t.Errorf("spellings of one image hash differently: %s, %s", a.ShortHash(8), b.ShortHash(8))
	}
	if a.ShortHash(8) == c.ShortHash(8) {
		t.Errorf("different images share hash %s", a.ShortHash(8))
	}
	if len(a.ShortHash(8)) != 8 {
		t.Errorf("ShortHash(8) = %q", a.ShortHash(8))
	}
}

// TestGrammarMatchesRegexps checks the hand-written matchers against the
// regular expressions of the distribution reference grammar they replace.
func TestGrammarMatchesRegexps(t *testing.T) {
	t.Parallel()
	component := regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tag := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	alphabet := []string{"a", "z", "0", "9", ".", "_", "-", "A", "/", ":", "é"}
	var inputs []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		inputs = append(inputs, prefix)
		if n == 0 {
			return
		}
		for _, a := range alphabet {
			gen(prefix+a, n-1)
		}
	}
	gen("", 4)
	inputs = append(inputs, strings.Repeat("a", 128), strings.Repeat("a", 129), "a__b", "a___b", "a--b", "a._b", "a.b.c", "_a")
	for _, s := range inputs {
		if got, want := isPathComponent(s), component.MatchString(s); got != want {
			t.Errorf("isPathComponent(%q) = %v, want %v", s, got, want)
		}
		if got, want := isTag(s), tag.MatchString(s); got != want {
			t.Errorf("isTag(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestKeySpellings: every spelling of one image shares its lock key; a
// reference with a tag and a digest keys by its tag, a digest-only one by
// its digest.
func TestKeySpellings(t *testing.T) {
	t.Parallel()
	const hexA = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
	tests := []struct {
		name string
		ref  string
		want string
	}{
		{"official image", "busybox:1.31.1", "docker.io/library/busybox:1.31.1"},
		{"docker.io spelling", "docker.io/library/busybox:1.31.1", "docker.io/library/busybox:1.31.1"},
		{"hub user repo", "nvidia/k8s-device-plugin:1.0.0-beta4", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4"},
		{"hub user repo docker.io", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4"},
		{"hub user repo index.docker.io", "index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4"},
		{"port is not a tag", "registry.lab.internal:5000/team/app", "registry.lab.internal:5000/team/app:latest"},
		{"localhost port and tag", "localhost:5000/svc:1.2", "localhost:5000/svc:1.2"},
		{"tag and digest keys by tag", "busybox:1.31.1@sha256:" + hexA, "docker.io/library/busybox:1.31.1"},
		{"port, tag and digest", "localhost:5000/svc:1.2@sha256:" + hexA, "localhost:5000/svc:1.2"},
		{"digest only", "registry.lab.internal/team/metadata-broker@sha256:" + hexA, "registry.lab.internal/team/metadata-broker@sha256:" + hexA},
		{"port and digest only", "localhost:5000/svc@sha256:" + hexA, "localhost:5000/svc@sha256:" + hexA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := Parse(tc.ref)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.ref, err)
			}
			if got := ref.Key(); got != tc.want {
				t.Errorf("Key(%q) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}
