package node

import (
	"github.com/stowage/stowage/internal/testing/testbin"

	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The two registries inside the namespace: fixed ports are safe there.
const (
	plainHost   = "127.0.0.1:5000" // plain HTTP, anonymous
	privateHost = "127.0.0.1:5001" // plain HTTP, htpasswd basic auth
	privateUser = "tenant-robot"
	siteHost    = "127.0.0.1:5002" // plain HTTP, anonymous: the site registry stowage mirror fills
)

// binaries are the programs the suite builds from source: stowage and the
// static pause of the test images (the helper comes in the project's
// helper image, internal/helperimage).
type binaries struct {
	stowage, pause string
}

// buildBinaries returns the stowage binary the tests share (testbin.Stowage:
// make test's, or built once in the main module with its own go.mod, as a
// user builds it) and builds pause from this module into a temporary
// folder, static, with the Go toolchain that runs the test.
func buildBinaries(t *testing.T) binaries {
	t.Helper()
	dir := t.TempDir()
	b := binaries{stowage: testbin.Stowage(t), pause: filepath.Join(dir, "pause")}
	for _, x := range []struct{ out, dir, pkg string }{
		{b.pause, ".", "./cmd/pause"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", x.out, x.pkg)
		cmd.Dir = x.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", x.pkg, err, out)
		}
	}
	return b
}

// file is one regular file of an image layer.
type file struct {
	path string
	mode int64
	data []byte
}

// image builds a single-layer image of files on no base (no shell, no libc)
// for platform, running entrypoint. Timestamps are zero, so the same files
// give the same digest. The platform is set in the config explicitly: an
// image appended to an empty base has none otherwise.
func image(t *testing.T, platform v1.Platform, entrypoint []string, files ...file) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.path, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Config.Entrypoint = entrypoint
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// index builds a multi-arch index of imgs, each described by its platform.
func index(t *testing.T, imgs map[string]v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		img, ok := imgs[p]
		if !ok {
			continue
		}
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// readFile returns the bytes of path or fails the test.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// registry is a Debian docker-registry running inside the namespace.
type registry struct {
	host string
	proc *proc
}

// startRegistry runs docker-registry inside the namespace on host, with
// storage under the state folder; with a password, htpasswd basic auth for
// privateUser (the file written by apache2-utils' htpasswd, the password
// given on its stdin, never on a command line).
func startRegistry(t *testing.T, ns *namespace, host, password string) *registry {
	t.Helper()
	return startRegistryLog(t, ns, host, password, false)
}

// startRegistryLog is startRegistry, with the registry's access log (one
// line per request, in the combined log format, user agent included) in
// its log file when accessLog is set: see registry.requests.
func startRegistryLog(t *testing.T, ns *namespace, host, password string, accessLog bool) *registry {
	t.Helper()
	return startRegistryData(t, ns, host, password, accessLog, "")
}

// startRegistryData is startRegistryLog with the registry's storage in the
// folder data (one that outlives the namespace, so that the next
// namespace's registry serves the same images without a push), or under
// the state folder when data is "".
func startRegistryData(t *testing.T, ns *namespace, host, password string, accessLog bool, data string) *registry {
	t.Helper()
	dir := filepath.Join(ns.state, "registry-"+strings.ReplaceAll(host, ":", "-"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if data == "" {
		data = filepath.Join(dir, "data")
	}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: %v\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", !accessLog, data, host)
	if password != "" {
		htpasswd := filepath.Join(dir, "htpasswd")
		cmd := exec.Command("htpasswd", "-B", "-c", "-i", htpasswd, privateUser)
		cmd.Stdin = strings.NewReader(password)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("htpasswd: %v: %s", err, out)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: stowage-node\n    path: %s\n", htpasswd)
	}
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &registry{host: host, proc: ns.start(t, "docker-registry-"+host[strings.LastIndex(host, ":")+1:], "docker-registry", "serve", path)}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: ns.dial}}
	waitFor(t, 30*time.Second, "docker-registry on "+host, func() (bool, string) {
		if r.proc.exited() {
			t.Fatalf("docker-registry on %s exited:\n%s", host, r.proc.tail(20))
		}
		resp, err := client.Get("http://" + host + "/v2/")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized, resp.Status
	})
	return r
}

// reachable reports whether anything answers on the registry's address
// inside the namespace.
func (r *registry) reachable(ns *namespace) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := ns.dial(ctx, "tcp", r.host)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// pusher writes images to the registries inside the namespace.
type pusher struct {
	ns   *namespace
	auth map[string]authn.Authenticator // by registry host
}

func (p *pusher) options(ref name.Reference) []remote.Option {
	auth := authn.Anonymous
	if a, ok := p.auth[ref.Context().RegistryStr()]; ok {
		auth = a
	}
	return []remote.Option{remote.WithTransport(&http.Transport{DialContext: p.ns.dial}), remote.WithAuth(auth), remote.WithContext(context.Background())}
}

// push writes img under ref and returns its digest.
func (p *pusher) push(t *testing.T, ref string, img v1.Image) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, p.options(r)...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// pushIndex writes idx under ref and returns its digest.
func (p *pusher) pushIndex(t *testing.T, ref string, idx v1.ImageIndex) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, p.options(r)...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// request is one line of a registry's access log.
type request struct {
	method, path, agent string
	status              int
}

// accessLine matches a line of docker-registry's access log (gorilla's
// combined log format): `ADDR - USER [TIME] "METHOD PATH PROTO" STATUS
// SIZE "REFERER" "USER-AGENT"`.
var accessLine = regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]*\] "([A-Z]+) (\S+) [^"]*" (\d{3}) \S+ "[^"]*" "([^"]*)"`)

// requests returns the requests r's access log holds so far (started with
// startRegistryLog and accessLog set), in order.
func (r *registry) requests(t *testing.T) []request {
	t.Helper()
	var out []request
	for _, l := range strings.Split(string(readFile(t, r.proc.log)), "\n") {
		m := accessLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		st, _ := strconv.Atoi(m[3])
		out = append(out, request{method: m[1], path: m[2], status: st, agent: m[4]})
	}
	return out
}
