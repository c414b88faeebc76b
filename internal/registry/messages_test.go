package registry_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// tlsOnlyListener hands TLS connections on and resets every other one at
// once, as a registry that speaks only HTTPS on its port does to a
// plain-HTTP request.
type tlsOnlyListener struct{ net.Listener }

func (l tlsOnlyListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		b, err := br.Peek(1)
		_ = c.SetReadDeadline(time.Time{})
		if err == nil && b[0] == 0x16 { // a TLS handshake record
			return peeked{Conn: c, r: br}, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with a reset
		}
		c.Close()
	}
}

type peeked struct {
	net.Conn
	r *bufio.Reader
}

func (p peeked) Read(b []byte) (int, error) { return p.r.Read(b) }

// TestInsecureTLSCauseOnce: a registry marked insecure that speaks only
// TLS, with a certificate stowage does not trust, and resets plain HTTP:
// the error names the TLS cause once, beside the plain-HTTP attempt's
// failure (it named the TLS failure twice: as the answer and again as
// "HTTPS was tried first").
func TestInsecureTLSCauseOnce(t *testing.T) {
	srv := httptest.NewUnstartedServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	srv.Listener = tlsOnlyListener{srv.Listener}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := strings.TrimPrefix(srv.URL, "https://")
	r := resolver(t, registry.WithInsecure(h), registry.WithRetry(1, 0))
	_, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	if err == nil {
		t.Fatal("Lock succeeded")
	}
	msg := err.Error()
	if n := strings.Count(msg, "unknown authority"); n != 1 {
		t.Errorf("the TLS cause is named %d times, want once:\n%s", n, msg)
	}
	want := "the connection was reset (HTTPS was tried first and failed: TLS: the certificate is signed by an unknown authority (--ca-file))"
	if !strings.Contains(msg, want) {
		t.Errorf("error = %s\nwant %q", msg, want)
	}
}

// TestRedirectToPlainHTTP: a registry (HTTPS) answering 307 to a plain-HTTP
// host that is not marked insecure: the error says the registry
// redirected to plain HTTP, names that host and the flag that allows it,
// never the redirect's path or query (a signed URL's credentials), and
// the plain-HTTP host gets no request. It read "the registry does not
// answer HTTPS".
func TestRedirectToPlainHTTP(t *testing.T) {
	got := make(chan string, 16)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.String()
	}))
	t.Cleanup(plain.Close)
	ph := strings.TrimPrefix(plain.URL, "http://")
	f := &registrytest.Faults{Next: ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))}
	f.Add(registrytest.Rule{Path: "/a/app/manifests/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		http.Redirect(w, r, "http://"+ph+"/bucket/manifest?X-Signature=sig-canary-5521&token=tok-canary-0912", http.StatusTemporaryRedirect)
	}})
	srv := httptest.NewTLSServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(srv.Close)
	h := strings.TrimPrefix(srv.URL, "https://")
	r, err := registry.New(registry.WithTransport(srv.Client().Transport), registry.WithRetry(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	if err == nil {
		t.Fatal("Lock succeeded")
	}
	msg := err.Error()
	want := "the registry redirected to plain HTTP at " + ph + ", which is not marked insecure: not followed (allow it with --insecure-registry " + ph + ")"
	if !strings.Contains(msg, want) || strings.Contains(msg, "does not answer HTTPS") {
		t.Errorf("error = %s\nwant %q", msg, want)
	}
	for _, s := range []string{"sig-canary-5521", "tok-canary-0912", "/bucket/"} {
		if strings.Contains(msg, s) {
			t.Errorf("error shows the redirect's %q:\n%s", s, msg)
		}
	}
	select {
	case u := <-got:
		t.Errorf("the plain-HTTP host got %s", u)
	default:
	}
	var pe *registry.PlainHTTPError
	if !errors.As(err, &pe) || pe.Host != ph || !pe.Redirected {
		t.Errorf("errors.As PlainHTTPError = %+v, want host %s, Redirected", pe, ph)
	}
}
