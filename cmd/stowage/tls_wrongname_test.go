package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/lock"
)

// TestLockTLSWrongName: a registry whose certificate, signed by a CA the
// user trusts (--ca-file), names another host. lock fails at once, naming
// the image and the certificate's names; the lock stays as it was.
func TestLockTLSWrongName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, cert := wrongNameCert(t, dir, "registry.wrong.invalid")
	srv := httptest.NewUnstartedServer(http404{})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// Reach it as localhost: the certificate names another host.
	h := strings.Replace(strings.TrimPrefix(srv.URL, "https://"), "127.0.0.1", "localhost", 1)

	cfg := writeConfig(t, map[string]configImage{"app": {Ref: h + "/team/app:1.0"}}, h+"/stowage/helper:v1", h+"/k8s/pause:3.10")
	lockPath := filepath.Join(cfg, lock.FileName)
	before := []byte("apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  images: []\n")
	if err := os.WriteFile(lockPath, before, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, stderr, code := runCLI(t, nil, "lock", cfg, "--ca-file", caFile, "--retries", "0")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, stderr)
	}
	for _, want := range []string{`image "` + h + `/team/app:1.0"`, "registry.wrong.invalid"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("took %v: a certificate error must not be retried for long", elapsed)
	}
	if got, _ := os.ReadFile(lockPath); string(got) != string(before) {
		t.Errorf("the lock changed")
	}
}

// http404 answers every request 404; the TLS handshake fails before it is
// reached.
type http404 struct{}

func (http404) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }

// wrongNameCert makes a CA (written to dir/ca.pem) and a server certificate
// it signs for name only (no IP addresses).
func wrongNameCert(t *testing.T, dir, name string) (string, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stowage test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{name},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestLockCAFromStdin: --ca-file - trusts the CA read from standard input
// (the handshake then fails on the certificate's name, not its authority);
// standard input without a PEM certificate is bad input (exit 1), and
// mirror refuses --ca-file - beside --have -, which reads it too (exit 2).
func TestLockCAFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, cert := wrongNameCert(t, dir, "registry.wrong.invalid")
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http404{})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := strings.Replace(strings.TrimPrefix(srv.URL, "https://"), "127.0.0.1", "localhost", 1)
	cfg := writeConfig(t, map[string]configImage{"app": {Ref: h + "/team/app:1.0"}}, h+"/stowage/helper:v1", h+"/k8s/pause:3.10")

	lockWith := func(stdin string, args ...string) (string, int) {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(stdin), &stdout, &stderr, envFrom(nil))
		return stderr.String(), code
	}
	stderr, code := lockWith(string(ca), "lock", cfg, "--ca-file", "-", "--retries", "0")
	if code != 1 || !strings.Contains(stderr, "registry.wrong.invalid") || strings.Contains(stderr, "unknown authority") {
		t.Errorf("CA on standard input: exit %d, want 1 naming the certificate's host, not its authority:\n%s", code, stderr)
	}
	stderr, code = lockWith("not a certificate\n", "lock", cfg, "--ca-file", "-", "--retries", "0")
	if code != 1 || !strings.Contains(stderr, "CA file standard input: no PEM certificate in it") {
		t.Errorf("no PEM on standard input: exit %d, want 1 naming it:\n%s", code, stderr)
	}
	stderr, code = lockWith("", "mirror", cfg, "--to", "oci:"+filepath.Join(dir, "bundle"), "--have", "-", "--ca-file", "-")
	if code != 2 || !strings.Contains(stderr, "--ca-file -: standard input is read by another flag") {
		t.Errorf("mirror --have - --ca-file -: exit %d, want 2:\n%s", code, stderr)
	}
}
