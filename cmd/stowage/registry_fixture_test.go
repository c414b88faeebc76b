package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

func init() {
	// Retries in tests wait milliseconds, not seconds; Retry-After still
	// holds them for what the registry asks.
	retryBackoff = registry.DefaultBackoff / 500
}

// inProcess is go-containerregistry's in-process registry behind a
// fault-injecting handler, on a loopback port.
type inProcess struct {
	Host   string
	Faults *registrytest.Faults
}

func startInProcess(t *testing.T) *inProcess {
	t.Helper()
	f := &registrytest.Faults{Next: ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &inProcess{Host: strings.TrimPrefix(srv.URL, "http://"), Faults: f}
}

// seed pushes the stand-in of each reference (internal/testing/offlineimage) to the
// registry, with opts for the pushing resolver (insecure marks, mirrors,
// CA); auth, when not nil, is sent as basic auth.
func seed(t *testing.T, auth *authn.AuthConfig, refs []string, opts ...registry.Option) {
	t.Helper()
	r, err := registry.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range refs {
		ref, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		img, idx, err := offlineimage.For(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := registrytest.Write(context.Background(), r, ref, auth, img, idx); err != nil {
			t.Fatal(err)
		}
	}
}

// configImage is one catalogue image of a test config.
type configImage struct {
	Ref       string
	Platforms []string
	User      string // with Password, the config's auth
	Password  string // a source: "env:NAME"
	Secret    string // an existing Secret's name
}

// writeConfig writes a config directory with one profile "p": a puller
// "pre" in namespace "ns" pulling every image, and helper and pause images
// at helper and pause. It returns the directory.
func writeConfig(t *testing.T, images map[string]configImage, helper, pause string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("images:\n")
	keys := make([]string, 0, len(images))
	for k := range images {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		im := images[k]
		fmt.Fprintf(&b, "  %s:\n    reference: %q\n", k, im.Ref)
		if len(im.Platforms) > 0 {
			fmt.Fprintf(&b, "    platforms: [%s]\n", strings.Join(im.Platforms, ", "))
		}
		switch {
		case im.User != "":
			fmt.Fprintf(&b, "    auth:\n      username: %q\n      password: %q\n", im.User, im.Password)
		case im.Secret != "":
			fmt.Fprintf(&b, "    auth:\n      secret: %q\n", im.Secret)
		}
	}
	fmt.Fprintf(&b, "profiles:\n  p:\n    helper:\n      image: %q\n      pause: %q\n    pullers:\n    - name: pre\n      namespace: ns\n      images: [%s]\n", helper, pause, strings.Join(keys, ", "))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readFile returns the bytes of path, or nil when it does not exist.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}
