package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/secret"
)

// TestPushLeavesSecretsOut: a config whose image needs a password renders
// a pull Secret; push's artifact (pulled back from the loopback registry,
// its one layer untarred) holds no Secret and no spelling of the password
// by default, stderr names the Secret left out and how Flux gets it, and
// -o json lists it. With --include-secrets the layer holds the Secret,
// password and all (so the check below can fail).
func TestPushLeavesSecretsOut(t *testing.T) {
	t.Parallel()
	const pw = "push-canary-pw-5e1d"
	reg := startInProcess(t)
	h := reg.Host
	seed(t, nil, []string{h + "/team/private:1", h + "/helper:1", h + "/pause:1"}, registry.WithInsecure(h))
	env := map[string]string{"STOWAGE_PUSH_PW": pw, "STOWAGE_INSECURE_REGISTRY": h}
	dir := writeConfig(t, map[string]configImage{"private": {Ref: h + "/team/private:1", User: "ci", Password: "env:STOWAGE_PUSH_PW"}}, h+"/helper:1", h+"/pause:1")
	if _, stderr, code := runCLI(t, env, "lock", dir, "--quiet"); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	if readFile(t, filepath.Join(dir, lock.FileName)) == nil {
		t.Fatal("no lock written")
	}
	var pws secret.Set
	pws.AddBasic("ci", pw)
	layer := func(t *testing.T, tag string) map[string]string {
		t.Helper()
		ref, err := name.ParseReference(h+"/platform/prepull:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := img.Layers()
		if err != nil || len(ls) != 1 {
			t.Fatalf("layers: %d, %v", len(ls), err)
		}
		rc, err := ls[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		gz, err := gzip.NewReader(rc)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		tr := tar.NewReader(gz)
		for {
			hd, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			files[hd.Name] = string(b)
		}
		return files
	}

	stdout, stderr, code := runCLI(t, env, "push", dir, "oci://"+h+"/platform/prepull:v1", "-o", "json")
	if code != 0 {
		t.Fatalf("push: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "left Secret ns/") || !strings.Contains(stderr, "SOPS") || !strings.Contains(stderr, "--include-secrets") {
		t.Errorf("push's stderr does not name the Secret left out and how Flux gets it:\n%s", stderr)
	}
	if !strings.Contains(string(stdout), "\"secretsLeftOut\": [\n    \"ns/") {
		t.Errorf("push -o json does not list the Secret left out: %s", stdout)
	}
	files := layer(t, "v1")
	if len(files) < 2 {
		t.Fatalf("the layer holds %d files", len(files))
	}
	for n, c := range files {
		if strings.Contains(c, "kind: Secret") || strings.HasPrefix(n, "secret-") || strings.Contains(c, "secret-") && n == "kustomization.yaml" {
			t.Errorf("the artifact holds a Secret: %s\n%s", n, c)
		}
		if pws.Scrub(c) != c {
			t.Errorf("the artifact's %s holds a spelling of the password:\n%s", n, c)
		}
	}

	if _, stderr, code := runCLI(t, env, "push", dir, "oci://"+h+"/platform/prepull:v2", "--include-secrets"); code != 0 || strings.Contains(stderr, "left Secret") {
		t.Fatalf("push --include-secrets: exit %d\n%s", code, stderr)
	}
	var secrets int
	for n, c := range layer(t, "v2") {
		if strings.Contains(c, "kind: Secret") {
			secrets++
			if pws.Scrub(c) == c {
				t.Errorf("the Secret %s packed with --include-secrets holds no spelling of the password: the check above cannot fail", n)
			}
		}
	}
	if secrets != 1 {
		t.Errorf("push --include-secrets packed %d Secrets, want 1", secrets)
	}
}

// TestPushRefusesHostileValues: a destination with user:password@, a
// repository path with '..' or '.', and a --source or --revision with a
// control character, an escape sequence or a bidirectional override, or a
// --source URL with a token, are each refused with exit 1 before anything
// is rendered or pushed (the registry sees no request), and the
// credentials are never printed.
func TestPushRefusesHostileValues(t *testing.T) {
	t.Parallel()
	const cred = "tok3n-canary-77aa"
	reg := startInProcess(t)
	h := reg.Host
	dir := cliValidDir(t)
	env := map[string]string{"STOWAGE_INSECURE_REGISTRY": h}
	dest := "oci://" + h + "/platform/prepull:v1"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"userinfo", []string{"oci://robot:" + cred + "@" + h + "/platform/prepull:v1"}, "credentials in the URL are refused"},
		{"user only", []string{"oci://" + cred + "@" + h + "/platform/prepull:v1"}, "credentials in the URL are refused"},
		{"dot dot", []string{"oci://" + h + "/platform/../other:v1"}, `repository path component ".." is not valid`},
		{"dot", []string{"oci://" + h + "/platform/./prepull:v1"}, `repository path component "." is not valid`},
		{"source with a token", []string{dest, "--source", "https://gitlab-ci-token:" + cred + "@git.example/p.git"}, "user information"},
		{"source with an escape", []string{dest, "--source", "https://git.example/p\x1b]8;;x\x07"}, "is not printable"},
		{"revision with a newline", []string{dest, "--revision", "main@sha1:0123\nfake: yes"}, "is not printable"},
		{"revision with a bidi override", []string{dest, "--revision", "main\u202e@sha1:0123"}, "is not printable"},
		{"revision not UTF-8", []string{dest, "--revision", "main\xff"}, "is not printable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.Faults.Reset()
			stdout, stderr, code := runCLI(t, env, append([]string{"push", dir}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 1 saying %q:\n%s%s", code, tc.want, stdout, stderr)
			}
			if strings.Contains(string(stdout)+stderr, cred) || strings.ContainsAny(stderr, "\x1b\x07\u202e") {
				t.Errorf("the output carries the credential or a raw control character:\n%q", stderr)
			}
			if n := len(reg.Faults.Requests()); n != 0 {
				t.Errorf("the registry saw %d request(s)", n)
			}
		})
	}
}

// TestMirrorToHostile: mirror --to with user:password@ or a path with
// ".." is refused as a usage mistake before any registry is contacted,
// the credentials never printed.
func TestMirrorToHostile(t *testing.T) {
	t.Parallel()
	const cred = "m1rror-canary-pw"
	reg := startInProcess(t)
	h := reg.Host
	dir := cliValidDir(t)
	for _, to := range []string{"robot:" + cred + "@" + h + "/site", "https://robot:" + cred + "@" + h, h + "/a/../b"} {
		stdout, stderr, code := runCLI(t, map[string]string{"STOWAGE_INSECURE_REGISTRY": h}, "mirror", dir, "--to", to, "--dry-run")
		if code != 2 || strings.Contains(string(stdout)+stderr, cred) || !strings.Contains(stderr, "site registry:") {
			t.Errorf("mirror --to %q: exit %d, want 2 naming the site registry without the password:\n%s%s", strings.ReplaceAll(to, cred, "…"), code, stdout, stderr)
		}
	}
	if n := len(reg.Faults.Requests()); n != 0 {
		t.Errorf("the registry saw %d request(s)", n)
	}
}
