package main

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// TestLockTLSInsecureNamesCause: a registry marked --insecure-registry
// that speaks TLS with a certificate stowage does not trust fails with the
// TLS cause named, not only the plain-HTTP fallback's answer.
func TestLockTLSInsecureNamesCause(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	h := strings.TrimPrefix(srv.URL, "https://")
	cfg := writeConfig(t, map[string]configImage{"app": {Ref: h + "/team/app:1.0"}}, h+"/stowage/helper:v1", h+"/k8s/pause:3.10")
	_, stderr, code := runCLI(t, nil, "lock", cfg, "--insecure-registry", h, "--retries", "0")
	if code != 1 || !strings.Contains(stderr, "(HTTPS was tried first and failed: TLS: the certificate is signed by an unknown authority (--ca-file))") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and the TLS cause", code, stderr)
	}
}
