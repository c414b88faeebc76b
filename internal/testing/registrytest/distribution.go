package registrytest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/testing/syncbuf"
)

// RequireEnv is the environment variable that turns a missing
// docker-registry (or htpasswd) binary from a skip into a failure. CI sets
// it, so that CI fails rather than silently skipping the integration tests.
const RequireEnv = "STOWAGE_REQUIRE_REGISTRY"

// Binaries are the names docker-registry is looked up by: Debian's package
// installs "docker-registry"; upstream's binary is "registry".
var Binaries = []string{"docker-registry", "registry"}

// Options choose how a Distribution is served.
type Options struct {
	// TLS serves HTTPS with a certificate for 127.0.0.1 and localhost
	// signed by a CA made for this registry (Distribution.CAFile).
	TLS bool
	// Users, when not empty, turns on htpasswd basic auth (bcrypt, written
	// with apache2-utils' htpasswd) for these user → password pairs.
	Users map[string]string
	// Port is the TCP port of 127.0.0.1 to listen on (a benchmark beside
	// services that hold fixed ranges); 0 picks a free one.
	Port int
}

// Distribution is a running docker-registry on 127.0.0.1.
type Distribution struct {
	// Host is "127.0.0.1:<port>".
	Host string
	// CAFile is the PEM file of the CA that signed the server certificate;
	// empty without TLS.
	CAFile string
	// Dir holds the configuration, storage and certificates.
	Dir string

	token string // the value of tokenHeader in its answers
	cmd   *exec.Cmd
	done  chan struct{}
	log   *syncbuf.Buffer
}

// ErrMissing is returned by StartDistribution when a binary it needs is not
// installed.
var ErrMissing = errors.New("not installed")

// Lookup returns the path of the docker-registry binary, or an error
// wrapping ErrMissing.
func Lookup() (string, error) {
	for _, b := range Binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("docker-registry %w (apt-get install docker-registry)", ErrMissing)
}

// Start runs docker-registry for a test: it is stopped and its files removed
// at the end of the test. When docker-registry (or htpasswd, with Users) is
// not installed the test is skipped with a message naming the package, or
// fails when RequireEnv is set.
func Start(tb testing.TB, o Options) *Distribution {
	tb.Helper()
	d, err := StartDistribution(tb.TempDir(), o)
	if errors.Is(err, ErrMissing) {
		if os.Getenv(RequireEnv) != "" {
			tb.Fatalf("%v, and %s is set: the integration tests must run", err, RequireEnv)
		}
		tb.Skipf("%v: skipping the tests against a real registry (set %s=1 to make this a failure)", err, RequireEnv)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Stop(); err != nil {
			tb.Errorf("docker-registry: %v", err)
		}
	})
	return d
}

// StartDistribution runs docker-registry with its configuration, storage
// and certificates under dir (created if missing), listening on o.Port of
// 127.0.0.1 (a free port when 0), and waits until it answers. Stop ends it.
// Errors wrap ErrMissing when a binary is not installed.
//
// A free port is found by opening and closing a listener, so another
// process (a registry of a test running in parallel) may take it before
// docker-registry binds it: then docker-registry exits, and it is started
// again on another port, up to StartAttempts times in all. The registry
// counts as answering only when GET /v2/ returns 200 or 401 with the
// Distribution API header and a token of this start (so the answer is
// not another server's on the port), and its process is still running.
func StartDistribution(dir string, o Options) (*Distribution, error) {
	return startDistribution(dir, o, freePort)
}

// startDistribution is StartDistribution with pick choosing each free port.
func startDistribution(dir string, o Options, pick func() (int, error)) (*Distribution, error) {
	bin, err := Lookup()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var extra strings.Builder
	caFile := ""
	if o.TLS {
		ca, err := NewCA(dir)
		if err != nil {
			return nil, err
		}
		caFile = ca.CertFile
		fmt.Fprintf(&extra, "  tls:\n    certificate: %s\n    key: %s\n", ca.ServerCertFile, ca.ServerKeyFile)
	}
	if len(o.Users) > 0 {
		path := filepath.Join(dir, "htpasswd")
		if err := writeHtpasswd(path, o.Users); err != nil {
			return nil, err
		}
		fmt.Fprintf(&extra, "auth:\n  htpasswd:\n    realm: stowage-test\n    path: %s\n", path)
	}
	attempts := StartAttempts
	if o.Port != 0 {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		port := o.Port
		if port == 0 {
			if port, err = pick(); err != nil {
				return nil, err
			}
		}
		d, err := startOn(bin, dir, port, caFile, extra.String())
		switch {
		case err == nil:
			return d, nil
		case !errors.Is(err, errPortTaken) || attempts == 1:
			return nil, err
		case attempt == attempts:
			return nil, fmt.Errorf("%w (on each of %d free ports tried)", err, attempts)
		}
	}
}

// StartAttempts is how many free ports StartDistribution tries, one after
// the other, when docker-registry finds the port it was given taken.
const StartAttempts = 5

// tokenHeader is the response header, set through docker-registry's
// http.headers, by which StartDistribution knows its own registry's answer.
const tokenHeader = "X-Stowage-Test-Registry"

// errPortTaken is the error of a start whose port another process held.
var errPortTaken = errors.New("the port is taken")

// startOn writes the configuration for 127.0.0.1:port (extra is the TLS
// and auth part of the http and auth sections), starts docker-registry
// and waits until it answers; when it cannot bind the port the error
// wraps errPortTaken.
func startOn(bin, dir string, port int, caFile, extra string) (*Distribution, error) {
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	d := &Distribution{Host: fmt.Sprintf("127.0.0.1:%d", port), CAFile: caFile, Dir: dir, token: hex.EncodeToString(tok), done: make(chan struct{}), log: &syncbuf.Buffer{}}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  headers:
    %s: [%q]
`, filepath.Join(dir, "data"), d.Host, tokenHeader, d.token) + extra
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	d.cmd = exec.Command(bin, "serve", cfgPath)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		d.cmd.Wait()
		close(d.done)
	}()
	if err := d.wait(); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// wait polls GET /v2/ until our registry answers (see StartDistribution),
// for at most 20 s. An exit of the process ends it: with errPortTaken when
// docker-registry could not bind its port.
func (d *Distribution) wait() error {
	client := &http.Client{Timeout: time.Second}
	scheme := "http"
	if d.CAFile != "" {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(d.CAFile)
		if err != nil {
			return err
		}
		pool.AppendCertsFromPEM(pem)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		scheme = "https"
	}
	exited := func() error {
		select {
		case <-d.done:
		default:
			return nil
		}
		if strings.Contains(d.log.String(), "address already in use") {
			return fmt.Errorf("docker-registry could not listen on %s: %w: %s", d.Host, errPortTaken, d.log.String())
		}
		return fmt.Errorf("docker-registry exited at start: %s", d.log.String())
	}
	other := ""
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := exited(); err != nil {
			return err
		}
		resp, err := client.Get(scheme + "://" + d.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			ours := resp.Header.Get(tokenHeader) == d.token
			if (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized) &&
				resp.Header.Get("Docker-Distribution-API-Version") == "registry/2.0" && ours {
				// The answer is ours; the process must still be the one
				// serving it.
				return exited()
			}
			if !ours {
				other = fmt.Sprintf(" (another server answers there: %s)", resp.Status)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if other != "" {
		return fmt.Errorf("docker-registry did not answer on %s within 20s%s: %w: %s", d.Host, other, errPortTaken, d.log.String())
	}
	return fmt.Errorf("docker-registry did not answer on %s within 20s: %s", d.Host, d.log.String())
}

// Stop ends the registry (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (d *Distribution) Stop() error {
	if d.cmd == nil || d.cmd.Process == nil {
		return nil
	}
	select {
	case <-d.done:
		return nil
	default:
	}
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
	return nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeHtpasswd writes a bcrypt htpasswd file with apache2-utils' htpasswd,
// giving each password on standard input (never on the command line).
func writeHtpasswd(path string, users map[string]string) error {
	bin, err := exec.LookPath("htpasswd")
	if err != nil {
		return fmt.Errorf("htpasswd %w (apt-get install apache2-utils)", ErrMissing)
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	var out bytes.Buffer
	for _, u := range names {
		cmd := exec.CommandContext(context.Background(), bin, "-i", "-B", "-n", u)
		cmd.Stdin = strings.NewReader(users[u])
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		line, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("htpasswd for user %s: %v: %s", u, err, stderr.String())
		}
		out.Write(bytes.TrimSpace(line))
		out.WriteByte('\n')
	}
	return os.WriteFile(path, out.Bytes(), 0o600)
}

// CA is a certificate authority made for one test run and the server
// certificate it signed, all PEM files.
type CA struct {
	CertFile, ServerCertFile, ServerKeyFile string
}

// NewCA writes a new CA (ca.pem) and a server certificate and key for
// 127.0.0.1, ::1 and localhost (server.pem, server-key.pem) into dir. Keys
// are ECDSA P-256; certificates are valid from an hour ago for a day.
func NewCA(dir string) (*CA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "stowage test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, err
	}
	ca := &CA{
		CertFile:       filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{
		{ca.CertFile, "CERTIFICATE", caDER},
		{ca.ServerCertFile, "CERTIFICATE", srvDER},
		{ca.ServerKeyFile, "EC PRIVATE KEY", keyDER},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return nil, err
		}
	}
	return ca, nil
}
